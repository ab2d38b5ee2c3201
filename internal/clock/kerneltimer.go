package clock

import (
	"errors"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A ClosableTimer is a Timer that holds a resource until Close.
type ClosableTimer interface {
	Timer
	// Close stops the timer for good and releases it.
	Close()
}

// NewKernelTimer returns a one-shot timer of clk armed to fire after d.
// The wall clock's waits in a kernel timer (timerfd) that the runtime's
// poller watches, as NewSleeper's does: a runtime timer wakes the
// runtime's monitor thread (sysmon) twice each time it fires, on top of
// the thread that runs it, and an idle daemon's loop fires one every few
// seconds. Reset and Stop are system calls that wake no one. Other
// clocks (Fake) give their own timer.
//
// A value that the timer sent before a Reset or Stop may still be
// received after it (time.Timer's old rule): its receiver must take an
// early value as harmless.
func NewKernelTimer(clk Clock, d time.Duration) ClosableTimer {
	if _, ok := clk.(Real); ok {
		if s, err := newKernelSleeper(); err == nil {
			t := &kernelTimer{s: s, c: make(chan time.Time, 1)}
			go t.run()
			t.Reset(d)
			return t
		}
	}
	return closableTimer{clk.NewTimer(d)}
}

type closableTimer struct{ Timer }

func (t closableTimer) Close() { t.Stop() }

// kernelTimer is a timerfd read by a goroutine of its own: it sends the
// time on c when the timer expires.
type kernelTimer struct {
	s     *kernelSleeper
	c     chan time.Time
	armed atomic.Bool
}

func (t *kernelTimer) run() {
	for {
		// parks in the poller until the timer expires; a Reset or
		// Stop before that forgets the expiration (read finds none)
		if err := t.s.rc.Read(t.s.read); err != nil {
			if !errors.Is(err, os.ErrClosed) {
				time.Sleep(time.Millisecond) // not expected: never spin
				continue
			}
			return
		}
		t.armed.Store(false)
		select {
		case t.c <- time.Now():
		default: // one not received yet: it stands for this one
		}
	}
}

func (t *kernelTimer) C() <-chan time.Time { return t.c }

// Reset arms the timer to fire after d (at least 1 ns from now).
func (t *kernelTimer) Reset(d time.Duration) bool {
	was := t.armed.Swap(true)
	t.s.arm(max(d, 1))
	return was
}

// Stop disarms the timer.
func (t *kernelTimer) Stop() bool {
	was := t.armed.Swap(false)
	var off unix.ItimerSpec // zero: disarmed
	_ = t.s.rc.Control(func(fd uintptr) {
		unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&off)), 0, 0, 0)
	})
	return was
}

func (t *kernelTimer) Close() {
	t.Stop()
	t.s.Close()
}
