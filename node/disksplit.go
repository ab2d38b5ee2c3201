package node

import (
	"fmt"
	"time"

	"haven/dataset"
)

// The split decision of a node that lost its fencing disk ([hb.disk]
// fence = true). A survivor fences a silent member through the shared
// disk and counts it fenced once its slot stalled long enough: a node
// that can neither read the disk nor hear a strict majority of the
// members (arbitrators not counted: both sides of a cut may reach them)
// may be that member, and applies its split_action (stop, crash, reboot).
// The driver reads the disk and says what it read (DiskRead); the core
// decides, at that input and at each tick.

// DiskRead is what the driver read of the fencing disk: Lost when it had
// no good round for hb.disk.timeout, else reachable again.
type DiskRead struct {
	Lost bool
	Now  time.Time
}

func (DiskRead) isInput() {}

// diskRead takes the disk's state: a disk read again ends the loss (the
// next loss applies the split_action anew).
func (c *Core) diskRead(lost bool, now time.Time) {
	if lost == c.disk.Lost {
		return
	}
	c.disk.Lost = lost
	if !lost {
		c.disk.Split, c.disk.Escalated = false, false
	}
	c.checkDiskSplit(now)
}

// checkDiskSplit applies the rule: a split stop that left an instance
// running (its stop ended and failed) escalates to crash, as the quorum's
// split stop does; a node without the disk and without a strict majority
// of the members applies its split_action once per loss. Nothing without
// the quorum rule, nor once a vote was lost (the vote applied the
// split_action), nor in rejoin (the node starts nothing then).
func (c *Core) checkDiskSplit(now time.Time) {
	s := &c.disk
	if s.Split && !s.Escalated && c.cfg.Quorum.SplitAction == SplitStop {
		for _, inst := range c.ilist {
			if _, running := c.Status(inst.Name); running && inst.Act.Busy == "" {
				s.Escalated = true
				c.splitNodeAction(SplitCrash, "the fencing disk is lost and the split stop of "+inst.Name+" failed: escalate to crash")
				return
			}
		}
	}
	if !s.Lost || s.Split || !c.cfg.Quorum.DiskFence || !c.quorumOn() || c.q.Split.Lost || c.monitor == dataset.NodeRejoin {
		return
	}
	live, members := 1+len(c.livePeers(now)), len(c.cfg.ClusterNodes)
	if 2*live > members {
		return
	}
	s.Split = true
	reason := fmt.Sprintf("the fencing disk is lost and this node hears %d of %d members: split_action %s", live, members, c.cfg.Quorum.SplitAction)
	switch c.cfg.Quorum.SplitAction {
	case SplitCrash, SplitReboot:
		c.splitNodeAction(c.cfg.Quorum.SplitAction, reason)
	case SplitStop:
		c.setNodeFrozen(true, reason+": every local instance stopped, node frozen")
		for _, inst := range c.ilist {
			if _, running := c.Status(inst.Name); running {
				c.runAction(inst.Name, "stop", reason, now)
			}
		}
	}
}
