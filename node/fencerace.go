package node

import (
	"haven/dataset"
	"haven/monitor"
)

// The fence race of two survivors (docs/behaviour.md 3): when a lost peer
// may have kept the quorum too (2 nodes and an arbitrator both reach, the
// link between them cut), each side would fence the other. One of them
// fences at once, the other only at the peer's self-stop deadline, so that
// one is left standing: the side that runs more services fences first and
// keeps them (no needless failover, as Pacemaker's priority-fencing-delay
// and the one-vote arbitrator's choice), then, at equal counts, the first
// node by name.

// runningHere counts the local instances running.
func (c *Core) runningHere() int {
	n := 0
	for _, inst := range c.ilist {
		if _, r := c.Status(inst.Name); inst.Local && r {
			n++
		}
	}
	return n
}

// runningThere counts the instances the last data of peer shows running,
// by the rule of Status.
func (c *Core) runningThere(peer string) int {
	p := c.pv.Peers[peer]
	if p == nil || p.Data == nil {
		return 0
	}
	n := 0
	for _, i := range p.Data.Services {
		switch monitor.EffectiveAvail(i) {
		case dataset.StatusDown, dataset.StatusNA:
		default:
			n++
		}
	}
	return n
}

// fencesSecond reports whether this node waits before it fences peer in
// the race, and why in words.
func (c *Core) fencesSecond(peer string) (bool, string) {
	mine, theirs := c.runningHere(), c.runningThere(peer)
	switch {
	case mine < theirs:
		return true, "the side running more services fences first"
	case mine > theirs:
		return false, ""
	}
	return c.cfg.Name > peer, "both run as many services: the first node by name fences first"
}
