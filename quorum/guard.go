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
