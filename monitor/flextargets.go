package monitor

import "haven/dataset"

// The admin targets of a flex service (docs/behaviour.md 10.7):
//
//   - stop (every instance): as for a failover service (targetStopped):
//     every instance frozen, then stopped; held stopped until a start;
//   - start (every instance): every instance thawed; reached then, and the
//     flex rules start the instances up to the target (svcmgr start
//     --wait goes on waiting for the count);
//   - stop --node N ("stopped@N"): N freezes its instance, then stops it;
//     the other nodes go on with the flex rules meanwhile, so the count
//     refills on the next candidate once N's instance is down (N, frozen,
//     is no candidate: it holds no instance until started again);
//   - start --node N ("started@N"): N thaws its instance; the flex rules
//     then start it when a slot is free for it (the target counts
//     instances: a node given back is not forced in beyond it).
//
// A target on one node is durable and distributed as every admin target
// (the node core's), and stays until N applied it: a node down then
// adopts it when it comes back.

// nodeTargetElsewhere reports whether the target of a flex service names
// one node's instance, not this node's.
func (c *svcCtx) nodeTargetElsewhere() bool {
	return c.cfg.IsFlex() && c.target.Node != "" && c.target.Node != c.s.Local &&
		(c.target.Expect == dataset.ExpectStopped || c.target.Expect == dataset.ExpectStarted)
}

// nodeTargetReached reports whether the target of one node's instance is
// reached: the node shows it (unacked), its instance frozen and down
// (stopped@N) or thawed (started@N), and no action in progress there.
func (c *svcCtx) nodeTargetReached() bool {
	n := c.target.Node
	inst, alive := c.instance(n)
	if !alive || inst.State.Transitioning() || c.unacked() != "" {
		return false
	}
	v := c.cluster.View(n)
	frozen := v != nil && v.Data.Services[c.name].Frozen
	if c.target.Expect == dataset.ExpectStopped {
		return frozen && !upish(inst.Avail)
	}
	return !frozen
}

// targetNodeStopped: stopped@N on a flex service, on N or elsewhere.
func (c *svcCtx) targetNodeStopped(label string) {
	if c.target.Node == c.s.Local {
		switch {
		case !c.inst.Frozen:
			c.freeze(label, true)
			return
		case upish(c.inst.Avail) && c.d.Monitor.State != dataset.StopFailed:
			c.act(ActionStop, dataset.Stopping, label+": stop")
			return
		}
	}
	c.settle(label)
	c.d.TargetReached = c.nodeTargetReached()
}

// targetNodeStarted: started@N on a flex service, on N or elsewhere.
func (c *svcCtx) targetNodeStarted(label string) {
	if c.target.Node == c.s.Local && c.inst.Frozen {
		c.freeze(label, false)
		return
	}
	c.settle(label)
	c.d.TargetReached = c.nodeTargetReached()
}

// targetFlexStarted: start of a flex service: every instance thawed.
func (c *svcCtx) targetFlexStarted(label string) {
	if c.inst.Frozen {
		c.freeze(label, false)
		return
	}
	c.settle(label)
	c.d.TargetReached = c.allFrozen(false) && c.transNode == "" && c.unacked() == ""
}
