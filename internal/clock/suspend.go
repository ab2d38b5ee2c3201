package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

// A Suspender tells how long the host was suspended: CLOCK_MONOTONIC (the
// clock of time.Now's monotonic reading and of the runtime's timers) does
// not count a suspend, CLOCK_BOOTTIME does. A loop that measures its own
// gaps with time.Now sees none across a suspend; it adds what Suspended
// grew by.
type Suspender interface {
	// Suspended is the total time the host spent suspended since it
	// booted (CLOCK_BOOTTIME - CLOCK_MONOTONIC).
	Suspended() time.Duration
}

// Suspended is CLOCK_BOOTTIME - CLOCK_MONOTONIC, read one after the other
// (a jitter of a few microseconds).
func (Real) Suspended() time.Duration {
	var boot, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil {
		return 0
	}
	return max(0, time.Duration(boot.Nano()-mono.Nano()))
}

// Suspend models a suspend of the host of d as CLOCK_MONOTONIC sees it:
// Now does not move, Suspended grows by d.
func (f *Fake) Suspend(d time.Duration) {
	f.mu.Lock()
	f.suspended += d
	f.mu.Unlock()
}

// Suspended is the total of the Suspend calls.
func (f *Fake) Suspended() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.suspended
}
