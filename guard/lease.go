package guard

import (
	"fmt"
	"slices"
	"time"
)

// Lease is the guard's state: pure, every call takes now (CLOCK_BOOTTIME
// as a duration since boot; the shell reads it, the tests give it). The
// shell arms its timer at Timer's answer, calls Due when the timer fires,
// and Handle for each request.
type Lease struct {
	armed    bool
	deadline time.Duration
	gen      uint64
	kill     []Target
	last     *Record
}

// Restore sets the last record (read from the record file at the start).
func (l *Lease) Restore(rec *Record) { l.last = rec }

// Timer is when the lease runs out (armed false: nothing is due).
func (l *Lease) Timer() (deadline time.Duration, armed bool) { return l.deadline, l.armed }

// Due reports whether the lease ran out unrenewed at now: the shell must
// act (Fire) before anything else.
func (l *Lease) Due(now time.Duration) bool { return l.armed && now >= l.deadline }

// Fire disarms the lease and hands the kill set to end.
func (l *Lease) Fire() (deadline time.Duration, kill []Target) {
	l.armed = false
	return l.deadline, slices.Clone(l.kill)
}

// Done records what the shell did (Fire's action).
func (l *Lease) Done(rec Record) { l.last = &rec }

// Last is the last record, nil if none.
func (l *Lease) Last() *Record { return l.last }

// Handle applies request r at now. When the lease ran out before it (the
// request and the timer came together, a frozen host resumed) fire is
// set and nothing else is done: the shell acts first, then handles the
// request again, so that no renewal ever revives a lease that ran out.
// exit is set on an exit request while disarmed.
func (l *Lease) Handle(now time.Duration, r Request) (rep Reply, fire, exit bool) {
	if l.Due(now) {
		return Reply{}, true, false
	}
	var err string
	switch r.Op {
	case OpRenew:
		if r.Deadline <= 0 {
			err = "renew without a deadline"
			break
		}
		l.armed, l.deadline = true, time.Duration(r.Deadline)
		if r.SetKill {
			l.kill, l.gen = slices.Clone(r.Kill), r.Gen
		}
	case OpDisarm:
		l.armed = false
	case OpAck:
		if l.last != nil && l.last.ID == r.Fired {
			l.last.Acked = true
		} else {
			err = fmt.Sprintf("no record %q to acknowledge", r.Fired)
		}
	case OpStatus:
	case OpExit:
		if l.armed {
			err = "armed: disarm it first"
		} else {
			exit = true
		}
	default:
		err = fmt.Sprintf("unknown operation %q", r.Op)
	}
	rep = l.State(now)
	rep.Error = err
	return rep, false, exit
}

// State is the lease at now, as a reply.
func (l *Lease) State(now time.Duration) Reply {
	rep := Reply{Version: Version, Armed: l.armed, Now: int64(now), Gen: l.gen, Targets: len(l.kill), Fired: l.last}
	if l.armed {
		rep.Deadline = int64(l.deadline)
		rep.Left = int64(max(l.deadline-now, 0))
	}
	if l.last != nil {
		c := *l.last
		rep.Fired = &c
	}
	return rep
}
