package node

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// TestDuplicatePeerIsUnknownNotDown: two daemons run as n2 (n1 hears two
// runs). n2's instances are unknown in n1's view; the heartbeat's Down of
// n2 (the run n1 confirmed went silent, the other still sends) is held:
// n2 stays up, and n1 does not start web, which n2 (or its twin) may run.
// Once the duplicate is over, the Down held applies and web fails over.
func TestDuplicatePeerIsUnknownNotDown(t *testing.T) {
	d, _ := staleCluster(t)
	c := d.c
	now := t0.Add(time.Second)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerDuplicate, Reason: "two runs"}, now)
	d.settle(now)
	if got := webOn(c, "n2", now); got != dataset.StatusUnknown || !c.peerDuplicated("n2") {
		t.Fatalf("web on n2 %s (duplicated %v) while two daemons run as n2, want unknown", got, c.peerDuplicated("n2"))
	}
	found := false
	for _, l := range d.log {
		found = found || strings.Contains(l, "duplicate member n2: two runs")
	}
	if !found {
		t.Fatalf("no duplicate_member event: %v", d.log)
	}
	now = now.Add(3 * time.Second)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerDown}, now)
	for i := 0; i < 20; i++ {
		now = now.Add(time.Second)
		c.tick(now)
		c.wakeUp()
		d.settle(now)
	}
	if st := c.PeerStatus("n2", now); st != dataset.NodeUp {
		t.Fatalf("duplicated n2 is %s after a Down, want still up (unknown, not down)", st)
	}
	if d.running["web"] {
		t.Fatalf("n1 started web while n2 is duplicated: %v", d.log)
	}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerDuplicateGone}, now)
	if st := c.PeerStatus("n2", now); st != dataset.NodeDown {
		t.Fatalf("n2 %s once the duplicate is over, want the Down held applied", st)
	}
	for i := 0; i < 10 && !d.running["web"]; i++ {
		now = now.Add(time.Second)
		c.tick(now)
		c.wakeUp()
		d.settle(now)
	}
	if !d.running["web"] {
		t.Fatalf("web not failed over once n2 is down (no longer duplicated): %v", d.log)
	}
}

// TestNewRunHeldIsUnknown: a new run of n2 (a cloned host that took n2's
// address, or a restart) is confirmed while another run of n2 was heard
// lately; its data says web is down there (nothing runs on the clone).
// n1 takes the data but counts n2's instances as unknown: it does not
// start web (before, it started it after ready_period while the real n2
// ran it). Once the run is trusted, its data counts.
func TestNewRunHeldIsUnknown(t *testing.T) {
	d, n2 := staleCluster(t)
	c := d.c
	now := t0.Add(time.Second)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerRunHeld, Reason: "a new run of n2"}, now)
	clone := cloneNode(n2)
	down := clone.Services["web"]
	down.Avail, down.Overall, down.PlacementLeader = dataset.StatusDown, dataset.StatusDown, false
	clone.Services = map[string]dataset.Instance{"web": down}
	clone.Monitor = dataset.NodeRejoin // a daemon that just started
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: clone}, now)
	d.settle(now)
	got := webOn(c, "n2", now)
	for i := 0; i < 10; i++ {
		now = now.Add(500 * time.Millisecond)
		c.tick(now)
		c.wakeUp()
		d.settle(now)
	}
	if got != dataset.StatusUnknown || d.running["web"] {
		t.Fatalf("web on n2 %s while n2's new run is held (want unknown); n1 started web %v: %v", got, d.running["web"], d.log)
	}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerRunTrusted}, now)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: cloneNode(clone)}, now)
	if got := webOn(c, "n2", now); got != dataset.StatusDown {
		t.Fatalf("web on n2 %s once its new run is trusted, want down (its data counts)", got)
	}
}
