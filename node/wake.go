package node

import (
	"time"

	"haven/dataset"
)

// NextTick returns when Tick has work to do next, so that an idle driver
// sleeps until then instead of ticking at a fixed period. It is now+poll
// while a rule of Tick reads the clock on every call: the quorum (its stall
// watch counts the time between ticks, its gates and backoffs), the rejoin
// grace, a peer in its maintenance grace, config edits waiting for their
// confirmations, a failing state write (each tick retries it). Otherwise it
// is the first periodic check due (now when an instance may be due and the
// next check is not known yet) or the safety-net decision pass
// (fullPassPeriod after the last pass), whichever comes first. An input
// (a heartbeat event, an API call, the end of an action) may bring it
// earlier: the driver asks again after each one.
func (c *Core) NextTick(now time.Time, poll time.Duration) time.Time {
	if c.WatchesClock() {
		return now.Add(poll)
	}
	t := c.lastStep.Add(fullPassPeriod)
	if due, ok := c.nextCheckDue(now); ok && due.Before(t) {
		t = due
	}
	if r := c.vb.RetryAt(); !r.IsZero() && r.Before(t) {
		t = r // versions refused as ahead of the clock become acceptable
	}
	return t
}

// WatchesClock reports whether a rule of Tick reads the clock on every
// call (NextTick then polls): the quorum, the rejoin grace, a peer in its
// maintenance grace, config edits waiting for their confirmations, a
// failing state write. Such a rule may decide at any tick, with no other
// input.
func (c *Core) WatchesClock() bool {
	if c.quorumOn() || c.monitor == dataset.NodeRejoin || c.cd.Waiting() || c.ps.Failing() != nil || c.ConfigMergesLeft() {
		return true
	}
	for _, name := range c.pv.Pnames {
		if c.pv.Peers[name].Status == dataset.NodeStMaint {
			return true
		}
	}
	return false
}

// nextCheckDue is when tickChecks may start a periodic check: the known
// next check, or now when one may be due and none is known (tickChecks
// computes it), and no time when no instance can be checked (none local
// and runnable, or every one busy or checking: their end brings the next
// check back, an input after which the driver asks again).
func (c *Core) nextCheckDue(now time.Time) (time.Time, bool) {
	if !c.nextCheck.IsZero() {
		return c.nextCheck, true
	}
	for _, inst := range c.ilist {
		if inst.Act.Busy == "" && !inst.Chk.Checking && inst.Local && inst.Spec.Runnable {
			return now, true
		}
	}
	return time.Time{}, false
}
