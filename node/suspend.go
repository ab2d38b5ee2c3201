package node

import "time"

// resume: the host was suspended for slept, which now does not count (the
// driver's clock is CLOCK_MONOTONIC's; it reads the suspend from
// CLOCK_BOOTTIME). The quorum's stall check counts it: a host suspended
// for longer than hb.timeout may have been declared down and its services
// taken over, and votes as if alone, as after a pause.
func (c *Core) resume(slept time.Duration, now time.Time) {
	if !c.quorumOn() || slept <= 0 {
		return
	}
	c.q.Slept += slept
	c.updateQuorum(now)
}
