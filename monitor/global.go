package monitor

import (
	"strconv"
	"strings"

	"haven/dataset"
	"haven/placement"
)

// The global mode of a flex service (flex_target = "all", docs/behaviour.md
// 10.8): one instance on every node where it belongs, each node deciding
// for its own instance only:
//
//   - a candidate (placement.Rank: one of nodes, alive, not frozen,
//     drained, in maintenance or rejoin, the constraints and the hard
//     affinities met, no failed start nor ladder given up) without an
//     instance starts it at once: no other node may take its place, so
//     there is no slot to contest and no ready window, and no takeover
//     gate either (a lost node's instance is replaced nowhere);
//   - an instance running on a node that no longer meets the constraints
//     stops (unless frozen: a freeze holds it where it is); a broken hard
//     affinity gates starts only, as for every service (behaviour.md 6);
//   - nothing else stops an instance: one per node is the target.
//
// The target shown (FlexStatus.Target, Decision.FlexTarget) is the number
// of nodes where an instance belongs: the candidates, and the live nodes
// whose instance runs and stays (frozen, or kept despite a broken hard
// affinity).

// global reports whether the service is in the global mode.
func (c *svcCtx) global() bool { return c.cfg.FlexGlobal() }

// flexTarget is the number of instances the flex service keeps up:
// flex_target, or in the global mode the nodes where one belongs.
func (c *svcCtx) flexTarget() int {
	if !c.global() {
		return c.cfg.FlexTarget
	}
	n := 0
	for i, node := range c.nodes {
		if c.isCandidate(node) || (c.alive[i] && flexRunning(c.insts[i]) && c.globalLeave(node) == "") {
			n++
		}
	}
	return n
}

// flexMax is flex_max, or in the global mode the number of the service's
// nodes (with nodes = ["*"], the members).
func (c *svcCtx) flexMax() int {
	if c.global() {
		return len(c.nodes)
	}
	return c.cfg.FlexMax
}

// globalLeave says why the daemon of node stops its running instance of a
// global service: the constraints no longer met there, the instance and
// the node not frozen. "" when it stays.
func (c *svcCtx) globalLeave(node string) string {
	if c.cOK == nil || c.cOK[node] {
		return ""
	}
	v := c.cluster.View(node)
	if v == nil || v.Data.Frozen || v.Data.SplitFrozen || v.Data.Services[c.name].Frozen {
		return ""
	}
	return "constraints no longer met on " + node
}

// flexOrchestrated says why the daemon starts and stops no instance of a
// flex service by itself, none when it does.
func (c *svcCtx) flexOrchestrated() lazy {
	switch {
	case c.cfg.Orchestrate != OrchestrateHA:
		return lazy{"orchestrate=", c.cfg.Orchestrate}
	case c.cfg.Placement == placement.PolicyNone:
		return lazy{"placement=none"}
	case !c.s.Compat:
		return lazy{"incompatible versions: ha orchestration disabled"}
	case c.s.ConfDiffers != "":
		return lazy{c.s.ConfDiffers, ": ha orchestration disabled"}
	}
	return lazy{}
}

// globalBlock is flexBlock in the global mode: why the local node must not
// start its own instance, none when it may.
func (c *svcCtx) globalBlock() (why lazy, wait dataset.MonitorState) {
	if blk := c.flexOrchestrated(); !blk.none() {
		return blk, ""
	}
	if !c.isCandidate(c.s.Local) {
		return lazy{"not a candidate: ", c.rank.Reason(c.s.Local)}, ""
	}
	if p := c.parentDown(); p != "" {
		return lazy{"wait parents: ", p, " not up"}, dataset.WaitParents
	}
	return lazy{}, ""
}

// globalAuto is flexAuto in the global mode: the local instance started
// on a candidate, stopped where the constraints no longer hold.
func (c *svcCtx) globalAuto() {
	local := c.s.Local
	if flexRunning(placement.InstanceState{Avail: c.inst.Avail, State: c.d.Monitor.State}) {
		up := c.inst.Avail == dataset.StatusUp || c.inst.Avail == dataset.StatusWarn
		if why := c.globalLeave(local); why != "" && up && c.flexOrchestrated().none() {
			c.act(ActionStop, dataset.Stopping, "global: "+why+": stop")
			return
		}
		c.settle("instance running")
		return
	}
	blk, wait := c.globalBlock()
	switch {
	case wait != "":
		c.to(wait, blk.String())
	case !blk.none():
		if c.d.Monitor.State != dataset.Idle {
			c.to(dataset.Idle, blk.String())
		}
	default:
		c.act(ActionStart, dataset.Starting, "global: a candidate without its instance: start (each node runs its own, no window)")
	}
}

// globalShort is FlexExplain.Short in the global mode: which nodes where an
// instance belongs have none yet, "" when none.
func (c *svcCtx) globalShort(running int, free []string) string {
	target := c.flexTarget()
	if running >= target {
		return ""
	}
	s := strconv.Itoa(running) + " of " + strconv.Itoa(target) + " running"
	if len(free) > 0 {
		s += ": " + strings.Join(free, ", ") + " to start its own instance"
	}
	return s
}
