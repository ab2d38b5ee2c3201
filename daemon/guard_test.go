package daemon

import (
	"context"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"testing"
	"time"

	"haven/internal/paths"

	"haven/config"
	"haven/guard"
)

// The config's guard numbers are the guard's own: the peers count
// config.GuardAct after a lease, the guard's action is bounded by
// guard.ActBound.
func TestGuardNumbersAgree(t *testing.T) {
	if config.GuardAct != guard.ActBound {
		t.Fatalf("config.GuardAct %s, guard.ActBound %s", config.GuardAct, guard.ActBound)
	}
}

// A renewal carries something only when it moves the lease's end: any
// earlier end beyond the clocks' jitter, a later one by more than a few
// milliseconds, or a guard that holds no lease.
func TestGuardCarriesNothingWithTheSameEnd(t *testing.T) {
	const end = int64(100 * time.Second)
	held := guard.Reply{Armed: true, Deadline: end}
	for _, c := range []struct {
		held guard.Reply
		want int64
		ok   bool // carries something
	}{
		{held, end, false},
		{held, end + int64(4*time.Millisecond), false},
		{held, end - int64(500*time.Microsecond), false},
		{held, end + int64(6*time.Millisecond), true},
		{held, end - int64(2*time.Millisecond), true},
		{guard.Reply{}, end, true},
		{guard.Reply{Armed: true, Deadline: end, Error: "refused"}, end, true},
	} {
		if got := guardCarries(c.held, c.want, 90*time.Second); (got != "") != c.ok {
			t.Errorf("held %+v, renewal to %s: carries %q, want carries=%v", c.held, time.Duration(c.want), got, c.ok)
		}
	}
}

// leaseRun plays the loop's looks at the guard's lease (guardNextLook,
// guardCarries) against the guard's own lease (guard.Lease) for span, at
// 1 ms steps: end(now) is the lease's end the core gives at now, late(i)
// how late the i-th look comes after it was due. It returns the renewals
// sent and the looks, and an error when the lease ran out.
func leaseRun(lease, slack, span time.Duration, end func(now time.Duration) time.Duration,
	late func(i int) time.Duration) (renewals, looks int, err error) {
	r := leaseRunWith(lease, slack, span, end, late, false)
	return r.renewals, r.looks, r.err
}

// leaseStats is what leaseRunWith saw: the renewals sent, the looks, the
// longest time from a move of the core's end to the renewal that gave it
// to the guard, and the first error (the lease ran out, or the guard held
// an end later than the core's).
type leaseStats struct {
	renewals, looks int
	lag             time.Duration
	err             error
}

// leaseRunWith is leaseRun; with acks, a move of the core's end (a newer
// acknowledgement, in anchoredEnd) is also signalled to the loop as the
// heartbeat's AckedNotify does, and the loop looks late(i) after it
// (guardLooks). At every step the end the guard holds is checked against
// the core's: never later than it (beyond guardSameLater).
func leaseRunWith(lease, slack, span time.Duration, end func(now time.Duration) time.Duration,
	late func(i int) time.Duration, acks bool) (st leaseStats) {
	var l guard.Lease
	var held guard.Reply
	start := time.Hour // CLOCK_BOOTTIME of the first look
	look := start
	var lastEnd, movedAt time.Duration
	ackNew := false
	for now := start; now < start+span; now += time.Millisecond {
		if l.Due(now) {
			st.err = fmt.Errorf("the lease ran out at +%s (held end +%s)", now-start, time.Duration(held.Deadline)-start)
			return st
		}
		e := end(now)
		if held.Armed && time.Duration(held.Deadline) > e+guardSameLater {
			st.err = fmt.Errorf("at +%s the guard holds +%s, later than the core's end +%s", now-start, time.Duration(held.Deadline)-start, e-start)
			return st
		}
		if e != lastEnd {
			lastEnd, movedAt = e, now
			ackNew = acks
		}
		at := now - late(st.looks) // the loop runs late(i) behind what wakes it
		if !guardLooks(at-look, ackNew && at >= movedAt, true, false, false) {
			continue
		}
		st.looks++
		ackNew = false
		req := guard.Request{Op: guard.OpRenew, Deadline: int64(e)}
		next := guardNextLook(now, req, held, lease, slack)
		if guardCarries(held, req.Deadline, now) != "" {
			rep, _, _ := l.Handle(now, req)
			st.renewals++
			held = rep
			if held.Armed && now > start {
				st.lag = max(st.lag, now-movedAt)
			}
		}
		look = next
	}
	return st
}

