package monitor

import (
	"slices"

	"haven/dataset"
	"haven/placement"
)

// hasTarget reports whether an admin target drives the service. While one
// does, the automatic orchestration is suspended for the service.
func (c *svcCtx) hasTarget() bool {
	switch c.target.Expect {
	case "", dataset.ExpectNone, dataset.ExpectAborted:
		return false
	}
	return true
}

// runTarget drives the local instance toward the admin target
// (docs/behaviour.md 5) and tells whether it is reached.
func (c *svcCtx) runTarget() {
	if c.d.Monitor.State.Transitioning() {
		return // wait for the shell to report the running action
	}
	label := "target " + c.target.String()
	switch c.target.Expect {
	case dataset.ExpectFrozen:
		c.targetFrozen(label, true)
	case dataset.ExpectThawed:
		c.targetFrozen(label, false)
	case dataset.ExpectStopped:
		if c.cfg.IsFlex() && c.target.Node != "" {
			c.targetNodeStopped(label)
			break
		}
		c.targetStopped(label)
	case dataset.ExpectStarted:
		switch {
		case c.cfg.IsFlex() && c.target.Node != "":
			c.targetNodeStarted(label)
		case c.cfg.IsFlex():
			c.targetFlexStarted(label)
		default:
			c.targetStarted(label)
		}
	case dataset.ExpectPlaced:
		dest := c.target.Node
		if dest == "" {
			dest = c.givebackDest()
		}
		c.targetPlaced(label, dest)
	default:
		// deleted, or unknown: the shell acts; orchestration stays suspended.
		c.settle(label)
	}
}

// targetFrozen freezes (or thaws) the local instance; reached when every
// instance on an up node is frozen (thawed).
func (c *svcCtx) targetFrozen(label string, frozen bool) {
	if c.inst.Frozen != frozen {
		c.freeze(label, frozen)
		return
	}
	c.settle(label)
	c.d.TargetReached = c.frozenEverywhere(frozen) && c.transNode == "" && c.unacked() == ""
}

// freeze emits the freeze or thaw action.
func (c *svcCtx) freeze(label string, frozen bool) {
	if frozen {
		c.act(ActionFreeze, dataset.Freezing, label+": freeze")
	} else {
		c.act(ActionThaw, dataset.Thawing, label+": thaw")
	}
}

// targetStopped: freeze every instance, then stop where it runs, children
// first.
func (c *svcCtx) targetStopped(label string) {
	if !c.inst.Frozen {
		c.freeze(label, true)
		return
	}
	st := c.d.Monitor.State
	if st == dataset.StopFailed {
		return
	}
	if upish(c.inst.Avail) {
		if !c.allFrozen(true) {
			c.settle(label + ": waiting for every instance to be frozen")
			return
		}
		if ch := c.childNotDown(); ch != "" {
			c.to(dataset.WaitChildren, label+": wait children: "+ch+" not down")
			return
		}
		c.act(ActionStop, dataset.Stopping, label+": stop")
		return
	}
	c.settle(label)
	c.d.TargetReached = c.frozenEverywhere(true) && c.firstUpish() == "" && c.transNode == "" && c.unacked() == ""
}

// targetStarted: thaw every instance, then the placement leader starts it
// at once (no ready window: the admin decided), whatever orchestrate,
// placement or compat say.
func (c *svcCtx) targetStarted(label string) {
	if c.inst.Frozen {
		c.freeze(label, false)
		return
	}
	unacked := c.unacked()
	if c.aggregateUp() != "" && c.allFrozen(false) && c.transNode == "" {
		c.settle(label)
		c.d.TargetReached = unacked == ""
		return
	}
	if c.d.Monitor.State.Failed() {
		return
	}
	switch {
	case !c.allFrozen(false), c.firstUpish() != "", c.transNode != "":
		c.settle(label)
	case c.rank.Leader() != c.s.Local:
		c.settle(label + ": not the placement leader")
	case unacked != "":
		c.settleSaying(label + ": " + waitAck(unacked))
	default:
		c.startHere(label)
	}
}

// targetPlaced: stop everywhere but dest, then start on dest; thaw every
// instance. Constraints and affinities are not checked: the admin chose.
func (c *svcCtx) targetPlaced(label, dest string) {
	if dest == "" {
		c.settle(label + ": no destination")
		return
	}
	local := c.s.Local
	destUp := c.destUp(dest)
	othersDown := c.othersDown(dest)
	unacked := c.unacked()
	reached := destUp && othersDown && c.allFrozen(false) && c.transNode == "" && unacked == ""
	st := c.d.Monitor.State
	if local != dest {
		switch {
		case upish(c.inst.Avail) && st != dataset.StopFailed:
			c.act(ActionStop, dataset.Stopping, label+": stop here")
		case c.inst.Frozen && destUp && c.transNode == "":
			c.freeze(label, false)
		default:
			c.settle(label)
			c.d.TargetReached = reached
		}
		return
	}
	switch {
	case c.inst.Frozen:
		c.freeze(label, false)
	case destUp, st.Failed(), !othersDown, c.transNode != "":
		c.settle(label)
		c.d.TargetReached = reached
	case unacked != "":
		c.settleSaying(label + ": " + waitAck(unacked))
	default:
		if ok, why := c.view.Available(); !ok {
			c.settle(label + ": local " + why)
			return
		}
		c.startHere(label)
	}
}

