package heartbeat

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"haven/dataset"
	"haven/internal/clock"
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

// Beats fall in step (beatInStepLocked): three nodes started at different
// phases of the beat period send their rounds together after a few
// periods, each round of one node within a few latencies of a round of
// each other; no node's rounds come more than a period and a twentieth
// apart or less than half a period apart.
func TestBeatsInStep(t *testing.T) {
	c := &memCluster{t: t, clk: clock.NewFake(t0), members: memberList(3),
		hb: map[string]Heartbeat{}, seen: map[string]map[string]*dataset.Node{}, evs: map[string][]Event{}}
	c.net = NewMemNetwork(c.clk)
	for i, m := range c.members { // phases 0, 1.7 s and 3.4 s of 5 s
		if i > 0 {
			c.net.Advance(1700 * time.Millisecond)
		}
		c.join(m.Name, testSecret, "prod")
	}
	const latency = 2 * time.Millisecond
	for _, a := range c.members {
		for _, b := range c.members {
			if a.Name != b.Name {
				c.net.SetDelay(a.Name, b.Name, latency)
			}
		}
	}
	c.net.Advance(30 * time.Second)
	c.collect()
	rounds := map[string][]time.Time{} // when each node's beats arrived
	c.net.Lose(func(from, to string, b []byte) bool {
		if m, err := decode(b); err == nil && m.Kind == kindBeat && !m.Probe {
			if r := rounds[from]; len(r) == 0 || c.clk.Now().Sub(r[len(r)-1]) > latency {
				rounds[from] = append(r, c.clk.Now())
			}
		}
		return false
	})
	start := c.clk.Now()
	c.net.Advance(60 * time.Second)
	end := c.clk.Now()
	beat := 5 * time.Second
	for _, m := range c.members {
		r := rounds[m.Name]
		if len(r) < 11 {
			t.Fatalf("%s sent %d rounds in 12 beat periods", m.Name, len(r))
		}
		for i := 1; i < len(r); i++ {
			if d := r[i].Sub(r[i-1]); d > beat+beat/20 || d < beat/2 {
				t.Fatalf("%s: rounds %s apart (%v then %v), want within [%s, %s]", m.Name, d, r[i-1], r[i], beat/2, beat+beat/20)
			}
		}
	}
	for _, a := range c.members {
		for _, ta := range rounds[a.Name] {
			for _, b := range c.members {
				near := false
				for _, tb := range rounds[b.Name] {
					if d := ta.Sub(tb); d < 3*latency && d > -3*latency {
						near = true
					}
				}
				// (b's round may fall just outside the window)
				if !near && ta.Sub(start) > 3*latency && end.Sub(ta) > 3*latency {
					t.Fatalf("%s's round at +%s has no round of %s within %s: not in step\n%v", a.Name, ta.Sub(t0), b.Name, 3*latency, rounds)
				}
			}
		}
	}
	inStep := 0
	for _, m := range c.members {
		if c.hb[m.Name].Stats().BeatsInStep > 0 {
			inStep++
		}
	}
	if inStep < 2 {
		t.Fatalf("%d nodes sent rounds in step, want at least 2", inStep)
	}
	if evs := c.events("n01", Down, "n02"); len(evs) > 0 {
		t.Fatalf("n01 saw n02 down: %v", evs)
	}
}

// wakeCount is a Sleeper that counts its Wakes (the ticker's sleep).
type wakeCount struct {
	clock.Sleeper
	wakes atomic.Int64
}

func (w *wakeCount) Wake() { w.wakes.Add(1); w.Sleeper.Wake() }

// A round sent early on a peer's beat (in step) wakes the ticker, asleep
// until the due time that round replaced, so that it sleeps again until
// the new one at once instead of waking later for nothing: one Wake per
// round in step.
func TestBeatInStepWakesTheTicker(t *testing.T) {
	c := &memCluster{t: t, clk: clock.NewFake(t0), members: memberList(2),
		hb: map[string]Heartbeat{}, seen: map[string]map[string]*dataset.Node{}, evs: map[string][]Event{}}
	c.net = NewMemNetwork(c.clk)
	c.join("n01", testSecret, "prod")
	core := c.hb["n01"].(*memHB).c
	w := &wakeCount{Sleeper: core.wake}
	core.mu.Lock()
	core.wake = w
	core.mu.Unlock()
	c.net.Advance(3 * time.Second) // n02 a phase of 3 s of 5 s later: n01 joins its rounds
	c.join("n02", testSecret, "prod")
	c.net.Advance(30 * time.Second)
	c.collect()
	inStep := c.hb["n01"].Stats().BeatsInStep
	if inStep == 0 {
		t.Fatal("n01 sent no round in step")
	}
	if n := w.wakes.Load(); n < int64(inStep) {
		t.Fatalf("n01 sent %d rounds in step and woke its ticker %d times", inStep, n)
	}
}