// With the quorum off the lease is now + L: renewed once what is left of
// it fell to L - D, it never runs out with the loop up to a second late,
// and it is renewed about every D, not at every look.
func TestGuardLeaseOfNowRenewedEverySlack(t *testing.T) {
	lease, slack, span := 12*time.Second, config.GuardSlack, 10*time.Minute
	late := func(i int) time.Duration { return time.Duration(i%7) * 150 * time.Millisecond } // 0 to 900 ms
	renewals, looks, err := leaseRun(lease, slack, span, func(now time.Duration) time.Duration { return now + lease }, late)
	if err != nil {
		t.Fatal(err)
	}
	if most := int(span / slack); renewals > most+1 || renewals < int(span/(slack+time.Second)) {
		t.Fatalf("%d renewals (%d looks) in %s, want about one every %s (at most %d)", renewals, looks, span, slack, most+1)
	}
	// a lease of 2 s (the least) is renewed at half its length
	short := config.GuardMinLease
	if _, _, err := leaseRun(short, min(slack, short/2), span, func(now time.Duration) time.Duration { return now + short },
		func(int) time.Duration { return 100 * time.Millisecond }); err != nil {
		t.Fatalf("lease %s: %v", short, err)
	}
}

// anchoredEnd is the end of a lease anchored on this node's beats (one
// every beat, from start) as acknowledged by a peer beating every beat
// from start+phase: each of its beats acknowledges this node's newest
// beat it heard (a one-way delay of delay) and reaches this node delay
// later. Before the first acknowledgement, the lease of the start.
func anchoredEnd(lease, beat, phase, delay time.Duration) func(now time.Duration) time.Duration {
	start := time.Hour
	return func(now time.Duration) time.Duration {
		t := now - start - delay - phase // the peer's newest beat that arrived, sent at phase + k*beat
		if t < 0 {
			return start + lease
		}
		u := phase + t/beat*beat
		s := (u - delay) / beat * beat // this node's newest beat the peer heard by u
		return start + s + lease
	}
}

// With the quorum on the lease is anchored on the acknowledged beats: its
// end moves once per newer acknowledgement, the loop looks every R, and
// only a look that finds a newer acknowledgement renews. At the least
// lease the config accepts (two beat periods plus R; here 10 ms more for
// the delays and the loop's lateness) it never runs out, whatever the
// peer's phase; a lease 50 ms shorter does, the peer's beats coming just
// before this node's (the bound is the one the config checks).
func TestGuardAnchoredLeaseRenewedOncePerAcknowledgement(t *testing.T) {
	beat, delay, span := 5*time.Second, time.Millisecond, 10*time.Minute
	late := func(i int) time.Duration { return time.Duration(i%6) * time.Millisecond } // 0 to 5 ms
	lease := 2*beat + config.GuardRenewEvery + 10*time.Millisecond
	worst := beat - 2*delay
	for _, phase := range []time.Duration{2 * delay, beat / 3, beat / 2, beat - 100*time.Millisecond, worst} {
		renewals, looks, err := leaseRun(lease, config.GuardRenewEvery, span, anchoredEnd(lease, beat, phase, delay), late)
		if err != nil {
			t.Fatalf("phase %s: %v", phase, err)
		}
		if acks := int(span / beat); renewals > acks+1 {
			t.Errorf("phase %s: %d renewals for %d newer acknowledgements (%d looks): renewals that carried nothing were sent", phase, renewals, acks, looks)
		}
	}
	short := 2*beat + config.GuardRenewEvery - 50*time.Millisecond
	if _, _, err := leaseRun(short, config.GuardRenewEvery, span, anchoredEnd(short, beat, worst, delay), late); err == nil {
		t.Fatalf("lease %s (under two beats plus R): never ran out; the test does not reach the bound", short)
	}
}

