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
//
// PrepareEarly begins the same work sooner, at the first sign that the
// node running the service is lost (its heartbeat silent for two beat
// periods, before hb.timeout declares it down: within is that hb.timeout),
// and UnprepareEarly ends it when that node is heard again; the Prepare of
// the window that follows the loss takes the early work when it is still
// good (see takeEarly for the ip driver's rules), else begins anew.
type Preparer interface {
	Prepare(ctx context.Context)
	Unprepare()
	PrepareEarly(ctx context.Context, within time.Duration)
	UnprepareEarly()
}

// Prepare calls Prepare on every enabled resource that has pre-start work;
// ctx bounds that work (the daemon's: its stop ends it).
func (s *Set) Prepare(ctx context.Context) {
	s.eachPreparer(true, func(p Preparer) { p.Prepare(ctx) })
}

// Unprepare ends the pre-start work of every resource (a start takes what
// it needs of it first).
func (s *Set) Unprepare() {
	s.eachPreparer(false, Preparer.Unprepare)
}

// PrepareEarly calls PrepareEarly on every enabled resource that has
// pre-start work: the node running the service fell silent, and may be
// declared down within hb.timeout (within).
func (s *Set) PrepareEarly(ctx context.Context, within time.Duration) {
	s.eachPreparer(true, func(p Preparer) { p.PrepareEarly(ctx, within) })
}

// UnprepareEarly ends the early work of every resource that no ready
// window took (the silent node was heard again).
func (s *Set) UnprepareEarly() {
	s.eachPreparer(false, Preparer.UnprepareEarly)
}

// HasPreparer reports whether a resource of the set has pre-start work.
func (s *Set) HasPreparer() bool {
	found := false
	s.eachPreparer(true, func(Preparer) { found = true })
	return found
}

func (s *Set) eachPreparer(enabledOnly bool, f func(Preparer)) {
	for _, it := range s.items {
		if p, ok := it.drv.(Preparer); ok && (!enabledOnly || !it.rc.Disable) {
			f(p)
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
//
// A watch begun at the silence of the node running the service (early,
// watchEarly) counts for the start only once the ready window took it
// (takeEarly, at window). Its rules, so that the probe of a failover never
// trusts what it saw while the lost node may still have held the address:
//   - "in use" (a holder answered before the window took it) is never
//     reused: the window probes anew (the lost node may have held the
//     address then and let it go since; a holder still there answers the
//     new probe, and the start refuses);
//   - "free" (no answer since the silence) is reused only by a window that
//     begins within maxAge of the silence (hb.timeout + probe_timeout: the
//     silence that led to this very failover; the down follows the first
//     sign of silence by less than hb.timeout, the slack of probe_timeout
//     and a beat and a half absorbs a loaded daemon). Then the watch ends
//     by itself: an older one is of another silence, and a probe left
//     running for long is not trusted (a device replaced under its socket
//     hears nothing): the window probes anew;
//   - once taken, it is the window's probe: a holder that answers from
//     then on makes the start refuse, as for a watch begun by the window.
type addrWatch struct {
	since  time.Time
	cancel context.CancelFunc
	done   chan struct{}
	// early: begun at the silence (watchEarly); window is when the ready
	// window took it (zero until then), expire ends it at maxAge unless
	// a window took it before. A watch begun by a window has window =
	// since.
	early  bool
	window time.Time
	expire *time.Timer
	// holder, heldAt (when it answered) and err are set before done is
	// closed
	holder string
	heldAt time.Time
	err    error
}

// watchAddr starts probing addr on dev in the background for the ready
// window that begins now.
func watchAddr(ctx context.Context, dev string, addr netip.Addr) *addrWatch {
	w := startWatch(ctx, dev, addr)
	w.window = w.since
	return w
}

// watchEarly starts probing addr on dev in the background before a ready
// window, for at most maxAge unless a window takes the watch.
func watchEarly(ctx context.Context, dev string, addr netip.Addr, maxAge time.Duration) *addrWatch {
	w := startWatch(ctx, dev, addr)
	w.early = true
	w.expire = time.AfterFunc(maxAge, w.cancel)
	return w
}

func startWatch(ctx context.Context, dev string, addr netip.Addr) *addrWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &addrWatch{since: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		holder, err := probeAddr(ctx, dev, addr, watchMax)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		w.holder, w.heldAt, w.err = holder, time.Now(), err
	}()
	return w
}

// ended reports whether the watch has ended (a holder answered, its probe
// failed, it was stopped or expired).
func (w *addrWatch) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// takeEarly is the ready window taking w at its beginning: true when w
// is the window's already, or an early watch still probing with no holder
// heard and not expired (then it becomes the window's probe); false when
// the window must probe anew (see addrWatch).
func (w *addrWatch) takeEarly() bool {
	if !w.early || !w.window.IsZero() {
		return true
	}
	if !w.expire.Stop() || w.ended() {
		return false
	}
	w.window = time.Now()
	return true
}

// untaken reports whether w is an early watch that no window took.
func (w *addrWatch) untaken() bool { return w.early && w.window.IsZero() }

// began says when the probing the start relies on began, for its log.
func (w *addrWatch) began() string {
	if w.early {
		return "its node fell silent"
	}
	return "the ready window began"
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
// one since it began (at once when it already has: a window at least
// probe_timeout long, or an early watch the window took; else after the
// rest). ok is false when the watch cannot tell (its probe failed or
// ended, a holder answered an early watch before the window took it, or
// no window took it): the caller probes as without it.
func (w *addrWatch) result(ctx context.Context, need time.Duration) (holder string, err error, ok bool) {
	if w.untaken() {
		return "", nil, false // no window took it (a start without one)
	}
	ended := func() (string, error, bool) {
		if w.holder != "" && !(w.early && !w.heldAt.After(w.window)) {
			return w.holder, nil, true
		}
		// none, or one that answered before the window took the
		// early watch: "in use" is never reused
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