// With real sockets and timers, three nodes started a third of a period
// apart beat in step: after a few periods each round of one node has a
// round of each other node within 40 ms (a beat period is 300 ms: apart,
// they were 100 ms from each other), and every node still beats every
// period.
func TestLoopbackBeatsInStep(t *testing.T) {
	t.Parallel()
	const beat = 300 * time.Millisecond
	var mu sync.Mutex
	var recording bool
	rounds := map[string][]time.Time{}
	ms := loopMembers(t, 3)
	ws := map[string]*watcher{}
	for _, m := range ms {
		cfg := loopConfig(ms, m.Name, nil)
		cfg.Timeout, cfg.Interval = 3*beat, beat
		name := m.Name
		h, err := newMemberlist(cfg, func(conn net.Conn, _ string, _ []byte) {
			if conn != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if r := rounds[name]; recording && (len(r) == 0 || time.Since(r[len(r)-1]) > beat/4) {
				rounds[name] = append(r, time.Now())
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		ws[name] = watchHB(t, h)
		ws[name].hb.Publish(svcNode(name, 1, "web"))
		time.Sleep(beat / 3)
	}
	for _, a := range ms {
		for _, b := range ms {
			if a.Name == b.Name {
				continue
			}
			if _, ok := ws[a.Name].find(10*time.Second, isKind(Up, b.Name)); !ok {
				t.Fatalf("%s does not see %s up", a.Name, b.Name)
			}
		}
	}
	// into step: at least two nodes sent a round on a peer's beat (nodes
	// started a third of a period apart cannot be in step otherwise)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(beat / 10) {
		n := 0
		for _, w := range ws {
			if w.hb.Stats().BeatsInStep > 0 {
				n++
			}
		}
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes sent a round in step within 10s, want 2", n)
		}
	}
	time.Sleep(2 * beat) // the last one joins (a round is enough with three)
	mu.Lock()
	recording = true
	mu.Unlock()
	time.Sleep(10 * beat) // the window recorded: 10 periods
	mu.Lock()
	recording = false
	defer mu.Unlock()
	const near = 40 * time.Millisecond
	for _, a := range ms {
		if n := len(rounds[a.Name]); n < 8 {
			t.Fatalf("%s sent %d rounds in 10 beat periods: %v", a.Name, n, rounds)
		}
		for _, ta := range rounds[a.Name][1 : len(rounds[a.Name])-1] {
			for _, b := range ms {
				ok := false
				for _, tb := range rounds[b.Name] {
					ok = ok || (ta.Sub(tb) < near && tb.Sub(ta) < near)
				}
				if !ok {
					t.Fatalf("%s's round at %s has no round of %s within %s: not in step\n%v", a.Name, ta.Format("15:04:05.000"), b.Name, near, rounds)
				}
			}
		}
	}
	for name, w := range ws {
		t.Logf("%s: %d rounds in step", name, w.hb.Stats().BeatsInStep)
	}
}

// A round of beats is encoded once for the peers of one link (the same
// frame goes to each, its N newer than any sent before), and each beat of
// a round still refreshes the sender at every peer.
func TestBeatRoundEncodedOnce(t *testing.T) {
	c := newMemCluster(t, 3)
	c.net.Advance(30 * time.Second)
	var mu sync.Mutex
	got := map[string][]byte{}
	c.net.Lose(func(from, to string, b []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		if m, err := decode(b); err == nil && from == "n01" && m.Kind == kindBeat && !m.Probe {
			got[to] = b
		}
		return false
	})
	c.net.Advance(5 * time.Second) // one beat period
	if len(got["n02"]) == 0 || string(got["n02"]) != string(got["n03"]) {
		t.Fatalf("n01's beats of one round differ or are missing:\nto n02 %s\nto n03 %s", got["n02"], got["n03"])
	}
	c.net.Advance(time.Minute)
	c.collect()
	for _, o := range []string{"n02", "n03"} {
		if evs := c.events(o, Down, "n01"); len(evs) != 0 {
			t.Fatalf("%s declared n01 down", o)
		}
	}
}
