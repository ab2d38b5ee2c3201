package node

import (
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/placement"
)

// staleCluster is n1 (local) with peer n2 running web (n2 first in nodes).
func staleCluster(t *testing.T) (*incDriver, *dataset.Node) {
	t.Helper()
	svcs := map[string]*config.ServiceConfig{"web": {Name: "web", Nodes: []string{"n2", "n1"},
		Orchestrate: monitor.OrchestrateHA, Placement: placement.PolicyNodesOrder}}
	loc := &incLocal{svcs: svcs}
	c := New(Config{Name: "n1", ClusterNodes: []string{"n1", "n2"}, Compat: 1, MaintenanceGrace: 6 * time.Second, RejoinGrace: 10 * time.Second,
		ReadyPeriod: 2 * time.Second, CheckInterval: time.Hour, MonitorInterval: time.Hour, Local: loc, WriteThrough: true}, State{})
	loc.c = c
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true, Monitored: true}, t0)
	d := &incDriver{c: c, incremental: true, running: map[string]bool{}}
	c.start(t0)
	d.settle(t0)
	n2 := &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1, Services: map[string]dataset.Instance{
		"web": {Avail: dataset.StatusUp, Overall: dataset.StatusUp, PlacementLeader: true,
			Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone, StateSince: t0}}}}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerUp}, t0)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: cloneNode(n2)}, t0)
	d.settle(t0)
	if d.running["web"] {
		t.Fatalf("n1 started web while n2 runs it: %v", d.log)
	}
	return d, n2
}

func webOn(c *Core, node string, now time.Time) dataset.Status {
	return c.Snapshot(now).Nodes[node].Data.Services["web"].Avail
}

// TestStalePeerInstancesUnknown: n2 is heard but its data stale (its
// service may have died there): its instances are unknown in n1's view,
// neither up nor down, also when a copy still behind arrives; n1 does not
// start web because of it (n2 may run it); the peer stays up. Fresh then
// the current copy trusts it again; once n2 is declared down, web fails
// over to n1.
func TestStalePeerInstancesUnknown(t *testing.T) {
	d, n2 := staleCluster(t)
	c := d.c
	now := t0.Add(time.Second)
	if got := webOn(c, "n2", now); got != dataset.StatusUp {
		t.Fatalf("web on n2 %s before stale, want up", got)
	}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerStale, Reason: "behind"}, now)
	d.settle(now)
	if got := webOn(c, "n2", now); got != dataset.StatusUnknown {
		t.Fatalf("web on n2 %s while n2 is stale, want unknown", got)
	}
	if st := c.PeerStatus("n2", now); st != dataset.NodeUp || !c.peerBehind("n2") {
		t.Fatalf("n2 %s behind %v, want up and behind", st, c.peerBehind("n2"))
	}
	// a copy still behind what n2 announces is not trusted either
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: cloneNode(n2)}, now)
	d.settle(now)
	if got := webOn(c, "n2", now); got != dataset.StatusUnknown {
		t.Fatalf("web on n2 %s after a copy still behind, want unknown", got)
	}
	for i := 0; i < 20; i++ {
		now = now.Add(time.Second)
		c.tick(now)
		c.wakeUp()
		d.settle(now)
	}
	if d.running["web"] {
		t.Fatalf("n1 started web while n2 is stale (it may still run it): %v", d.log)
	}
	// caught up: web is down on n2 (it died there)
	down := cloneNode(n2)
	down.Services["web"] = dataset.Instance{Avail: dataset.StatusDown, Overall: dataset.StatusDown,
		Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone, StateSince: now}}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerFresh}, now)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: down}, now)
	if got := webOn(c, "n2", now); got != dataset.StatusDown || c.peerBehind("n2") {
		t.Fatalf("web on n2 %s behind %v once fresh, want down, not behind", got, c.peerBehind("n2"))
	}
}

// TestStalePeerDownFailsOver: a stale peer declared down is down (no
// longer behind): the service fails over as for any lost node.
func TestStalePeerDownFailsOver(t *testing.T) {
	d, _ := staleCluster(t)
	c := d.c
	now := t0.Add(time.Second)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerStale, Reason: "behind"}, now)
	d.settle(now)
	now = now.Add(15 * time.Second)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerDown}, now)
	if c.peerBehind("n2") {
		t.Fatal("n2 behind after down")
	}
	for i := 0; i < 10 && !d.running["web"]; i++ {
		now = now.Add(time.Second)
		c.tick(now)
		c.wakeUp()
		d.settle(now)
	}
	if !d.running["web"] {
		t.Fatalf("web not failed over to n1 after n2 was declared down: %v", d.log)
	}
}
