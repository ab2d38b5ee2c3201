package quorum

import "time"

// The node guard (package guard) ends a node's failover services when its
// daemon stops renewing the guard's lease: at most the lease after the
// last renewal, and the guard's action takes at most its bound (the
// "act"). A daemon renews only while its node may run its services: it
// stops at once when it lost its vote. So the survivors count, for a lost
// peer whose guard was armed (its published data says so, with its lease
// and act), GuardStop after it lost its vote instead of its stop budget
// (docs/behaviour.md 3.1).

// GuardStop is how long after a node's last renewal its guard has
// certainly ended its services: the lease, the guard's act, and the
// margin of two clocks (the rate bound over both, and LeaseMargin for
// the scheduling of the guard's timer and of the survivor's).
func GuardStop(lease, act time.Duration) time.Duration {
	return lease + act + LeaseMargin + time.Duration(2*ClockRateBound*float64(lease+act))
}

// GuardMaintenanceLease is the lease a daemon that stops for maintenance
// (nodemgr daemon stop) leaves its guard: the guard ends its services
// before the peers, counting maintenance_grace_period from their receipt
// of its last data (sent after the lease was set), take them over.
// Negative or small when the grace is too short (the config refuses it).
func GuardMaintenanceLease(grace, act time.Duration) time.Duration {
	return grace - act - LeaseMargin - time.Duration(2*ClockRateBound*float64(grace))
}

// A node whose daemon anchors its lease on its acknowledged beats
// (docs/behaviour.md 3.1) never lets its guard's lease run past a + lease,
// a the send time of a message of its that a member acknowledged (and
// counted as heard when it arrived, so no earlier than a), for enough
// members to make a quorum with the plain arbitrators' weight, or past the
// end of a one-vote arbitrator's lease it counts on instead. A member
// that acknowledged a declares the node down no earlier than a + its
// hb.timeout; the survivors' gate starts no earlier than that member's
// declaration.

// GuardAfterHeard is how long after the survivors' gate started (a
// member that acknowledged the lost node's anchor declared it down, at
// least hbTimeout after the anchor was sent) the lost node's guard has
// certainly ended its services: GuardStop less that hb.timeout, itself
// shortened by the rate bound of the member's clock. Never negative.
func GuardAfterHeard(lease, act, hbTimeout time.Duration) time.Duration {
	return max(0, GuardStop(lease, act)-hbTimeout+time.Duration(2*ClockRateBound*float64(hbTimeout)))
}

// GuardBeforeGrant is how long before the end of a node's own estimate
// of a one-vote arbitrator's lease (NodeLeaseEnd) its guard's lease, when
// anchored on that arbitrator lease, ends: the guard's act, the margin of
// its timer and the rate bound of the clocks over a lease and an act. The
// guard has then ended the node's services by that estimate's end, so
// before the arbitrator can grant another side alone: the survivors wait
// nothing more after such a grant.
func GuardBeforeGrant(lease, act time.Duration) time.Duration {
	return act + LeaseMargin + time.Duration(2*ClockRateBound*float64(lease+act))
}
