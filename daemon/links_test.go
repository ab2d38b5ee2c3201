package daemon

import (
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/heartbeat"
	"haven/internal/clock"
)

// twoLinkPair is n1 and n2 on an in-memory network, two links each, hb
// 3s/1s.
func twoLinkPair(t *testing.T) (*heartbeat.MemNetwork, map[string]heartbeat.Heartbeat) {
	net := heartbeat.NewMemNetwork(clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	members := []config.Member{
		{Name: "n1", Addr: "10.0.0.1:10000", Links: []string{"10.0.0.1:10000", "10.1.0.1:10000"}},
		{Name: "n2", Addr: "10.0.0.2:10000", Links: []string{"10.0.0.2:10000", "10.1.0.2:10000"}},
	}
	hbs := map[string]heartbeat.Heartbeat{}
	for _, m := range members {
		h, err := net.Join(heartbeat.Config{Node: m.Name, Members: members, ClusterName: "c", Timeout: 3 * time.Second, Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		hbs[m.Name] = h
	}
	return net, hbs
}

// haven_hb_link_up has one gauge per link of every peer: 0 for a link cut
// while the peer is heard on the other, 1 for the others.
func TestMetricsLinkUp(t *testing.T) {
	net, hbs := twoLinkPair(t)
	m := newMetrics("n1", "c", 1)
	m.setHeartbeat(hbs["n1"])
	net.Advance(10 * time.Second)
	if got := metricValue(t, m, "haven_hb_link_up", "peer", "n2", "link", "net2"); got != 1 {
		t.Fatalf("haven_hb_link_up{n2,net2} = %v before the cut, want 1", got)
	}
	net.CutLink("n2", 1, true)
	net.Advance(10 * time.Second)
	if got := metricValue(t, m, "haven_hb_link_up", "peer", "n2", "link", "net2"); got != 0 {
		t.Errorf("haven_hb_link_up{n2,net2} = %v with net2 cut, want 0", got)
	}
	if got := metricValue(t, m, "haven_hb_link_up", "peer", "n2", "link", "net1"); got != 1 {
		t.Errorf("haven_hb_link_up{n2,net1} = %v, want 1", got)
	}
	if got := metricValue(t, m, "haven_heartbeat_peer_up", "peer", "n2"); got != 1 {
		t.Errorf("haven_heartbeat_peer_up{n2} = %v with one link of two cut, want 1", got)
	}
}

// TestMetricsDiskNotOpen: with [hb.disk] set and the disk not open (yet),
// haven_hb_disk_reachable says 0 (diskstatus.go).
func TestMetricsDiskNotOpen(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	net := heartbeat.NewMemNetwork(clk)
	members := []config.Member{{Name: "n1", Addr: "10.0.0.1:10000"}, {Name: "n2", Addr: "10.0.0.2:10000"}}
	h, err := net.Join(heartbeat.Config{Node: "n1", Members: members, ClusterName: "c", Timeout: 3 * time.Second, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics("n1", "c", 1)
	m.clk = clk
	m.setHeartbeat(h)
	m.diskPath = "/dev/sdb"
	if got := metricValue(t, m, "haven_hb_disk_reachable", "path", "/dev/sdb"); got != 0 {
		t.Fatalf("haven_hb_disk_reachable = %v with the disk not open, want 0", got)
	}
}

// haven_hb_link_degraded: 1 for a link that passes beats but not data
// (the peer said it was behind on this node's data sent over it), 0 for
// the others; the peer stays up.
func TestMetricsLinkDegraded(t *testing.T) {
	net, hbs := twoLinkPair(t)
	m := newMetrics("n1", "c", 1)
	m.setHeartbeat(hbs["n1"])
	hbs["n1"].Publish(dataset.Node{Name: "n1", Gen: 1})
	net.Advance(10 * time.Second)
	if got := metricValue(t, m, "haven_hb_link_degraded", "peer", "n2", "link", "net1"); got != 0 {
		t.Fatalf("haven_hb_link_degraded{n2,net1} = %v, want 0", got)
	}
	net.BeatsOnly("n1", 0, true)
	hbs["n1"].Publish(dataset.Node{Name: "n1", Gen: 2, Labels: map[string]string{"a": "b"}})
	net.Advance(10 * time.Second)
	if got := metricValue(t, m, "haven_hb_link_degraded", "peer", "n2", "link", "net1"); got != 1 {
		t.Errorf("haven_hb_link_degraded{n2,net1} = %v with net1 passing beats only, want 1", got)
	}
	if got := metricValue(t, m, "haven_hb_link_degraded", "peer", "n2", "link", "net2"); got != 0 {
		t.Errorf("haven_hb_link_degraded{n2,net2} = %v, want 0", got)
	}
	if got := metricValue(t, m, "haven_heartbeat_peer_up", "peer", "n2"); got != 1 {
		t.Errorf("haven_heartbeat_peer_up{n2} = %v with a degraded link, want 1", got)
	}
}
