package resource

import (
	"context"
	"net/netip"
	"time"
)

// Preparer is a driver with pre-start work that may run before its start
// is ordered: the daemon calls Prepare when the instance enters its ready
// window (ready_period, or the wait for the peers' acks of
// node.ready_fast_ack), so that the start that may follow the window finds
// the work done, and Unprepare when the window ends without a start. The
// ip driver probes its address during the window (watchAddr).
type Preparer interface {
	Prepare(ctx context.Context)
	Unprepare()
}

// Prepare calls Prepare on every enabled resource that has pre-start work;
// ctx bounds that work (the daemon's: its stop ends it).
func (s *Set) Prepare(ctx context.Context) {
	for _, it := range s.items {
		if p, ok := it.drv.(Preparer); ok && !it.rc.Disable {
			p.Prepare(ctx)
		}
	}
}

// Unprepare ends the pre-start work of every resource (a start takes what
// it needs of it first).
func (s *Set) Unprepare() {
	for _, it := range s.items {
		if p, ok := it.drv.(Preparer); ok {
			p.Unprepare()
		}
	}
}

// watchMax bounds a probe in the background: a window longer than that (or
// a watch nobody ended) stops probing, and the start probes again for
// probe_timeout, as without a watch.
const watchMax = 10 * time.Minute

// addrWatch is the duplicate-address probe (probeAddr: a probe every
// probeEvery) run continuously in the background from since until a holder
// answers, the probe fails, or stop.
type addrWatch struct {
	since  time.Time
	cancel context.CancelFunc
	done   chan struct{}
	// holder and err are set before done is closed
	holder string
	err    error
}

// watchAddr starts probing addr on dev in the background.
func watchAddr(ctx context.Context, dev string, addr netip.Addr) *addrWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &addrWatch{since: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		holder, err := probeAddr(ctx, dev, addr, watchMax)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		w.holder, w.err = holder, err
	}()
	return w
}

// stop ends the watch (nil: none) without waiting: its probe sees it
// within probeEvery (the daemon's loop calls it, and a start does not
// wait for it).
func (w *addrWatch) stop() {
	if w != nil {
		w.cancel()
	}
}

// result is the answer of the watch for a start that needs need (the
// probe_timeout) of probing without an answer: a holder as soon as one
// answered (whenever in the window), "" once the watch has run need without
// one (at once when it already has: a window at least probe_timeout long;
// else after the rest). ok is false when the watch cannot tell (its probe
// failed or ended): the caller probes as without it.
func (w *addrWatch) result(ctx context.Context, need time.Duration) (holder string, err error, ok bool) {
	ended := func() (string, error, bool) {
		if w.holder != "" {
			return w.holder, nil, true
		}
		return "", nil, false
	}
	select {
	case <-w.done:
		return ended()
	default:
	}
	left := time.Until(w.since.Add(need))
	if left <= 0 {
		return "", nil, true
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-w.done:
		return ended()
	case <-t.C:
		select {
		case <-w.done: // an answer at the same instant wins
			return ended()
		default:
		}
		return "", nil, true
	case <-ctx.Done():
		return "", ctx.Err(), true
	}
}
