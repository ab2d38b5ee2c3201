package node

import (
	"time"

	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
)

// pass runs the decision core (monitor.Step) over the view of now
// (Snapshot) and carries out its decisions: the
// monitor states (with their events), the actions (Ready.Run), the
// freezes, the targets reached or failed, the --wait callers whose time
// is up. Ready.WakeAt is the earliest time the pass must run again (the
// end of a ready window, a --wait deadline).
func (c *Core) pass(now time.Time) { c.orchestrate(now, false) }

// passView is Orchestrate when the driver's own dataset did not
// change since the last pass, only the view did (ViewChanged): when the
// view's changes since that pass are limited to the instances of some
// services on peers, it decides again only those services and the ones
// related to them (incremental.go), exactly as the full pass would;
// otherwise it is Orchestrate.
func (c *Core) passView(now time.Time) { c.orchestrate(now, true) }

func (c *Core) orchestrate(now time.Time, viewOnly bool) {
	if c.stopping {
		return
	}
	if viewOnly && c.incrementalPass(now) {
		return
	}
	c.pv.ViewChanged = false
	c.lastStep = now
	in := &c.inc
	in.Dirty, in.Peers, in.Rel = nil, nil, nil
	if !in.Due.IsZero() && !now.Before(in.Due) {
		in.Due = time.Time{}
	}
	in.Full++
	snap := c.Snapshot(now)
	in.LoadUsed = loadUsed(snap.Services)
	c.decide(snap, now, nil)
}

// decide is the decision pass over snap: every service (only nil), or the
// services of only (a closure of monitor.Relations). Its stages: the view
// the pass decides on (decisionView, with the caches), the multi-active
// resolution, monitor.Step, then the decisions carried out
// (applyDecisions) and the --wait callers whose time is up.
func (c *Core) decide(snap monitor.Snapshot, now time.Time, only []string) {
	if only != nil {
		c.inc.Only = make([]*instsm.Instance, 0, len(only))
		for _, svc := range only { // sorted, as ilist
			if inst := c.insts[svc]; inst != nil {
				c.inc.Only = append(c.inc.Only, inst)
			}
		}
		defer func() { c.inc.Only = nil }()
	}
	c.decisionView(&snap, now, only)
	next := c.resolveMultipleActive(snap, now)
	c.watchRanElsewhere(snap)
	var decs []monitor.Decision
	if only == nil {
		decs = monitor.Step(snap)
	} else {
		decs = monitor.StepOnly(snap, only)
	}
	next = earliest(next, c.applyDecisions(decs, snap, now))
	next = earliest(next, c.expireWaiters(now, snap))
	next = earliest(next, c.watchTurns(now, c.inc.Only))
	c.rollbackPass(snap, now, c.inc.Only)
	next = earliest(next, c.rollouts(snap, now, c.inc.Only))
	c.noteRollouts(snap, c.inc.Only)
	c.wakeAt(next)
}

// decisionView makes snap the view the pass decides on: a new snapshot
// when the restart ladders changed a monitor, with the caches of the
// pass behind it (the runs table of a full pass, the placement cache, and
// snap itself kept for the incremental passes).
func (c *Core) decisionView(snap *monitor.Snapshot, now time.Time, only []string) {
	if only == nil {
		c.inc.Runs.Build(*snap)
	}
	c.watchLadders(*snap, now)
	if c.ladderAll(now) {
		// the ladder changed a monitor: decide on what it did
		*snap = c.Snapshot(now)
		if only == nil {
			c.inc.Runs.Build(*snap)
		}
	}
	snap.Cache = &c.inc.Cache
	c.inc.Last = snap
}

// applyDecisions carries out the decisions of a pass, in order, for the
// local instances: the placement leader and flags, the ready acks, the
// global expect, the targets reached or failed, then the monitor state
// and its action (start, stop, freeze, thaw, or a claim). It returns the
// earliest deadline among them (zero: none).
func (c *Core) applyDecisions(decs []monitor.Decision, snap monitor.Snapshot, now time.Time) (next time.Time) {
	for _, dec := range decs {
		inst := c.insts[dec.Service]
		if inst == nil || !inst.Local {
			continue
		}
		next = earliest(next, dec.Deadline)
		c.applyDecision(dec, inst, snap, now)
	}
	return next
}

// applyDecision carries out one decision for a local instance.
func (c *Core) applyDecision(dec monitor.Decision, inst *instsm.Instance, snap monitor.Snapshot, now time.Time) {
	svc := dec.Service
	if inst.Leader != dec.PlacementLeader || inst.Flags != dec.Flags {
		inst.Leader, inst.Flags = dec.PlacementLeader, dec.Flags
		c.publish()
	}
	if inst.Spec.Flex && dec.FlexTarget >= 0 && dec.FlexUp != nil {
		c.noteFlex(dec, inst)
	}
	c.noteReadyAck(inst, dec.ReadyAck)
	if dec.Monitor.GlobalExpect != inst.Mon.GlobalExpect {
		inst.Mon.GlobalExpect = dec.Monitor.GlobalExpect
		c.publish()
	}
	if dec.TargetReached {
		c.targetReached(svc, dec.TargetUnknown, snap)
	}
	c.noteTargetPending(svc, dec.TargetPending)
	c.noteTargetFailed(svc, dec.TargetFailed)
	if !dec.Changed || inst.Act.Busy != "" {
		// an action of ours is running: its end decides the state
		return
	}
	if monitor.GaveUpHolds(c.state.Services[svc].GaveUp, dec) {
		// the restart ladder gave up here: no start by the orchestrator
		// (an admin target, a clear or a start --local end it)
		return
	}
	if dec.Action == monitor.ActionStart && c.guardHoldsStart(svc) {
		return
	}
	switch dec.Action {
	case monitor.ActionStart, monitor.ActionStop:
		prev := inst.Mon.State
		if prev != dec.Monitor.State {
			c.emit(InstanceMonitor{Svc: svc, From: prev, To: dec.Monitor.State, Reason: dec.Reason})
		}
		inst.Mon = dec.Monitor
		if inst.Spec.Flex && dec.Action == monitor.ActionStart && dec.Monitor.GlobalExpect == dataset.ExpectNone {
			c.flexPlaced(svc, inst, dec.Reason)
		}
		c.beginAction(svc, inst, string(dec.Action), dec.Reason, now)
		inst.Act.PrevState = prev
	case monitor.ActionFreeze, monitor.ActionThaw:
		c.setFrozen(svc, dec.Action == monitor.ActionFreeze, dec.Reason)
		inst.Mon = monitor.AfterFreeze(dec.Monitor, now)
		c.publish()
	default:
		c.newClaim(inst, &dec)
		if inst.Mon.State != dec.Monitor.State {
			c.emit(InstanceMonitor{Svc: svc, From: inst.Mon.State, To: dec.Monitor.State, Reason: dec.Reason})
		}
		inst.Mon = dec.Monitor
		c.persistMonitor(svc, inst)
		c.publish()
	}
}
