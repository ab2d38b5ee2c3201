package clock

import (
	"sort"
	"time"
)

// Timer is a Clock's one-shot timer (time.Timer's methods).
type Timer interface {
	// C receives the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; false if it already fired or
	// was stopped.
	Stop() bool
	// Reset arms the timer again to fire after d; false if it had fired
	// or was stopped.
	Reset(d time.Duration) bool
}

// Ticker is a Clock's periodic ticker (time.Ticker's methods): a tick
// not received yet when the next one is due is dropped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	Reset(d time.Duration)
}

// Wall is the wall clock: what the runtime compares socket deadlines
// with, and what measures the CPU time a piece of work takes, whatever
// clock the caller runs on.
var Wall Clock = Real{}

// Since is the time elapsed on clk since t.
func Since(clk Clock, t time.Time) time.Duration { return clk.Now().Sub(t) }

func (Real) NewTimer(d time.Duration) Timer   { return realTimer{time.NewTimer(d)} }
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

// StdTicker is a time.Ticker of the wall clock, for the libraries whose
// clock interface wants one (zap).
func StdTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

// fakeTimer is a timer (period 0) or a ticker of a Fake clock.
type fakeTimer struct {
	f      *Fake
	ch     chan time.Time
	at     time.Time
	period time.Duration
	armed  bool
}

// NewTimer returns a timer of the fake clock: it fires when Advance
// passes now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// NewTicker returns a ticker of the fake clock: it ticks every d of
// Advance (a tick not received is dropped).
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1), period: d}
	t.Reset(d)
	return fakeTicker{t}
}

type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time   { return k.t.ch }
func (k fakeTicker) Stop()                 { k.t.Stop() }
func (k fakeTicker) Reset(d time.Duration) { k.t.Reset(d) }

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.armed
	t.armed = false
	t.f.timers = remove(t.f.timers, t)
	t.drain()
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	if t.period > 0 {
		t.period = d
	}
	t.f.mu.Lock()
	was := t.armed
	t.f.timers = remove(t.f.timers, t)
	t.drain()
	t.at, t.armed = t.f.now.Add(d), true
	t.f.timers = append(t.f.timers, t)
	t.f.mu.Unlock()
	t.f.fire()
	return was
}

// drain drops a tick sent and not received: after Stop or Reset no
// stale tick comes (as time.Timer's since Go 1.23).
func (t *fakeTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}

func remove(ts []*fakeTimer, t *fakeTimer) []*fakeTimer {
	out := ts[:0]
	for _, x := range ts {
		if x != t {
			out = append(out, x)
		}
	}
	return out
}

// fire sends the ticks of the timers due at the fake clock's now, in time
// order; a ticker is armed again for its next period (the ticks it
// missed are dropped).
func (f *Fake) fire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	keep := f.timers[:0]
	for _, t := range f.timers {
		if t.at.After(f.now) {
			keep = append(keep, t)
			continue
		}
		select {
		case t.ch <- t.at:
		default: // not received yet: dropped, as time.Ticker does
		}
		if t.period > 0 {
			for !t.at.After(f.now) {
				t.at = t.at.Add(t.period)
			}
			keep = append(keep, t)
			continue
		}
		t.armed = false
	}
	f.timers = keep
}
