package disk

import (
	"strings"
	"testing"
	"time"
)

// What a stalled slot proves (docs/operations.md, "SBD-style fencing"):
// that the target stopped writing, nothing about its services, unless the
// target stops by itself once it lost the disk and the majority. The tests
// drive the rounds on the fake clock of the attack bed.

// stallEnd fences n2 from d1 with o while only d1 runs (n2 halted), and
// returns how the fence ended within 20 periods (ok false: not ended).
func stallEnd(t *testing.T, b *attackBed, d1 *Disk, o FenceOpts) (fenceResult, bool) {
	t.Helper()
	res := fenceWith(t, d1, "n2", o)
	for range 20 {
		b.period(d1)
		if r, ok := ended(t, res); ok {
			return r, true
		}
	}
	return fenceResult{}, false
}

// TestDiskStallOfUnguardedTargetProvesNothing: n2's beats say it does not
// stop by itself without the disk (split_action disabled): its slot stops
// advancing (it cannot write the disk, or it is gone: the fencer cannot
// tell) and the fence is never counted done by the stall, however long;
// the fence says why. A target whose beats say it stops by itself is
// counted fenced after the wait, and the end says whether its watchdog is
// armed.
func TestDiskStallOfUnguardedTargetProvesNothing(t *testing.T) {
	for _, tc := range []struct {
		guard byte
		want  string // "" never ends
	}{
		{0, ""},
		{GuardWatchdog, ""},
		{GuardStops, "it stops by itself without the disk, its beats say; it has no watchdog"},
		{GuardStops | GuardWatchdog, "its watchdog is armed"},
	} {
		b := newAttackBed(t)
		d1 := b.disk("n1", 10, nil)
		d2 := b.disk("n2", 20, func(c *Config) { c.Guard = tc.guard })
		for range 4 {
			b.period(d1, d2)
		}
		r, ok := stallEnd(t, b, d1, FenceOpts{Wait: 3 * time.Second})
		switch {
		case tc.want == "" && ok:
			t.Fatalf("guard %d: the fence of a target that does not stop by itself ended by the stall: %+v", tc.guard, r)
		case tc.want == "":
			d1.mu.Lock()
			why := d1.fenceWaitLocked(d1.fences["n2"])
			d1.mu.Unlock()
			if !strings.Contains(why, "does not stop by itself without the disk") || !strings.Contains(why, "proves nothing") {
				t.Fatalf("guard %d: the fence waits for %q", tc.guard, why)
			}
		case !ok || r.err != nil || !strings.Contains(r.how, "has not advanced") || !strings.Contains(r.how, tc.want):
			t.Fatalf("guard %d: fence %+v (ended %v), want done by the stall, %q", tc.guard, r, ok, tc.want)
		}
	}
}

// TestDiskFenceAimedAtTheNetworkRun: n2 stopped its daemon on purpose (the
// "stopped" block of run 19), started again as run 20 (heard on the
// network) and died before the fencer read any block of run 20. The fence
// is aimed at run 20: the block of run 19 says nothing of it (neither
// "stopped on purpose" nor a guard), and the stall counts only when n2's
// data over the network says it stops by itself. A network run older than
// the disk's newest changes nothing.
func TestDiskFenceAimedAtTheNetworkRun(t *testing.T) {
	setup := func(t *testing.T) (*attackBed, *Disk) {
		b := newAttackBed(t)
		d1 := b.disk("n1", 10, nil)
		b.stoppedRun(d1, 4)
		b.period(d1)
		if p, _ := d1.Peer("n2"); p.Run != 19 {
			t.Fatalf("n1 reads n2's run %d, want 19", p.Run)
		}
		return b, d1
	}
	t.Run("stops", func(t *testing.T) {
		b, d1 := setup(t)
		r, ok := stallEnd(t, b, d1, FenceOpts{Wait: 3 * time.Second, Run: 20, Stops: true})
		if !ok || r.err != nil || !strings.Contains(r.how, "no block of its run 20 read") {
			t.Fatalf("fence %+v (ended %v): want done by the stall of run 20, by n2's data over the network", r, ok)
		}
	})
	t.Run("announced", func(t *testing.T) {
		b, d1 := setup(t)
		fenceWith(t, d1, "n2", FenceOpts{Wait: time.Hour, Run: 20})
		b.period(d1)
		bt, err := d1.keys.DecodeBeat(b.copyBlock(BeatOffset(0)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(bt.Fences) != 1 || bt.Fences[0].Run != 20 {
			t.Fatalf("n1's beat announces %+v, want the fence of n2's run 20", bt.Fences)
		}
	})
	t.Run("unknown guard", func(t *testing.T) {
		b, d1 := setup(t)
		r, ok := stallEnd(t, b, d1, FenceOpts{Wait: 3 * time.Second, Run: 20})
		if ok {
			t.Fatalf("fence %+v: ended, although nothing says run 20 stops by itself", r)
		}
		d1.mu.Lock()
		why := d1.fenceWaitLocked(d1.fences["n2"])
		d1.mu.Unlock()
		if !strings.Contains(why, "no block of its run 20 was read") {
			t.Fatalf("the fence waits for %q", why)
		}
	})
	t.Run("older network run", func(t *testing.T) {
		b, d1 := setup(t)
		r, ok := stallEnd(t, b, d1, FenceOpts{Wait: 3 * time.Second, Run: 18, Stops: true})
		if !ok || r.err == nil || !strings.Contains(r.err.Error(), "stopped on purpose") {
			t.Fatalf("fence %+v (ended %v): want refused, run 19 (the newest known) stopped on purpose", r, ok)
		}
	})
}
