package heartbeat

import (
	"fmt"
	"testing"
)

// While the daemon's loop is busy (a node joining a
// cluster of 500 services installs them while every peer's statuses
// change), each change of a peer arrives as a Data event holding a full
// copy of its dataset. They must coalesce (the newest copy of a peer
// replaces a waiting one) rather than pile up: with 16 daemons x 500
// services each daemon held hundreds of MB of waiting copies (up to
// eventBuffer of them) and grew until stopped.
func TestDataEventsOfABusyLoopCoalesce(t *testing.T) {
	c := newMemCluster(t, 2)
	for _, m := range c.members {
		c.publish(m.Name, svcNode(m.Name, 1, "web"))
	}
	c.net.Flush()
	c.collect()
	// n02's loop is busy: nothing reads its events while n01 changes
	const changes = 200
	for i := 0; i < changes; i++ {
		n := svcNode("n01", uint64(i+2), "web", fmt.Sprintf("s%03d", i))
		c.hb["n01"].Publish(n)
		c.net.Flush()
	}
	ch := c.hb["n02"].Events()
	data := 0
	for len(ch) > 0 {
		if ev := <-ch; ev.Kind == Data && ev.Node == "n01" {
			data++
		}
	}
	if data > 16 {
		t.Fatalf("%d copies of n01's dataset wait for n02's loop after %d changes: want a few (they coalesce)", data, changes)
	}
	c.net.Advance(6e9) // a beat: the backlog drains
	c.collect()
	if got := c.seen["n02"]["n01"]; got == nil || got.Gen != changes+1 {
		t.Fatalf("n02 does not hold n01's newest data after the loop caught up: %+v", got)
	}
}
