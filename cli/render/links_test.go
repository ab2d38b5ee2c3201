package render

import (
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/monitor"
)

// A peer heard on one of its two links: svcmon's hb row, the daemon status
// and svcmgr explain say so; all links up (or a single link) says nothing.
func TestLinksMarks(t *testing.T) {
	st := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Local:   "n2",
		Heartbeat: map[string]dataset.HBPeer{
			"n1": {Up: true, LastHeardMs: 800, Links: []dataset.HBLink{{Name: "net1", Up: true}, {Name: "net2", Up: false}}},
			"n3": {Up: true, LastHeardMs: 300, Links: []dataset.HBLink{{Name: "net1", Up: true}, {Name: "net2", Up: true}}},
		},
	}
	hb := hbRow(Svcmon(st, SvcmonOptions{}))
	if !strings.Contains(hb, "up 0.8s links 1/2") || strings.Contains(hb, "up 0.3s links") {
		t.Errorf("hb row: %q", hb)
	}
	now := time.Now()
	ds := &api.DaemonStatus{Node: "n2", Started: now, HB: api.HBStatus{Addr: "0.0.0.0:10000", Listening: true},
		Peers: []api.PeerStatus{{Name: "n1", Status: "up", Links: []api.LinkStatus{{Name: "net1", Up: true}, {Name: "net2"}}},
			{Name: "n3", Status: "up", Links: []api.LinkStatus{{Name: "net1", Up: true}, {Name: "net2", Up: true}}}}}
	s := NodeStatus(ds, now)
	if !strings.Contains(s, "up links 1/2 (net2 down)") || strings.Count(s, "links") != 1 {
		t.Errorf("daemon status:\n%s", s)
	}
	e := Explain(&api.Explanation{Service: "web", Local: "n2", Links: []string{"n1: links 1/2, net2 down (an alarm, not a failover)"},
		Monitor: &monitor.LocalMonitor{}})
	if !strings.Contains(e, "heartbeat: n1: links 1/2, net2 down") {
		t.Errorf("explain:\n%s", e)
	}
}

// A link that passes beats but not data (degraded): svcmon's hb row and
// the daemon status say so, the peer stays up.
func TestLinksDegradedMarks(t *testing.T) {
	st := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Local:   "n2",
		Heartbeat: map[string]dataset.HBPeer{
			"n1": {Up: true, LastHeardMs: 800, Links: []dataset.HBLink{{Name: "net1", Up: true, Degraded: true}, {Name: "net2", Up: true}}},
			"n3": {Up: true, LastHeardMs: 300, Links: []dataset.HBLink{{Name: "net1", Up: true}, {Name: "net2", Up: true}}},
		},
	}
	hb := hbRow(Svcmon(st, SvcmonOptions{}))
	if !strings.Contains(hb, "up 0.8s links 2/2 degraded") || strings.Contains(hb, "up 0.3s links") {
		t.Errorf("hb row: %q", hb)
	}
	now := time.Now()
	ds := &api.DaemonStatus{Node: "n2", Started: now, HB: api.HBStatus{Addr: "0.0.0.0:10000", Listening: true},
		Peers: []api.PeerStatus{{Name: "n1", Status: "up", Links: []api.LinkStatus{{Name: "net1", Up: true, Degraded: true}, {Name: "net2", Up: true}}}}}
	if s := NodeStatus(ds, now); !strings.Contains(s, "up links 2/2 (net1 degraded)") {
		t.Errorf("daemon status:\n%s", s)
	}
}

// hbRow is the Heartbeat row ("hb") of svcmon's output.
func hbRow(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "hb ") {
			return l
		}
	}
	return ""
}
