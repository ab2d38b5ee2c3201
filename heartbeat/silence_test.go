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
	// the silence is said at a tick between probeAfter (7.5s) and a beat
	// period (5s) more after the last frame heard, before hb.timeout (15s)
	silents, downs := 0, 0
	for waited := time.Duration(0); silents == 0 && waited < 13*time.Second; waited += 100 * time.Millisecond {
		c.net.Advance(100 * time.Millisecond)
		silents, downs = silents+count(Silent), downs+count(Down)
	}
	if silents != 1 || downs != 0 {
		t.Fatalf("n01 silent for more than a beat and a half: %d Silent, %d Down events, want 1 and 0", silents, downs)
	}
	c.net.Advance(100 * time.Millisecond) // still short of hb.timeout
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

// TestLoopbackIdleTicksOnlyForBeats: an idle node's ticker (real
// sockets, real timers) wakes for its beats only. A peer heard sets no
// due time of its own (its silence is noticed at a tick): a probe due set
// a beat and a half after each frame heard fired for nothing once a beat
// period per peer, the peer heard again meanwhile (3 ticks a beat period
// instead of 1 with two peers). The in-memory network cannot show it: it
// asks every node for its due time again after each step.
func TestLoopbackIdleTicksOnlyForBeats(t *testing.T) {
	t.Parallel()
	ws := loopCluster(t, 3, func(cfg *Config) { cfg.Timeout, cfg.Interval = 3*time.Second, time.Second }, 5*time.Second)
	core := ws["n1"].hb.(*mlHB).c
	ticks := func() uint64 {
		core.mu.Lock()
		defer core.mu.Unlock()
		return core.ticks
	}
	sent := func() uint64 { return ws["n1"].hb.Stats().Sent }
	// counts over whole beat periods: a beat goes to each of 2 peers
	waitSent := func(from, n uint64) {
		for deadline := time.Now().Add(30 * time.Second); sent() < from+n; {
			if time.Now().After(deadline) {
				t.Fatalf("n1 sent %d frames of %d", sent()-from, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitSent(sent(), 2) // past the joins' traffic
	s0, n0 := sent(), ticks()
	waitSent(s0, 20)
	beats := int(sent()-s0) / 2
	n := int(ticks() - n0)
	// a beat a second, a tick each; a beat late by half a period (a
	// loaded host) may add probe ticks; a due time per peer that fires
	// for nothing made it 1.8 a beat period
	if n > beats*14/10 {
		t.Fatalf("n1 ticked %d times in %d beat periods, want about one a beat", n, beats)
	}
	t.Logf("%d ticks in %d beat periods", n, beats)
}