// startHere emits the start, or waits for the parents.
func (c *svcCtx) startHere(label string) {
	if n, why := c.fenceGate(); n != "" {
		c.to(dataset.WaitFence, label+": wait fence: "+n+": "+why)
		return
	}
	if p := c.parentDown(); p != "" {
		c.to(dataset.WaitParents, label+": wait parents: "+p+" not up")
		return
	}
	c.act(ActionStart, dataset.Starting, label+": start")
}

// unacked returns the first node of the service, other than this one,
// whose data held here does not show the target yet (its target of the
// service is older), or "". That data was sent before the node adopted
// the target: the copy held here lags, and the state it shows may be
// older than what the target was decided on (a start there for an
// earlier target, a freeze since undone: the node that set this target
// saw more). So nothing is started for the target, and it is not reached,
// until every such node showed it: what a node's data shows once it holds
// the target is no older than the target. Not waited for: a node whose
// data is not alive (unknownNodes), one whose daemon decides nothing more
// (maintenance, shutting: the copy held is its last), and one that hosts
// no instance of the service (it cannot adopt its target).
func (c *svcCtx) unacked() string {
	for i, n := range c.nodes {
		if n == c.s.Local || !c.alive[i] {
			continue
		}
		if v := c.cluster.View(n); v != nil && lagsTarget(v, c.name, c.target) {
			return n
		}
	}
	return ""
}

// lagsTarget reports whether the data of v, a live node's, does not show
// target t of svc while the node should adopt it (unacked): it hosts an
// instance of svc and its daemon still decides (neither maintenance nor
// shutting).
func lagsTarget(v *placement.NodeView, svc string, t dataset.Target) bool {
	switch v.Data.Monitor {
	case dataset.NodeMaintenance, dataset.NodeShutting:
		return false
	}
	if _, ok := v.Data.Services[svc]; !ok {
		return false
	}
	return t.Version.Newer(v.Data.Targets[svc].Version)
}

// waitAck says that a start waits for node to show the target.
func waitAck(node string) string {
	return "waiting for the data of " + node + " to show the target"
}

// settleSaying is settle, and says reason even when the state stays (for
// svcmgr explain).
func (c *svcCtx) settleSaying(reason string) {
	before := c.d.Reason
	c.settle(reason)
	if c.d.Reason == before {
		c.note(reason)
	}
}

// givebackDest is where "placed" (giveback) moves the service: for
// orchestrate=ha the best placeable node; otherwise the natural leader when
// placeable, else the best placeable node.
func (c *svcCtx) givebackDest() string {
	if c.cfg.Orchestrate != OrchestrateHA {
		if nl := c.rank.NaturalLeader(); slices.Contains(c.rank.Placeable, nl) {
			return nl
		}
	}
	if len(c.rank.Placeable) > 0 {
		return c.rank.Placeable[0]
	}
	return ""
}

// allFrozen reports whether every instance on an up node has Frozen ==
// frozen.
func (c *svcCtx) allFrozen(frozen bool) bool {
	return c.frozenOn(frozen, func(v *placement.NodeView) bool { return v.Status == dataset.NodeUp })
}

// frozenEverywhere is allFrozen over every alive node, those in maintenance
// or shutting included: their daemon cannot apply a target now, so a freeze
// or stop is not reached until they announced the flag, or it would be
// cleared before they come back and never be in force there. Down nodes are
// unknown (unknownNodes: a freeze or stop waits for them too).
func (c *svcCtx) frozenEverywhere(frozen bool) bool {
	return c.frozenOn(frozen, func(v *placement.NodeView) bool { return v.Alive() })
}

func (c *svcCtx) frozenOn(frozen bool, counts func(*placement.NodeView) bool) bool {
	for i, n := range c.nodes {
		if v := c.cluster.View(n); v == nil || !counts(v) {
			continue
		}
		if c.insts[i].Frozen != frozen {
			return false
		}
	}
	return true
}

// aggregateUp returns the node where the service is up when it is up on
// exactly one node and warn nowhere, else "".
func (c *svcCtx) aggregateUp() string {
	if c.upCount == 1 && c.warnNode == "" {
		return c.firstUp
	}
	return ""
}

func (c *svcCtx) destUp(dest string) bool {
	inst, alive := c.instance(dest)
	return alive && inst.Avail == dataset.StatusUp
}

// othersDown reports whether the service is neither up nor warn on any
// alive node but dest.
func (c *svcCtx) othersDown(dest string) bool {
	for _, n := range c.nodes {
		if n == dest {
			continue
		}
		if inst, alive := c.instance(n); alive && upish(inst.Avail) {
			return false
		}
	}
	return true
}
