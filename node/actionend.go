package node

import (
	"time"

	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
)

// The end of an action: what it leaves to the rules once its commands
// and the full check that follows ended (the ladder, the failover note),
// or once it was aborted, and the answer of its caller (a request, a
// drain, a deletion).

// actionAborted reports that an ordered action was not run (the state
// write it waited on failed): the instance is no longer busy, its monitor
// goes back to the state before, and the action's ticket gets err.
func (c *Core) actionAborted(svc, kind string, err error, now time.Time) {
	inst := c.insts[svc]
	if inst == nil || inst.Act.Busy != kind {
		return
	}
	inst.Act.Busy = ""
	c.nextCheck = time.Time{}
	c.setMonitorState(svc, inst, inst.Act.PrevState, "not run: "+err.Error(), now)
	c.rolloutActed(svc, kind, err, now)
	c.actionAnswered(inst, err)
}

// actionAnswered answers the caller of the instance's action, if any.
func (c *Core) actionAnswered(inst *instsm.Instance, err error) {
	tk := inst.Act.Caller
	if tk == 0 {
		return
	}
	inst.Act.Caller = 0
	if c.deleteStopped(tk, err) {
		return
	}
	if d := c.drainOf(tk); d != nil {
		c.drainStep(d, tk, err)
		return
	}
	if r, ok := c.relays[tk]; ok {
		delete(c.relays, tk)
		if err != nil {
			c.answer(Answer{Ticket: r.to, Err: err})
		} else {
			c.answer(Answer{Ticket: r.to, Result: r.ok})
		}
		return
	}
	c.answer(Answer{Ticket: tk, Err: err})
}

// finishAction ends an action once the status check that followed it has
// ended: the monitor takes AfterStart / AfterStop (and Failure), and what
// must survive a restart is persisted.
func (c *Core) finishAction(svc string, inst *instsm.Instance, kind string, err error, now time.Time) {
	inst.Act.Busy = ""
	if took := now.Sub(inst.Act.BusyAt); !inst.Act.BusyAt.IsZero() && took >= 0 && err == nil {
		switch kind {
		case "start", "restart":
			if inst.Lad.RestartRID == "" { // not one resource's restart (the ladder)
				inst.Act.LastStart = took
			}
		case "stop":
			inst.Act.LastStop = took
		}
	}
	inst.Act.BusyAt = time.Time{}
	c.publish()
	if kind == "restart" && inst.Lad.RestartRID != "" {
		// the ladder goes on from the check that followed (ladder.go)
		inst.Lad.RestartRID = ""
		if rid, _, _ := c.downMonitored(inst); rid == "" && inst.Mon.State == dataset.Restarting {
			c.setMonitorState(svc, inst, dataset.Idle, "restart succeeded", now)
		}
		return
	}
	if kind == "restart" {
		// the whole instance (admin restart): it ends as a start
		kind = "start"
	}
	if kind == "start" {
		// started by this run: its failures are the ladder's
		for _, spec := range monitoredSpecs(inst) {
			inst.SawUp(spec.RID)
		}
	}
	if kind == "start" && err == nil {
		// a fresh run: a new ladder
		c.resetLadder(svc, "the instance started", now, true)
	}
	var next dataset.InstanceMonitor
	if kind == "start" {
		next = monitor.AfterStart(inst.Mon, err == nil, now)
	} else {
		next = monitor.AfterStop(inst.Mon, err == nil, now)
	}
	reason := kind + " succeeded"
	if err != nil {
		reason = err.Error()
		next = monitor.Failure(next, reason)
	}
	c.setMonitorState(svc, inst, next.State, reason, now)
	inst.Mon = next
	c.persistMonitor(svc, inst)
	if kind == "start" && err == nil {
		c.noteStarted(svc, inst)
	}
	c.rolloutActed(svc, kind, err, now)
}
