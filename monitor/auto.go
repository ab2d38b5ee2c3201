package monitor

import (
	"slices"

	"haven/dataset"
	"haven/placement"
)

// auto is the orchestration without admin target (docs/behaviour.md 1.2-1.6):
// idle -> ready (ready_period) -> starting, with the contest rules.
func (c *svcCtx) auto() {
	if c.s.FastAck {
		defer c.readyAck()
	}
	st := c.d.Monitor.State
	if st.Transitioning() || st.Failed() {
		// *ing: the shell reports the end of the action; failed: clear.
		return
	}
	blk, wait := c.autoBlock()
	c.contest(blk, wait, c.s.FastAck)
}

// contest is the ready window of a claim (behaviour.md 1.3), for a
// failover service and a flex one alike: blk and wait are why the local
// node may not claim, or keep claiming (autoBlock, flexBlock); at the
// window's end the start waits while contested says so; fast is the fast
// ack.
func (c *svcCtx) contest(blk lazy, wait dataset.MonitorState, fast bool) {
	st := c.d.Monitor.State
	now := c.s.Now
	if st == dataset.Ready {
		switch {
		case wait != "":
			c.to(wait, blk.String())
		case !blk.none():
			c.to(dataset.Idle, "ready cancelled: "+blk.String())
		case !now.Before(c.d.Monitor.StateSince.Add(c.s.ReadyPeriod)):
			if why := c.contested(); why != "" {
				c.note(why)
				break
			}
			c.act(ActionStart, dataset.Starting, c.startReason())
		case fast && c.allAcked() && (!c.cfg.IsFlex() || c.flexContested() == ""):
			c.act(ActionStart, dataset.Starting, fastAckReason)
		default:
			c.d.Deadline = c.d.Monitor.StateSince.Add(c.s.ReadyPeriod)
		}
		return
	}
	switch {
	case blk.none() && len(c.nodes) == 1:
		c.act(ActionStart, dataset.Starting, "single-node service down: start")
	case blk.none():
		c.to(dataset.Ready, c.readyReason())
		c.d.Deadline = now.Add(c.s.ReadyPeriod)
		if fast && c.allAcked() {
			// no live peer to ack: decide again at once
			c.d.Deadline = now
		}
	case wait != "":
		c.to(wait, blk.String())
	case st != dataset.Idle:
		c.to(dataset.Idle, blk.String())
	}
}

// contested says why a claim whose window ended must not start yet, ""
// when it may: a worse claim not withdrawn yet (failover), or claims that
// do not all fit in flex_target (flex): it may not have seen ours, and
// its next data decides.
func (c *svcCtx) contested() string {
	if c.cfg.IsFlex() {
		return c.flexContested()
	}
	if p := c.otherReadyPeer(); p != "" {
		return "ready period ended, but " + p + " is ready too: waiting for it to back off"
	}
	return ""
}

func (c *svcCtx) readyReason() string {
	if c.cfg.IsFlex() {
		return c.flexReadyReason()
	}
	return "placement leader and service down everywhere: ready"
}

func (c *svcCtx) startReason() string {
	if c.cfg.IsFlex() {
		return c.flexStartReason()
	}
	return "ready period ended uncontested: start"
}

// lazy is a reason kept in pieces, joined only when a decision uses it:
// most services are blocked for a steady reason that is never shown.
type lazy [4]string

func (l lazy) none() bool     { return l[0] == "" }
func (l lazy) String() string { return l[0] + l[1] + l[2] + l[3] }

