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
	c.Heartbeat(PeerEvent{Node: "n2", Kind: PeerDuplicate, Reason: "two runs"}, now)
	d.settle(now)
	if got := webOn(c, "n2", now); got != dataset.StatusUnknown || !c.PeerDuplicated("n2") {
		t.Fatalf("web on n2 %s (duplicated %v) while two daemons run as n2, want unknown", got, c.PeerDuplicated("n2"))
	}
	found := false
	for _, l := range d.log {
		found = found || strings.Contains(l, "duplicate member n2: two runs")
	}
	if !found {
		t.Fatalf("no duplicate_member event: %v", d.log)
	}
	now = now.Add(3 * time.Second)
	c.Heartbeat(PeerEvent{Node: "n2", Kind: PeerDown}, now)
	for i := 0; i < 20; i++ {
		now = now.Add(time.Second)
		c.Tick(now)
		c.WakeUp()
		d.settle(now)
	}
	if st := c.PeerStatus("n2", now); st != dataset.NodeUp {
		t.Fatalf("duplicated n2 is %s after a Down, want still up (unknown, not down)", st)
	}
	if d.running["web"] {
		t.Fatalf("n1 started web while n2 is duplicated: %v", d.log)
	}
	c.Heartbeat(PeerEvent{Node: "n2", Kind: PeerDuplicateGone}, now)
	if st := c.PeerStatus("n2", now); st != dataset.NodeDown {
		t.Fatalf("n2 %s once the duplicate is over, want the Down held applied", st)
	}
	for i := 0; i < 10 && !d.running["web"]; i++ {
		now = now.Add(time.Second)
		c.Tick(now)
		c.WakeUp()
		d.settle(now)
	}
	if !d.running["web"] {
		t.Fatalf("web not failed over once n2 is down (no longer duplicated): %v", d.log)
	}
}
