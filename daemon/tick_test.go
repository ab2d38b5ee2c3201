package daemon

import (
	"testing"

	"haven/internal/clock"
)

// The load and memory are read at a tick that comes a little before the
// read is due (the guard's renewal, the quorum's ticks), so that the read
// seldom wakes the idle loop by itself.
func TestSysinfoReadAtATickBeforeItsTime(t *testing.T) {
	d := loopDaemon(t)
	d.sysinfo = newSysinfoReader()
	clk := d.clk.(*clock.Fake)
	d.sysinfoAt = clk.Now()
	clk.Advance(sysinfoPeriod - sysinfoEarly/2)
	d.tick()
	if !d.sysinfoAt.Equal(clk.Now()) {
		t.Fatalf("a tick %s after the last read did not read (due every %s)", sysinfoPeriod-sysinfoEarly/2, sysinfoPeriod)
	}
	clk.Advance(sysinfoPeriod - 2*sysinfoEarly)
	d.tick()
	if d.sysinfoAt.Equal(clk.Now()) {
		t.Fatalf("a tick %s after the last read read again", sysinfoPeriod-2*sysinfoEarly)
	}
}
