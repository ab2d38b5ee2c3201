package node

import (
	"testing"
	"time"

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