// autoBlock returns why the local node must not start (or keep contesting
// for) the service by itself, none when it may. wait is the waiting state
// when the only obstacle is a lost peer not certainly stopped (wait fence)
// or a parent that is not up (wait parents), "" otherwise.
func (c *svcCtx) autoBlock() (why lazy, wait dataset.MonitorState) {
	local := c.s.Local
	switch c.cfg.Orchestrate {
	case OrchestrateHA, OrchestrateStart:
	default:
		return lazy{"orchestrate=", c.cfg.Orchestrate}, ""
	}
	if c.cfg.Placement == placement.PolicyNone {
		return lazy{"placement=none"}, ""
	}
	if !c.s.Compat {
		return lazy{"incompatible versions: ha orchestration disabled"}, ""
	}
	if c.s.ConfDiffers != "" {
		return lazy{c.s.ConfDiffers, ": ha orchestration disabled"}, ""
	}
	if n := c.firstUpish(); n != "" {
		return lazy{"service ", string(c.availOn(n)), " on ", n}, ""
	}
	if c.transNode != "" {
		return lazy{c.transNode, " is ", string(c.transState)}, ""
	}
	if !c.isCandidate(local) {
		return lazy{"not a candidate: ", c.rank.Reason(local)}, ""
	}
	if c.cfg.Orchestrate == OrchestrateStart {
		if nl := c.rank.NaturalLeader(); nl != local {
			return lazy{"not the natural leader (", nl, ")"}, ""
		}
	} else if l := c.rank.Leader(); l != local {
		return lazy{"not the placement leader (", l, ")"}, ""
	}
	if n, why := c.strayInstance(); n != "" {
		return lazy{"service " + why + " on ", n, ", not one of its nodes", " (it must stop there first)"}, ""
	}
	if p := c.betterReadyPeer(); p != "" {
		return lazy{p, " is ready with a better rank"}, ""
	}
	if n, why := c.fenceGate(); n != "" {
		return lazy{"wait fence: ", n, ": ", why}, dataset.WaitFence
	}
	if p := c.parentDown(); p != "" {
		return lazy{"wait parents: ", p, " not up"}, dataset.WaitParents
	}
	return lazy{}, ""
}

// strayInstance returns a live cluster node outside the service's nodes
// whose instance is up, warn or in an action (a node just removed from
// the service's nodes, stopping it), and what it is: the service does not
// start elsewhere before it is down there, or a slow or failed stop would
// run it twice. Only the placement leader of a service down on its nodes
// gets here.
func (c *svcCtx) strayInstance() (node, what string) {
	if len(c.s.ClusterNodes) == len(c.nodes) {
		return "", "" // the service's nodes are every cluster node
	}
	for _, n := range c.s.ClusterNodes {
		if n == c.s.Local || slices.Contains(c.nodes, n) {
			continue
		}
		v, ok := c.s.Nodes[n]
		if !ok || !v.Alive() {
			continue
		}
		inst, ok := v.Data.Services[c.name]
		if !ok {
			continue
		}
		switch a := EffectiveAvail(inst); {
		case a == dataset.StatusUp || a == dataset.StatusWarn:
			return n, string(a)
		case inst.Monitor.State.Transitioning():
			return n, string(inst.Monitor.State)
		}
	}
	return "", ""
}

// fenceGate returns the first lost peer among the service's nodes that has
// not certainly stopped it (Snapshot.Fencing), and why; "" when none.
func (c *svcCtx) fenceGate() (node, why string) {
	if len(c.s.Fencing) == 0 {
		return "", ""
	}
	for _, n := range c.nodes {
		if why, ok := c.s.Fencing[n]; ok && n != c.s.Local {
			return n, why
		}
	}
	return "", ""
}

func (c *svcCtx) availOn(node string) dataset.Status {
	inst, _ := c.instance(node)
	return inst.Avail
}

// betterReadyPeer returns a peer in ready (or starting) that ranks before
// the local node, or "".
func (c *svcCtx) betterReadyPeer() string {
	mine := -1 // Position of the local node, when a peer needs it
	for i, n := range c.nodes {
		if n == c.s.Local || !c.alive[i] {
			continue
		}
		if st := c.insts[i].State; st != dataset.Ready && st != dataset.Starting {
			continue
		}
		if mine < 0 {
			mine = c.rank.Position(c.s.Local)
		}
		if c.rank.Position(n) < mine {
			return n
		}
	}
	return ""
}

// otherReadyPeer returns a peer of the service, alive, in ready, or "": a
// claim that has not backed off before ours. The better ones cancel ours
// (betterReadyPeer); a worse one backs off once it sees ours, and until
// it does, the claim is contested: starting then would start twice if our
// claim never reached it (a split during the window).
func (c *svcCtx) otherReadyPeer() string {
	for i, n := range c.nodes {
		if n != c.s.Local && c.alive[i] && c.insts[i].State == dataset.Ready {
			return n
		}
	}
	return ""
}
