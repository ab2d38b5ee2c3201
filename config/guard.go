package config

import (
	"fmt"
	"time"

	"haven/quorum"
)

// The node guard's numbers (package guard holds the same: a test checks
// it): GuardAct bounds its action after the lease ran out; the daemon
// looks at the lease every GuardRenewEvery at most, and renews it only
// when that moves its end (docs/behaviour.md 3.1): an anchored lease when
// a newer acknowledgement arrived, a lease of now + guard_lease (quorum
// off) once what is left of it fell to guard_lease - GuardSlack; a lease
// shorter than GuardMinLease would run out at a loop's ordinary hiccup.
const (
	GuardAct        = 2500 * time.Millisecond
	GuardRenewEvery = time.Second
	GuardSlack      = 2 * time.Second
	GuardMinLease   = 2 * time.Second
	// guardMinMaintLease is the least lease a clean stop may leave.
	guardMinMaintLease = time.Second
)

// checkGuard checks node.guard_lease against node.toml's other numbers.
func (d *document) checkGuard(c *NodeConfig, node *section) error {
	if !c.Guard {
		return nil
	}
	if c.GuardLease < GuardMinLease {
		return d.errAt(node, "guard_lease", "%s is too short: at least %s (the daemon renews the lease every %s; set guard = false for no guard)",
			c.GuardLease, GuardMinLease, GuardRenewEvery)
	}
	if ml := quorum.GuardMaintenanceLease(c.MaintenanceGracePeriod, GuardAct); ml < guardMinMaintLease {
		return d.errAt(node, "maintenance_grace_period", "%s%s is too short for the guard: a clean stop leaves the guard a lease of the grace less its %s action and a %s margin, so that it ends the services before the peers take them over; at least %s must remain (set guard = false for no guard)",
			c.MaintenanceGracePeriod, defaultNote(node, "maintenance_grace_period"), GuardAct, quorum.LeaseMargin, guardMinMaintLease)
	}
	return nil
}

// checkGuardCluster checks node.guard_lease against cluster.toml: with
// the quorum on, a node whose vote waits for the arbitrators renews
// nothing meanwhile (it may be losing), so its lease must outlast the
// longest arbitrator timeout and a renewal, or a node that keeps the
// quorum would have its services ended while its vote waits.
func checkGuardCluster(n *NodeConfig, c *ClusterConfig) error {
	if !n.Guard || !c.Quorum {
		return nil
	}
	// the lease counts from this node's newest beat that its peers
	// acknowledged (docs/behaviour.md 3.1): up to two beat periods old
	// between two acknowledgements, and renewed every GuardRenewEvery
	if beat := guardBeat(n.HB); n.GuardLease <= 2*beat+GuardRenewEvery {
		dflt := ""
		if !isSet(n.lines, SectionNode, "guard_lease") {
			dflt = " (the default)"
		}
		return n.ErrAt(SectionNode, "guard_lease", "%s%s must be longer than twice the beat period (%s: hb.interval, or hb.timeout/3 if shorter) plus %s: with cluster.quorum on, the lease counts from this node's newest beat its peers acknowledged, up to two beat periods old",
			n.GuardLease, dflt, beat, GuardRenewEvery)
	}
	var longest Arbitrator
	for _, a := range c.Arbitrators {
		if a.Timeout > longest.Timeout {
			longest = a
		}
	}
	if longest.Name != "" && n.GuardLease <= longest.Timeout+GuardRenewEvery {
		where, dflt := c.File, ""
		if c.lines != nil {
			if l := c.lines.find([]string{SectionArbitrator, longest.Name}, "timeout"); l > 0 {
				where = fmt.Sprintf("%s:%d", c.File, l)
			}
		}
		if !isSet(n.lines, SectionNode, "guard_lease") {
			dflt = " (the default)"
		}
		return n.ErrAt(SectionNode, "guard_lease", "%s%s must be longer than the longest arbitrator timeout plus %s (%s of [arbitrator.%s], %s): a vote waits that long for the arbitrators and renews nothing meanwhile",
			n.GuardLease, dflt, GuardRenewEvery, longest.Timeout, longest.Name, where)
	}
	return nil
}

// guardBeat is the heartbeat's beat period: hb.interval, or hb.timeout/3
// if shorter.
func guardBeat(hb HBConfig) time.Duration {
	if t := hb.Timeout / 3; t > 0 && t < hb.Interval {
		return t
	}
	return hb.Interval
}
