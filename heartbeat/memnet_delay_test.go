package heartbeat

import (
	"testing"
	"time"
)

// SetDelay holds the frames of one link: the data published reaches the
// delayed peer d later (Advance stops at its due time), the other peer at
// once; 0 removes the delay (once the frames held are delivered: a link
// keeps its order).
func TestMemNetworkDelay(t *testing.T) {
	c := newMemCluster(t, 3)
	c.net.Advance(time.Second)
	c.collect()
	c.net.SetDelay("n01", "n02", 700*time.Millisecond)
	want := svcNode("n01", 7, "web")
	c.publish("n01", want)
	if got := c.seen["n03"]["n01"]; got == nil || got.Gen != 7 {
		t.Fatalf("n03 (no delay): got %+v, want gen 7 at once", got)
	}
	if got := c.seen["n02"]["n01"]; got != nil && got.Gen == 7 {
		t.Fatalf("n02 (delay 700ms): got gen 7 at once")
	}
	c.net.Advance(699 * time.Millisecond)
	c.collect()
	if got := c.seen["n02"]["n01"]; got != nil && got.Gen == 7 {
		t.Fatalf("n02 (delay 700ms): got gen 7 after 699ms")
	}
	c.net.Advance(time.Millisecond)
	c.collect()
	if got := c.seen["n02"]["n01"]; got == nil || got.Gen != 7 {
		t.Fatalf("n02 (delay 700ms): got %+v after 700ms, want gen 7", got)
	}
	c.net.SetDelay("n01", "n02", 0)
	c.net.Advance(700 * time.Millisecond) // the frames still held (beats) arrive
	c.publish("n01", svcNode("n01", 8, "web", "db"))
	if got := c.seen["n02"]["n01"]; got == nil || got.Gen != 8 {
		t.Fatalf("n02 (delay removed): got %+v, want gen 8 at once", got)
	}
}
