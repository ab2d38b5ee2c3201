package heartbeat

import (
	"slices"
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
	// n01 counts n02's messages heard dated back by what the proved
	// delay has beyond lateMax (1 s, crossed about a minute ago): it
	// acknowledges as heard (Acked, the guard lease's anchor) none of
	// them, so the anchor stays at the last one heard at its arrival
	if a, ok := c.hb["n02"].Acked("n01"); !ok || a.N == 0 || c.clk.Now().Sub(a.Sent) < 30*time.Second {
		t.Fatalf("n02's newest message acknowledged as heard by n01: %+v, %v: want one sent before the delay (now %s) passed lateMax", a, ok, d)
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

// The echo is what the node guard's lease anchors on (Heartbeat.Acked): a
// member that acknowledged a message of n01 sent at a heard n01 at or after
// a, so it declares n01 down no earlier than a + hb.timeout. So a member
// echoes only what it counted as heard at its arrival, an acknowledgement
// withheld on the path does not move the anchor until it arrives, and a
// replayed one never moves it.
func TestMemAckAnchorHeardWithheldReplayed(t *testing.T) {
	const timeout = 3 * time.Second
	c := newMemClusterHB(t, 2, timeout, time.Second)
	c.publish("n01", svcNode("n01", 1, "web"))
	c.net.Advance(10 * time.Second)
	c.collect()
	a0, ok := c.hb["n01"].Acked("n02")
	if !ok || c.clk.Now().Sub(a0.Sent) > 2*time.Second {
		t.Fatalf("n01's newest message acknowledged by n02: %+v, %v: want one sent within 2 beats", a0, ok)
	}

	// withheld: n02's frames to n01 held on the path (and copied)
	var frames [][]byte
	c.net.Withhold("n02", "n01", func(b []byte) bool { frames = append(frames, append([]byte(nil), b...)); return true })
	c.net.Advance(2 * time.Second)
	if a, _ := c.hb["n01"].Acked("n02"); a != a0 {
		t.Fatalf("acknowledgements withheld on the path: the anchor moved from %+v to %+v", a0, a)
	}
	c.net.Withhold("n02", "n01", nil)
	if c.net.ReleaseHeld("n01") == 0 || len(frames) < 2 {
		t.Fatalf("no frame of n02 was held (%d copied)", len(frames))
	}
	a1, _ := c.hb["n01"].Acked("n02")
	if a1.N <= a0.N || a1.Sent.After(c.clk.Now()) {
		t.Fatalf("released acknowledgements: anchor %+v, was %+v: want a newer message, sent before now", a1, a0)
	}
	// replayed: an old frame of n02 again, and the newest one again
	c.net.Redeliver("n02", "n01", 0, frames[0])
	c.net.Redeliver("n02", "n01", 0, frames[len(frames)-1])
	if a, _ := c.hb["n01"].Acked("n02"); a != a1 {
		t.Fatalf("replayed frames moved the anchor from %+v to %+v", a1, a)
	}

	// n01's frames to n02 delayed past twice lateMax: n02 does not count
	// them as heard and declares n01 down; it must not acknowledge them
	c.net.SetDelay("n01", "n02", 2500*time.Millisecond)
	var downAt time.Time
	for c.clk.Now().Sub(a1.Heard) < 4*timeout {
		c.net.Advance(100 * time.Millisecond)
		if c.take("n02", Down, "n01") > 0 && downAt.IsZero() {
			downAt = c.clk.Now()
		}
	}
	if downAt.IsZero() {
		t.Fatal("n01's frames 2.5 s late (more than twice lateMax): n02 never declared it down")
	}
	if a, _ := c.hb["n01"].Acked("n02"); a.Sent.Add(timeout).After(downAt) {
		t.Fatalf("n02 declared n01 down at %s, yet acknowledged its message sent at %s (less than hb.timeout %s before): a lease anchored on it outlives n02's declaration",
			downAt.Format("15:04:05.000"), a.Sent.Format("15:04:05.000"), timeout)
	}
}

// A member that declares a peer down says so at once in a beat to the
// others, not at its next round: a survivor's takeover gate of a lost
// node whose guard's lease is anchored waits until every live member
// shows that node down (node/quorum.go), and would otherwise wait up to
// a beat period more. n03 hears n01 a beat longer than n02; n02 learns
// that n03 declared n01 down within the network delay of n03's
// declaration.
func TestMemDeclaredDownSaidAtOnce(t *testing.T) {
	c := newMemClusterHB(t, 3, 15*time.Second, 5*time.Second)
	// a network delay: a beat arrives after the receiver's own round,
	// which is in step with the sender's
	for _, a := range []string{"n01", "n02", "n03"} {
		for _, b := range []string{"n01", "n02", "n03"} {
			if a != b {
				c.net.SetDelay(a, b, 30*time.Millisecond)
			}
		}
	}
	c.net.Advance(20 * time.Second)
	c.collect()
	c.net.Drop("n01", "n02", true)
	c.net.Advance(5 * time.Second)
	c.net.Drop("n01", "n03", true)
	var downAt, saidAt time.Time
	for end := c.clk.Now().Add(30 * time.Second); c.clk.Now().Before(end) && saidAt.IsZero(); {
		c.net.Advance(50 * time.Millisecond)
		c.collect()
		for _, ev := range c.evs["n03"] {
			if ev.Kind == Down && ev.Node == "n01" && downAt.IsZero() {
				downAt = c.clk.Now()
			}
		}
		for _, ev := range c.evs["n02"] {
			if ev.Kind == Unseen && ev.Node == "n03" && slices.Contains(ev.Unseen, "n01") && saidAt.IsZero() {
				saidAt = c.clk.Now()
			}
		}
		c.evs["n02"], c.evs["n03"] = nil, nil
	}
	if downAt.IsZero() || saidAt.IsZero() {
		t.Fatalf("n03 declared n01 down at %v, n02 learnt it at %v", downAt, saidAt)
	}
	if d := saidAt.Sub(downAt); d > 200*time.Millisecond {
		t.Fatalf("n02 learnt that n03 declared n01 down %s after n03 did: want it at once, not at n03's next round", d)
	}
}

// A member of an earlier release sends no Heard echo: its plain echo
// stands in for the guard lease's anchor (or a rolling upgrade would leave
// the upgraded nodes without an anchor, and their guards would end their
// services). A member that sent Heard once is not read that way again.
func TestAckOfAnEarlierReleaseStandsIn(t *testing.T) {
	c := newMemClusterHB(t, 2, 3*time.Second, time.Second)
	c.net.Advance(5 * time.Second)
	co := c.hb["n01"].(*memHB).c
	co.mu.Lock()
	defer co.mu.Unlock()
	p := co.peers["n02"]
	if !p.sendsHeard {
		t.Fatal("n02, of this release, never sent a Heard echo")
	}
	now := co.s.Clock.Now()
	old := &message{Ack: echoes{{Name: "n01", N: co.nLast}}}
	p.ack = Ack{}
	co.proofLocked(p, old, now)
	if p.ack.N != 0 {
		t.Fatalf("a member that sends Heard echoes, without one for this node: anchored on its plain echo %+v", p.ack)
	}
	p.sendsHeard = false
	co.proofLocked(p, old, now)
	if p.ack.N != co.nLast {
		t.Fatalf("a member of an earlier release: anchor %+v, want its plain echo of %d", p.ack, co.nLast)
	}
}

// AckedNotify fires when, and only when, Acked moved: once per newer
// acknowledgement (a renewal of the guard's anchored lease waits on it,
// daemon/guard.go), never for a withheld or replayed one.
func TestMemAckedNotifyWhenAckedMoves(t *testing.T) {
	c := newMemClusterHB(t, 2, 3*time.Second, time.Second)
	c.publish("n01", svcNode("n01", 1, "web"))
	c.net.Advance(5 * time.Second)
	c.collect()
	hb := c.hb["n01"]
	notified := func() bool {
		select {
		case <-hb.AckedNotify():
			return true
		default:
			return false
		}
	}
	notified() // what the start left
	prev, _ := hb.Acked("n02")
	moves := 0
	for i := 0; i < 1000; i++ { // 10 s in 10 ms steps
		c.net.Advance(10 * time.Millisecond)
		a, _ := hb.Acked("n02")
		if got := notified(); got != (a != prev) {
			t.Fatalf("at step %d: Acked %+v (was %+v), notified %v", i, a, prev, got)
		}
		if a != prev {
			moves++
		}
		prev = a
	}
	if moves < 8 {
		t.Fatalf("Acked moved %d times in 10 s of beats every second", moves)
	}
	// withheld then replayed: the anchor stays, nothing is signalled
	var frames [][]byte
	c.net.Withhold("n02", "n01", func(b []byte) bool { frames = append(frames, append([]byte(nil), b...)); return true })
	c.net.Advance(2 * time.Second)
	if notified() || len(frames) == 0 {
		t.Fatalf("acknowledgements withheld on the path: notified (%d frames held)", len(frames))
	}
	c.net.Withhold("n02", "n01", nil)
	c.net.ReleaseHeld("n01")
	notified()
	c.net.Redeliver("n02", "n01", 0, frames[0])
	if notified() {
		t.Fatal("a replayed frame was signalled as a newer acknowledgement")
	}
}
