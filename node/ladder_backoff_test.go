package node

import (
	"testing"
	"time"

	"haven/dataset"
	"haven/internal/clock"
	"haven/node/instsm"
)

// backoffSpec is ladderSpec with app#main's restart, restart_delay_max
// and restart_window given (restart_delay 1s).
func backoffSpec(restart int, delayMax, window time.Duration) instsm.Spec {
	s := ladderSpec
	s.Resources = []instsm.ResourceSpec{{RID: "ip#vip"}, {RID: "app#main", Monitor: true, Restart: restart,
		RestartDelay: time.Second, RestartDelayMax: delayMax, RestartWindow: window}}
	return s
}

// failAndRestart finds app#main down, and returns how long the ladder
// waits before it orders the restart; the restart then runs and brings
// the resource up. ok is false when the ladder orders no restart (its
// restarts are spent).
func failAndRestart(t *testing.T, c *Core, fc *clock.Fake) (wait time.Duration, ok bool) {
	t.Helper()
	rd := check(t, c, fc, dataset.StatusDown)
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.Restarting {
		return 0, false
	}
	wait = rd.WakeAt.Sub(fc.Now())
	fc.Advance(wait)
	c.pass(fc.Now())
	rd = c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "restart" {
		t.Fatalf("after %s: runs %+v, want the restart of app#main", wait, rd.Run)
	}
	c.actionDone("web", "restart", nil, fc.Now())
	check(t, c, fc, dataset.StatusUp)
	return wait, true
}

// The backoff: each restart counted waits twice the one before, from
// restart_delay, at most restart_delay_max; without restart_delay_max,
// every restart waits restart_delay.
func TestLadderBackoffDoublesUpToTheCap(t *testing.T) {
	for _, tc := range []struct {
		delayMax time.Duration
		want     []time.Duration
	}{
		{0, []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}},
		{5 * time.Second, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
	} {
		fc := clock.NewFake(t0)
		c := startedCoreSpec(t, fc, State{}, backoffSpec(5, tc.delayMax, 0))
		for i, want := range tc.want {
			fc.Advance(5 * time.Second)
			got, ok := failAndRestart(t, c, fc)
			if !ok || got != want {
				t.Fatalf("restart_delay_max %s: restart %d waited %s (ordered %v), want %s", tc.delayMax, i+1, got, ok, want)
			}
		}
	}
}

// The window: with restart_window, a restart older than the window counts
// no more, so a resource that fails again after it has its restart back
// (remaining shows it) and its delay back down; without the window, the
// same failures spend the ladder (the monitor_action, here a give-up for
// want of another node).
func TestLadderWindowGivesRestartsBack(t *testing.T) {
	for _, window := range []time.Duration{0, 30 * time.Second} {
		fc := clock.NewFake(t0)
		c := startedCoreSpec(t, fc, State{}, backoffSpec(2, 10*time.Second, window))
		fc.Advance(5 * time.Second)
		if w, ok := failAndRestart(t, c, fc); !ok || w != time.Second {
			t.Fatalf("window %s: first restart waited %s (ordered %v), want 1s", window, w, ok)
		}
		fc.Advance(10 * time.Second)
		if w, ok := failAndRestart(t, c, fc); !ok || w != 2*time.Second {
			t.Fatalf("window %s: second restart waited %s (ordered %v), want 2s", window, w, ok)
		}
		if n, _ := remaining(c); n != 0 {
			t.Fatalf("window %s: remaining %d after two restarts, want 0", window, n)
		}
		// 30s after the first restart (at +6s), less than the
		// stabilisation time (60s) after the last failure
		fc.Advance(22 * time.Second)
		check(t, c, fc, dataset.StatusUp)
		w, ok := failAndRestart(t, c, fc)
		if window == 0 {
			if ok || c.state.Services["web"].GaveUp == "" {
				t.Fatalf("no window: a third failure restarted (%v), want the ladder spent", ok)
			}
			continue
		}
		if !ok || w != 2*time.Second {
			t.Fatalf("window %s: third failure: restart ordered %v after %s, want one after 2s (one restart counted)", window, ok, w)
		}
		if n, _ := remaining(c); n != 0 {
			t.Fatalf("window %s: remaining %d, want 0 (two restarts within the window)", window, n)
		}
		// the window is durable: a daemon restart counts the same
		c2 := startedCoreSpec(t, fc, c.State().Clone(), backoffSpec(2, 10*time.Second, window))
		if n, _ := remaining(c2); n != 0 {
			t.Fatalf("after a daemon restart: remaining %d, want 0", n)
		}
		fc.Advance(20 * time.Second) // the second restart 44s old, the third 20s
		check(t, c2, fc, dataset.StatusUp)
		if n, _ := remaining(c2); n != 1 {
			t.Fatalf("window %s: remaining %d once the second restart left the window, want 1", window, n)
		}
	}
}

// Restarts counted before restart_window was set carry no time: the window
// does not give them back (the stabilisation time or a reset does).
func TestLadderWindowKeepsUntimedRestarts(t *testing.T) {
	fc := clock.NewFake(t0)
	st := State{Services: map[string]ServiceState{"web": {LocalExpect: dataset.ExpectStarted,
		Restarts: map[string]RestartCount{"app#main": {Spent: 2, FailedAt: t0}}}}}
	c := startedCoreSpec(t, fc, st, backoffSpec(2, 0, 10*time.Second))
	fc.Advance(20 * time.Second)
	check(t, c, fc, dataset.StatusUp)
	if n, _ := remaining(c); n != 0 {
		t.Fatalf("remaining %d, want 0: the window gives back no restart it cannot date", n)
	}
}
