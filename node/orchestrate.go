package node

import (
	"time"

	"haven/dataset"
	"haven/monitor"
)

// Orchestrate runs the decision core (monitor.Step) over the view of now
// (Snapshot) and carries out its decisions: the
// monitor states (with their events), the actions (Ready.Run), the
// freezes, the targets reached or failed, the --wait callers whose time
// is up. Ready.WakeAt is the earliest time the pass must run again (the
// end of a ready window, a --wait deadline).
func (c *Core) Orchestrate(now time.Time) {
	if c.stopping {
		return
	}
	c.viewChanged = false
	c.lastStep = now
	snap := c.Snapshot(now)
	c.watchLadders(snap, now)
	if c.ladderAll(now) {
		// the ladder changed a monitor: decide on what it did
		snap = c.Snapshot(now)
	}
	next := c.resolveMultipleActive(snap, now)
	c.watchRanElsewhere(snap)
	for _, dec := range monitor.Step(snap) {
		svc := dec.Service
		inst := c.insts[svc]
		if inst == nil || !inst.local {
			continue
		}
		if !dec.Deadline.IsZero() && (next.IsZero() || dec.Deadline.Before(next)) {
			next = dec.Deadline
		}
		if inst.leader != dec.PlacementLeader || inst.flags != dec.Flags {
			inst.leader, inst.flags = dec.PlacementLeader, dec.Flags
			c.publish()
		}
		if dec.Monitor.GlobalExpect != inst.mon.GlobalExpect {
			inst.mon.GlobalExpect = dec.Monitor.GlobalExpect
			c.publish()
		}
		if dec.TargetReached {
			c.TargetReached(svc, dec.TargetUnknown, snap)
		}
		c.NoteTargetFailed(svc, dec.TargetFailed)
		if !dec.Changed || inst.busy != "" {
			// an action of ours is running: its end decides the state
			continue
		}
		if c.held(svc) && dec.Monitor.GlobalExpect == dataset.ExpectNone &&
			(dec.Action == monitor.ActionStart || dec.Monitor.State == dataset.Ready) {
			// the restart ladder gave up here: no start by the orchestrator
			// (an admin target, a clear or a start --local end it)
			continue
		}
		switch dec.Action {
		case monitor.ActionStart, monitor.ActionStop:
			prev := inst.mon.State
			if prev != dec.Monitor.State {
				c.emit(InstanceMonitor{Svc: svc, From: prev, To: dec.Monitor.State, Reason: dec.Reason})
			}
			inst.mon = dec.Monitor
			c.beginAction(svc, inst, string(dec.Action), dec.Reason)
			inst.prevState = prev
		case monitor.ActionFreeze, monitor.ActionThaw:
			c.SetFrozen(svc, dec.Action == monitor.ActionFreeze, dec.Reason)
			inst.mon = monitor.AfterFreeze(dec.Monitor, now)
			c.publish()
		default:
			if inst.mon.State != dec.Monitor.State {
				c.emit(InstanceMonitor{Svc: svc, From: inst.mon.State, To: dec.Monitor.State, Reason: dec.Reason})
			}
			inst.mon = dec.Monitor
			c.persistMonitor(svc, inst)
			c.publish()
		}
	}
	if t := c.ExpireWaiters(now, snap); !t.IsZero() && (next.IsZero() || t.Before(next)) {
		next = t
	}
	c.wakeAt(next)
}

// wakeAt asks the driver to call again at t (the earliest wins).
func (c *Core) wakeAt(t time.Time) {
	if t.IsZero() {
		return
	}
	if c.ready.WakeAt.IsZero() || t.Before(c.ready.WakeAt) {
		c.ready.WakeAt = t
	}
}
