package heartbeat

import (
	"testing"
	"time"
)

// growingDelay delays n01's frames to n02 by a little more every 100 ms
// (rate: delay added per second of the clock), from the current delay d
// to until; it returns the delay reached and how many times n02 declared
// n01 down meanwhile.
func growingDelay(c *memCluster, d time.Duration, rate float64, until time.Duration) (time.Duration, int) {
	downs := 0
	for d < until {
		d += time.Duration(rate * float64(100*time.Millisecond))
		c.net.SetDelay("n01", "n02", d)
		c.net.Advance(100 * time.Millisecond)
		downs += c.take("n02", Down, "n01")
	}
	return d, downs
}

// lastSent is when node encoded its last message.
func lastSent(c *memCluster, node string) time.Time {
	n := c.hb[node].(*memHB).c
	n.mu.Lock()
	defer n.mu.Unlock()
	at, _ := n.sentAtLocked(n.nLast)
	return at
}

// downAfter advances the clock by 10 ms steps until n02 declares n01 down
// (at most max) and returns how long it took (max: never).
func downAfter(c *memCluster, max time.Duration) time.Duration {
	start := c.clk.Now()
	for c.clk.Now().Sub(start) < max {
		c.net.Advance(10 * time.Millisecond)
		if c.take("n02", Down, "n01") > 0 {
			return c.clk.Now().Sub(start)
		}
	}
	return max
}

// An attacker on the path from n01 to n02 (no secret) delays n01's frames
// a little more all the time (1 s every 75 s, at hb 3s/1s), then n01 is
// killed. Before, the lag was never late (its least,
// kept over 10 to 20 hb.timeout, moved along) and n02 declared the dead
// n01 down only once the frames held on the path were delivered: 8.3 s
// after a kill at a 5.4 s lag. Now n01's beats echo n02's, which proves
// how old each is when it arrives:
//   - up to twice lateMax (2 s), n01 stays up, but counts as heard when
//     its beat was sent plus lateMax at most: a kill is seen within
//     hb.timeout + lateMax (4 s) of n01's last beat, however long the path
//     held it;
//   - past that, the delay is a cut: n02 declares n01 down (an attacker
//     on the path can always cut), and a dead n01 is never kept up by
//     what the path held.
func TestMemGrowingDelayProvedNotInferred(t *testing.T) {
	const timeout = 3 * time.Second
	rate := 1.0 / 75
	c := newMemClusterHB(t, 2, timeout, time.Second)
	c.publish("n01", svcNode("n01", 1, "web"))
	c.net.Advance(10 * time.Second)
	c.collect()
	d, downs := growingDelay(c, 0, rate, 1800*time.Millisecond)
	if downs != 0 || !peerOf(t, c.hb["n02"], "n01").Up {
		t.Fatalf("n01 declared down %d times under a delay of at most %s (twice lateMax: 2 s)", downs, d)
	}
	if a, ok := c.hb["n02"].Acked("n01"); !ok || c.clk.Now().Sub(a.Sent) > 2*time.Second+d || a.N == 0 || a.Heard.Sub(a.Sent) < d-200*time.Millisecond {
		t.Fatalf("n02's newest message acknowledged by n01: %+v, %v: want one sent within 2 beats and the delay (%s)", a, ok, d)
	}
	c.net.Kill("n01")
	last := lastSent(c, "n01")
	if took := downAfter(c, 20*time.Second); c.clk.Now().Sub(last) > timeout+time.Second+20*time.Millisecond {
		t.Fatalf("n01 killed under a %s delay: declared down %s after the kill, %s after its last message was sent, want within hb.timeout + lateMax (4 s)",
			d, took, c.clk.Now().Sub(last))
	}

	// the same attack, on: past lateMax, a cut
	c = newMemClusterHB(t, 2, timeout, time.Second)
	c.publish("n01", svcNode("n01", 1, "web"))
	c.net.Advance(10 * time.Second)
	c.collect()
	d, downs = growingDelay(c, 0, rate, 5400*time.Millisecond)
	if downs == 0 {
		t.Fatalf("n01's frames delayed by up to %s (1 s more every 75 s) never made n02 declare it down", d)
	}
	up := peerOf(t, c.hb["n02"], "n01").Up
	c.net.Kill("n01")
	if took := downAfter(c, 20*time.Second); up && took > timeout+time.Second {
		t.Fatalf("n01 killed under a %s delay: declared down %s after the kill, want within hb.timeout + lateMax", d, took)
	}
	if peerOf(t, c.hb["n02"], "n01").Up {
		t.Fatal("the dead n01 still up")
	}
	t.Logf("a delay growing to %s: n01 declared down %d times (up at the kill: %v)", d, downs, up)
}
