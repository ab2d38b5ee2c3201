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
	if ev.Kind == heartbeat.LinkDown {
		d.logEvent(node.LinkDown{Node: ev.Node, Link: ev.Link, Addr: ev.Addr, Reason: ev.Reason})
		return
	}
	d.logEvent(node.LinkUp{Node: ev.Node, Link: ev.Link, Addr: ev.Addr})
}

// isLinkEvent tells whether ev is a link event (onLink).
func isLinkEvent(ev heartbeat.Event) bool {
	return ev.Kind == heartbeat.LinkDown || ev.Kind == heartbeat.LinkUp
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
		out = append(out, dataset.HBLink{Name: l.Name, Addr: l.Addr, Up: l.Up, LastHeardMs: ms})
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
		out = append(out, api.LinkStatus{Name: l.Name, Addr: l.Addr, Up: l.Up, LastHeard: l.LastHeard})
	}
	return out
}

// linkNote says which links of an up peer are down ("n2: links 1/2, net2
// down"), "" when all are up or the peer has one link or is down.
func linkNote(p heartbeat.Peer) string {
	if !p.Up || len(p.Links) < 2 {
		return ""
	}
	var down []string
	for _, l := range p.Links {
		if !l.Up {
			down = append(down, l.Name)
		}
	}
	if len(down) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: links %d/%d, %s down (an alarm, not a failover)", p.Name, len(p.Links)-len(down), len(p.Links), strings.Join(down, ", "))
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

// collectLinks sets haven_hb_link_up of every link of peers.
func collectLinks(ch chan<- prometheus.Metric, peers []heartbeat.Peer) {
	for _, p := range peers {
		for _, l := range p.Links {
			ch <- prometheus.MustNewConstMetric(descLinkUp, prometheus.GaugeValue, b2f(l.Up), p.Name, l.Name)
		}
	}
}
