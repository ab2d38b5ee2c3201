// Package clock is the time source of the shell. The pure core never reads a
// clock: it gets `now` in its snapshot. The shell holds a Clock so that tests
// can drive time with Fake.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is what the shell uses to read time and arm timers.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
	// NewTimer and NewTicker arm a timer and a ticker of the clock.
	NewTimer(d time.Duration) Timer
	NewTicker(d time.Duration) Ticker
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a manually advanced clock, safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	timers  []*fakeTimer // NewTimer, NewTicker (timer.go)
	// suspended is the host's suspended time (suspend.go)
	suspended time.Duration
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a fake clock set at start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := f.now.Add(d)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, waiter{at: at, ch: ch})
	return ch
}

// Waiting is the number of After calls not yet due: a test's barrier (a
// goroutine waits on the clock, so an Advance now reaches it).
func (f *Fake) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// Advance moves the clock forward by d and fires the timers that are due,
// in time order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	var keep []waiter
	for _, w := range f.waiters {
		if !w.at.After(now) {
			w.ch <- w.at
		} else {
			keep = append(keep, w)
		}
	}
	f.waiters = keep
	f.mu.Unlock()
	f.fire()
}

// Set moves the clock to t (never backwards) and fires due timers.
func (f *Fake) Set(t time.Time) {
	d := t.Sub(f.Now())
	if d > 0 {
		f.Advance(d)
	}
}
