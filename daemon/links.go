package daemon

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"haven/api"
	"haven/dataset"
	"haven/heartbeat"
	"haven/node"
)

// Heartbeat links (heartbeat/links.go): a member with several addresses
// in cluster.toml is heard on each; a link down while the peer is heard on
// another is an alarm (an event, a log line, the metric haven_hb_link_up,
// the svcmon mark "links 1/2", the status), never a peer down, a vote or
// a failover: the link events never reach the node core.

// onLink reports a LinkDown or LinkUp event of the heartbeat.
func (d *Daemon) onLink(ev heartbeat.Event) {
	switch ev.Kind {
	case heartbeat.LinkDown:
		d.logEvent(node.LinkDown{Node: ev.Node, Link: ev.Link, Addr: ev.Addr, Reason: ev.Reason})
	case heartbeat.LinkUp:
		d.logEvent(node.LinkUp{Node: ev.Node, Link: ev.Link, Addr: ev.Addr})
	case heartbeat.LinkDegraded:
		d.logEvent(node.LinkDegraded{Node: ev.Node, Link: ev.Link, Addr: ev.Addr, Reason: ev.Reason})
	case heartbeat.LinkRepaired:
		d.logEvent(node.LinkRepaired{Node: ev.Node, Link: ev.Link, Addr: ev.Addr})
	}
}

// isLinkEvent tells whether ev is a link event (onLink).
func isLinkEvent(ev heartbeat.Event) bool {
	switch ev.Kind {
	case heartbeat.LinkDown, heartbeat.LinkUp, heartbeat.LinkDegraded, heartbeat.LinkRepaired:
		return true
	}
	return false
}

// hbLinks are the links of a peer for the cluster status: nil with a
// single link (its state is the peer's).
func hbLinks(ls []heartbeat.LinkStatus, now time.Time) []dataset.HBLink {
	if len(ls) < 2 {
		return nil
	}
	out := make([]dataset.HBLink, 0, len(ls))
	for _, l := range ls {
		ms := int64(-1)
		if !l.LastHeard.IsZero() {
			ms = now.Sub(l.LastHeard).Milliseconds()
		}
		out = append(out, dataset.HBLink{Name: l.Name, Addr: l.Addr, Up: l.Up, LastHeardMs: ms, Degraded: l.Degraded})
	}
	return out
}

// apiLinks are the links of a peer for the daemon status.
func apiLinks(ls []heartbeat.LinkStatus) []api.LinkStatus {
	if len(ls) < 2 {
		return nil
	}
	out := make([]api.LinkStatus, 0, len(ls))
	for _, l := range ls {
		out = append(out, api.LinkStatus{Name: l.Name, Addr: l.Addr, Up: l.Up, LastHeard: l.LastHeard, Degraded: l.Degraded})
	}
	return out
}

// linkNote says which links of an up peer are down ("n2: links 1/2, net2
// down"), "" when all are up or the peer has one link or is down.
func linkNote(p heartbeat.Peer) string {
	if !p.Up || len(p.Links) < 2 {
		return ""
	}
	var down, degraded []string
	for _, l := range p.Links {
		switch {
		case !l.Up:
			down = append(down, l.Name)
		case l.Degraded:
			degraded = append(degraded, l.Name)
		}
	}
	var what []string
	if len(down) > 0 {
		what = append(what, strings.Join(down, ", ")+" down")
	}
	if len(degraded) > 0 {
		what = append(what, strings.Join(degraded, ", ")+" degraded (beats pass, data does not)")
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: links %d/%d, %s (an alarm, not a failover)", p.Name, len(p.Links)-len(down), len(p.Links), strings.Join(what, ", "))
}

// explainLinks are the link notes of the given nodes (svcmgr explain).
func (d *Daemon) explainLinks(nodes []string) []string {
	if d.hb == nil {
		return nil
	}
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	var out []string
	for _, p := range d.hb.Peers() {
		if note := linkNote(p); want[p.Name] && note != "" {
			out = append(out, note)
		}
	}
	return out
}

var descLinkUp = prometheus.NewDesc("haven_hb_link_up",
	"1 when the heartbeat link to the peer is up (heard within hb.timeout), 0 when not; every link of every peer (net1, net2... in cluster.toml order, disk).", []string{"peer", "link"}, nil)

var descLinkDegraded = prometheus.NewDesc("haven_hb_link_degraded",
	"1 when the heartbeat link to the peer passes beats but not this node's data (the data goes over the other links), 0 when not; every network link of every peer of several links.", []string{"peer", "link"}, nil)

// collectLinks sets haven_hb_link_up of every link of peers, and
// haven_hb_link_degraded of their network links when they have several.
func collectLinks(ch chan<- prometheus.Metric, peers []heartbeat.Peer) {
	for _, p := range peers {
		nets := 0
		for _, l := range p.Links {
			if !l.External {
				nets++
			}
		}
		for _, l := range p.Links {
			ch <- prometheus.MustNewConstMetric(descLinkUp, prometheus.GaugeValue, b2f(l.Up), p.Name, l.Name)
			if nets >= 2 && !l.External {
				ch <- prometheus.MustNewConstMetric(descLinkDegraded, prometheus.GaugeValue, b2f(l.Degraded), p.Name, l.Name)
			}
		}
	}
}
