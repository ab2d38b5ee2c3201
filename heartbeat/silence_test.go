package heartbeat

import (
	"testing"
	"time"

	"haven/dataset"
)

// A live peer silent for a beat and a half (7.5s at 15s/5s) gives one Silent
// event, however long the silence lasts short of hb.timeout; heard again,
// one Heard, and no Up (it never went down). Silent again until declared
// down: one Silent, the Down, and no Heard; back from down: an Up, and no
// Heard.
func TestMemSilentThenHeard(t *testing.T) {
	c := newMemCluster(t, 3)
	want := map[string]dataset.Node{}
	for _, m := range c.members {
		want[m.Name] = svcNode(m.Name, 1, "web")
		c.publish(m.Name, want[m.Name])
	}
	if err := c.converged(want, "n01", "n02", "n03"); err != nil {
		t.Fatal(err)
	}
	c.net.Advance(time.Minute)
	c.collect()
	c.evs = map[string][]Event{}
	count := func(kind Kind) int { return len(c.events("n02", kind, "n01")) }
	silent := func(from, to string, b []byte) bool { return from == "n01" }

	c.net.Lose(silent)
	// > probeAfter (7.5s) of silence, and short of hb.timeout (15s) even
	// when the last beat heard came a beat period (5s) before the loss
	c.net.Advance(8 * time.Second)
	if n := count(Silent); n != 1 {
		t.Fatalf("n01 silent for more than a beat and a half: %d Silent events, want 1", n)
	}
	c.net.Advance(1 * time.Second) // still short of hb.timeout
	if n, m := count(Silent), count(Down); n != 0 || m != 0 {
		t.Fatalf("the same silence said again: %d Silent, %d Down", n, m)
	}
	if n := count(Heard); n != 0 {
		t.Fatalf("%d Heard events while n01 is silent", n)
	}

	c.net.Lose(nil)
	c.net.Advance(3 * time.Second) // > a beat period: n01 heard, and a tick since
	if n := count(Heard); n != 1 {
		t.Fatalf("n01 heard again before its down: %d Heard events, want 1", n)
	}
	if n, m := count(Up), count(Silent); n != 0 || m != 0 {
		t.Fatalf("n01 heard again, never down: %d Up, %d Silent events, want none", n, m)
	}

	c.net.Lose(silent)
	c.net.Advance(20 * time.Second) // > hb.timeout
	if n, m := count(Silent), count(Down); n != 1 || m != 1 {
		t.Fatalf("n01 silent until declared down: %d Silent, %d Down events, want 1 and 1", n, m)
	}
	if n := count(Heard); n != 0 {
		t.Fatalf("a Heard event for a peer declared down (%d)", n)
	}
	c.net.Lose(nil)
	c.net.Advance(10 * time.Second)
	if n := count(Up); n != 1 {
		t.Fatalf("n01 back: %d Up events, want 1", n)
	}
	if n, m := count(Heard), count(Silent); n != 0 || m != 0 {
		t.Fatalf("n01 back from down: %d Heard, %d Silent events, want none (an Up says it)", n, m)
	}
	// n03 saw the same of n01; n01 saw nothing of the kind (it heard
	// everybody throughout)
	if n := len(c.events("n01", Silent, "n02")) + len(c.events("n01", Heard, "n02")); n != 0 {
		t.Fatalf("n01, never without news, had %d Silent/Heard events of n02", n)
	}
}