// With the acknowledgements signalled (the heartbeat's AckedNotify) the
// look at the anchored lease rides the peers' beats: each newer
// acknowledgement is renewed as soon as the loop runs after its arrival
// (here up to 5 ms), where the timer alone took up to R; the end the
// guard holds is never later than the core's, there are no more
// renewals than acknowledgements, the timer's look every R stays the
// bound (the acknowledgements cut off, the lease still runs out), and at
// the least lease the config accepts it never runs out, whatever the
// peer's phase; nor at one R shorter, which the timer alone did not hold.
func TestGuardAnchoredLeaseLookedAtOnTheAcknowledgement(t *testing.T) {
	beat, delay, span := 5*time.Second, time.Millisecond, 10*time.Minute
	late := func(i int) time.Duration { return time.Duration(i%6) * time.Millisecond } // 0 to 5 ms
	least := 2*beat + config.GuardRenewEvery + 10*time.Millisecond
	worst := beat - 2*delay
	for _, lease := range []time.Duration{least, least - config.GuardRenewEvery + 50*time.Millisecond} {
		for _, phase := range []time.Duration{2 * delay, beat / 3, beat / 2, beat - 100*time.Millisecond, worst} {
			st := leaseRunWith(lease, config.GuardRenewEvery, span, anchoredEnd(lease, beat, phase, delay), late, true)
			if st.err != nil {
				t.Fatalf("lease %s, phase %s: %v", lease, phase, st.err)
			}
			if st.lag > 5*time.Millisecond {
				t.Errorf("lease %s, phase %s: a newer acknowledgement renewed %s after its arrival, want at the loop's next run (5 ms)", lease, phase, st.lag)
			}
			if acks := int(span / beat); st.renewals > acks+1 {
				t.Errorf("lease %s, phase %s: %d renewals for %d newer acknowledgements (%d looks)", lease, phase, st.renewals, acks, st.looks)
			}
			if most := int(span/config.GuardRenewEvery) + int(span/beat) + 1; st.looks > most {
				t.Errorf("lease %s, phase %s: %d looks, want at most one every R and one per acknowledgement (%d)", lease, phase, st.looks, most)
			}
		}
	}
	// the peer cut off: no acknowledgement after the first minute, the
	// lease runs out L after the last one acknowledged, no later
	cut := time.Hour + time.Minute
	lease := least
	acked := anchoredEnd(lease, beat, beat/2, delay)
	st := leaseRunWith(lease, config.GuardRenewEvery, span, func(now time.Duration) time.Duration { return acked(min(now, cut)) }, late, true)
	if st.err == nil || st.err.Error() != fmt.Sprintf("the lease ran out at +%s (held end +%s)", acked(cut)-time.Hour, acked(cut)-time.Hour) {
		t.Fatalf("acknowledgements cut at +1m: %v, want the lease run out at its end +%s", st.err, acked(cut)-time.Hour)
	}
}

// The loop's share of the guard against a real guard (guard.Run, in this
// process), quorum off, CLOCK_BOOTTIME played by the test: over a minute
// of passes every 100 ms, the lease is renewed once what is left of it
// fell to L - D, about every D, never at a pass that would not move its
// end, and what is left of it never falls under L - D less a pass.
func TestGuardStepRenewsOnlyWhenTheEndMoves(t *testing.T) {
	d := pairDaemon(t, paths.New(filepath.Join(t.TempDir(), "r")))
	dir := t.TempDir()
	cfg := guard.Config{Socket: filepath.Join(dir, "guard.sock"), Lock: filepath.Join(dir, "guard.lock"),
		Record: filepath.Join(dir, "guard.json"), Log: log.New(io.Discard, "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- guard.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	watch := guard.NewClient(cfg.Socket, time.Second)
	t.Cleanup(watch.Close)
	runUntil(t, d, "the guard's socket", func() bool {
		_, err := watch.Do(guard.Request{Op: guard.OpStatus})
		return err == nil
	})

	g := &d.gl
	boot := guard.BootNow()
	g.on, g.lease, g.boot = true, 12*time.Second, func() time.Duration { return boot }
	g.client = guard.NewClient(cfg.Socket, time.Second)
	t.Cleanup(g.client.Close)
	t.Cleanup(d.stopGuardWorker)
	d.guardBegin()
	if !g.rep.Armed {
		t.Fatalf("not armed after the first renewal: %+v", g.rep)
	}
	first := g.seq
	const pass, span = 100 * time.Millisecond, time.Minute
	for start := boot; boot < start+span; {
		boot += pass
		d.guardStep()
		runUntil(t, d, "the guard's answer", func() bool { return !g.inflight })
		rep, err := watch.Do(guard.Request{Op: guard.OpStatus})
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Duration(rep.Deadline) - boot; !rep.Armed || left < g.lease-config.GuardSlack-pass {
			t.Fatalf("at +%s: the guard holds %s of lease (armed %v), want at least L - D less a pass", boot-start, left, rep.Armed)
		}
	}
	if n, most := g.seq-first, uint64(span/config.GuardSlack); n > most || n < most-1 {
		t.Fatalf("%d renewals in %s of passes every %s, want one every %s (%d)", n, span, pass, config.GuardSlack, most)
	}
}
