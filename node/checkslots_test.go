package node

import (
	"testing"
	"time"

	"haven/dataset"
	"haven/node/instsm"
)

// The periodic full checks of instances last checked a few seconds apart
// fall due together, at the start of the slot (a twelfth of the check
// interval) that holds their interval's end: never later than the
// interval, never sooner than a slot less; and every slot start is one.
func TestFullChecksBatched(t *testing.T) {
	c := &Core{cfg: Config{CheckInterval: time.Minute}}
	base := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC) // on a slot start
	var dues []time.Time
	for _, off := range []time.Duration{time.Second, 2500 * time.Millisecond, 4999 * time.Millisecond} {
		inst := &instsm.Instance{Chk: instsm.Checks{LastFull: base.Add(off)}}
		due := c.fullDue(inst)
		if gap := due.Sub(inst.Chk.LastFull); gap > time.Minute || gap <= time.Minute-5*time.Second {
			t.Fatalf("last check at +%s: next due %s later, want within (55s, 60s]", off, gap)
		}
		dues = append(dues, due)
	}
	for _, d := range dues[1:] {
		if !d.Equal(dues[0]) {
			t.Fatalf("checks 1 s to 5 s apart fall due at %v, want one time", dues)
		}
	}
	if want := base.Add(time.Minute); !dues[0].Equal(want) {
		t.Fatalf("due %v, want %v (the slot start)", dues[0], want)
	}
	// on a slot start: a whole interval
	if inst := (&instsm.Instance{Chk: instsm.Checks{LastFull: base}}); !c.fullDue(inst).Equal(base.Add(time.Minute)) {
		t.Fatalf("from a slot start: due %v, want %v", c.fullDue(inst), base.Add(time.Minute))
	}
	// a check interval shorter than the slots' resolution is kept as is
	c.cfg.CheckInterval = 10 * time.Nanosecond
	if inst := (&instsm.Instance{Chk: instsm.Checks{LastFull: base.Add(3)}}); !c.fullDue(inst).Equal(base.Add(13)) {
		t.Fatalf("10ns interval: due %v", c.fullDue(inst))
	}
}

// The checks of an instance's intervals are marked periodic; the one that
// ends an action, and the one a new config or the start-up orders, are
// not: the driver runs those before the periodic ones (a start's check
// does not wait for a batch of periodic checks).
func TestPeriodicChecksMarked(t *testing.T) {
	c := New(Config{Name: "n1", WriteThrough: true, CheckInterval: time.Minute, MonitorInterval: 5 * time.Second}, State{})
	c.install("web")
	c.Ready()
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true, Monitored: true}, t0)
	c.checkNow("web") // the start-up's check
	rd := c.Ready()
	if len(rd.Check) != 1 || rd.Check[0].Periodic {
		t.Fatalf("start-up: checks %+v, want one not periodic", rd.Check)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	c.Ready()
	for _, tc := range []struct {
		after time.Duration
		full  bool
	}{{5 * time.Second, false}, {time.Minute, true}} {
		now := t0.Add(tc.after)
		c.tickChecks(now)
		rd = c.Ready()
		if len(rd.Check) != 1 || !rd.Check[0].Periodic || rd.Check[0].Full != tc.full {
			t.Fatalf("+%s: checks %+v, want one periodic, full %v", tc.after, rd.Check, tc.full)
		}
		c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, now)
		c.Ready()
	}
	c.actionDone("web", "stop", nil, t0.Add(2*time.Minute))
	rd = c.Ready()
	if len(rd.Check) != 1 || rd.Check[0].Periodic || !rd.Check[0].Full {
		t.Fatalf("after an action: checks %+v, want one full, not periodic", rd.Check)
	}
}
