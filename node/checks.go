package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"haven/dataset"
	"haven/dataset/status"
	"haven/node/instsm"
)

// checkNow orders a full status check of the instance of svc (at start-up,
// after a config change).
func (c *Core) checkNow(svc string) {
	if inst := c.insts[svc]; inst != nil {
		c.check(svc, inst, true)
	}
}

// check orders a status check; one runs at a time per instance (a full
// one asked meanwhile runs after it). An instance that cannot be checked
// here ends its pending action at once.
func (c *Core) check(svc string, inst *instsm.Instance, full bool) {
	if (!inst.Local || !inst.Spec.Runnable) && !inst.Retiring {
		c.afterFullCheck(svc, inst)
		return
	}
	if inst.Chk.Checking {
		if full {
			inst.Chk.PendingCheck = true
		}
		return
	}
	inst.Chk.Checking = true
	c.ready.Check = append(c.ready.Check, Check{Service: svc, Full: full, Gen: inst.Gen, FencingToken: c.fencingToken(svc)})
}

// checkDone takes the result of a Check: the resources' status, the
// instance's (status.Instance), with their events; then the end of the
// action that waited on it.
func (c *Core) checkDone(ck Check, res map[string]dataset.Resource, now time.Time) {
	svc := ck.Service
	inst := c.insts[svc]
	if inst == nil {
		return
	}
	inst.Chk.Checking = false
	if ck.Full {
		inst.Chk.LastFull = now
	}
	inst.Chk.LastMon = now
	if due := c.checkDue(inst); !c.nextCheck.IsZero() && due.Before(c.nextCheck) {
		c.nextCheck = due
	}
	if ck.Gen != inst.Gen {
		// the config changed meanwhile: this result is stale
		c.check(svc, inst, true)
		return
	}
	if ck.Full && inst.Chk.PendingCheck {
		// an action ended while this check ran: only the next one counts
		inst.Chk.PendingCheck = false
		c.check(svc, inst, true)
		return
	}
	for _, rid := range slices.Sorted(maps.Keys(res)) {
		r := res[rid]
		if old, ok := inst.Res[rid]; ok && old.Status != r.Status {
			c.emit(ResourceStatus{Svc: svc, RID: rid, From: old.Status, To: r.Status, Reason: r.Log})
		}
		inst.Res[rid] = r
		if r.Status == dataset.StatusUp {
			inst.SawUp(rid)
		}
	}
	if ck.Full {
		for rid := range inst.Res {
			if _, ok := res[rid]; !ok {
				delete(inst.Res, rid)
			}
		}
	}
	avail, overall := status.Instance(inst.Res)
	if avail != inst.Avail || overall != inst.Overall {
		c.emit(InstanceStatus{Svc: svc, From: inst.Avail, To: avail, Overall: overall})
		inst.Avail, inst.Overall = avail, overall
		c.publish()
	}
	if inst.Chk.PendingCheck {
		inst.Chk.PendingCheck = false
		c.check(svc, inst, true)
		return
	}
	if ck.Full {
		c.afterFullCheck(svc, inst)
	}
	c.resourceFaults(svc, inst, now)
	c.ladder(svc, inst, now)
	c.wakeAt(c.rolloutChecked(svc, inst, now))
}

// tickChecks orders the periodic checks: a full one every CheckInterval,
// the monitored resources every MonitorInterval; none while an action or
// a check runs.
//
// An idle tick costs a comparison: nextCheck is no later than the first
// check due (an instance busy or being checked is looked at again when
// its check ends, checkDone).
func (c *Core) tickChecks(now time.Time) {
	if !c.nextCheck.IsZero() && now.Before(c.nextCheck) {
		return
	}
	var next time.Time
	for _, inst := range c.ilist {
		if inst.Act.Busy != "" || inst.Chk.Checking || !inst.Local || !inst.Spec.Runnable {
			continue
		}
		switch {
		case !now.Before(c.fullDue(inst)):
			c.periodicCheck(inst, true)
		case inst.Spec.Monitored && now.Sub(inst.Chk.LastMon) >= c.cfg.MonitorInterval:
			c.periodicCheck(inst, false)
		default:
			if due := c.checkDue(inst); next.IsZero() || due.Before(next) {
				next = due
			}
		}
	}
	c.nextCheck = next
}

// periodicCheck orders the check of an instance's interval: marked
// Periodic, so that the driver runs the checks something waits on (the
// one that ends an action above all) before it.
func (c *Core) periodicCheck(inst *instsm.Instance, full bool) {
	n := len(c.ready.Check)
	c.check(inst.Name, inst, full)
	if len(c.ready.Check) > n {
		c.ready.Check[n].Periodic = true
	}
}

// checkSlots is the number of slots of a check interval that the
// periodic full checks fall into (fullDue).
const checkSlots = 12

// fullDue is the time of the next periodic full check of an instance: a
// check interval after the last, brought back to the start of its slot
// (a twelfth of the interval: 5 s of the default minute), so that the
// checks of the services of a node run together rather than one at a
// time: the daemon's own cost of a check is mostly waking up for it, which
// a batch pays once (200 checks a minute spread evenly cost the daemon
// twice what they cost started together, docs/benchmarks.md). A
// check never comes later than the interval, nor sooner than a slot less.
func (c *Core) fullDue(inst *instsm.Instance) time.Time {
	due := inst.Chk.LastFull.Add(c.cfg.CheckInterval)
	if slot := c.cfg.CheckInterval / checkSlots; slot > 0 {
		if d := due.Truncate(slot); d.After(inst.Chk.LastFull) {
			due = d
		}
	}
	return due
}

// checkDue is the time of the next periodic check of an instance.
func (c *Core) checkDue(inst *instsm.Instance) time.Time {
	due := c.fullDue(inst)
	if m := inst.Chk.LastMon.Add(c.cfg.MonitorInterval); inst.Spec.Monitored && m.Before(due) {
		due = m
	}
	return due
}

// actionDone reports the end of the commands of an action ordered by
// Ready.Run (err nil when they succeeded). The instance stays busy until
// the full status check that follows has ended, so that no decision is
// taken on the status from before the action; then the monitor takes
// AfterStart / AfterStop (and Failure), and the action's ticket is
// answered.
func (c *Core) actionDone(svc, kind string, err error, now time.Time) {
	inst := c.insts[svc]
	if inst == nil {
		return
	}
	c.emit(ActionEnd{Svc: svc, Action: kind, Err: errText(err)})
	c.actionFault(svc, err)
	inst.Chk.Ending = &instsm.ActionEnd{Kind: kind, Err: err}
	inst.Chk.EndAt = now
	c.check(svc, inst, true)
}

// afterFullCheck answers those who waited on the status check
// (whenChecked) and ends the action that waited on it.
func (c *Core) afterFullCheck(svc string, inst *instsm.Instance) {
	for _, tk := range inst.Chk.CheckWaiters {
		c.answer(Answer{Ticket: tk})
	}
	inst.Chk.CheckWaiters = nil
	end := inst.Chk.Ending
	if end == nil {
		return
	}
	inst.Chk.Ending = nil
	if end.Kind == "stop" && end.Err == nil {
		// the commands said ok, the check says otherwise: the check wins
		if end.Err = stillUp(inst.Res); end.Err != nil {
			c.emit(ActionEnd{Svc: svc, Action: "stop", Err: end.Err.Error()})
		}
	}
	c.finishAction(svc, inst, end.Kind, end.Err, inst.Chk.EndAt)
	c.actionAnswered(inst, end.Err)
	if !inst.Local && inst.Retiring {
		// the node was removed from the service's nodes: after its stop
		// the old drivers are done; after another action (a start in
		// flight at the removal) what runs is stopped now
		inst.Retiring = end.Kind != "stop" && inst.Act.Busy == "" && c.stopRetired(svc, inst, inst.Chk.EndAt)
	}
	if c.shutdown && end.Kind == "start" && inst.Local && inst.Spec.Runnable {
		// a start that was running when the shutdown came: the shutdown
		// stops what it started, or the daemon would exit with the service
		// running (found by the chaos suite's SimulStart)
		if _, running := c.Status(svc); running {
			c.runAction(svc, "stop", "daemon shutdown (the start in flight ended)", inst.Chk.EndAt)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// stillUp returns an error naming the required resources whose check
// still says up after a stop whose commands succeeded, nil when none.
func stillUp(res map[string]dataset.Resource) error {
	var up []string
	for _, rid := range slices.Sorted(maps.Keys(res)) {
		r := res[rid]
		if r.Disabled || r.Optional || r.Status != dataset.StatusUp {
			continue
		}
		s := rid + ": its check still says up after its stop"
		if r.Log != "" {
			s += " (last line: " + r.Log + ")"
		}
		up = append(up, s)
	}
	if len(up) == 0 {
		return nil
	}
	return errors.New(strings.Join(up, "; "))
}

// whenChecked returns a ticket answered when the next full status check
// of the instance of svc has ended (one that starts after this call: a
// check in progress is followed by a new one when the caller orders it
// with checkNow), at once when the instance cannot be checked here.
func (c *Core) whenChecked(svc string) Ticket {
	tk := c.newTicket()
	inst := c.insts[svc]
	if inst == nil || !inst.Local || !inst.Spec.Runnable {
		c.answer(Answer{Ticket: tk})
		return tk
	}
	inst.Chk.CheckWaiters = append(inst.Chk.CheckWaiters, tk)
	return tk
}

// watchTurn ends this node's watch of its restarted instance: failed once
// it is not up, ok once it stayed up for the rollout's monitor time, as a
// status check that ended after that time says (one is ordered then, so
// that a failure between two periodic checks is not taken for a success).
func (c *Core) watchTurn(svc string, inst *instsm.Instance, r *dataset.Rollout, m *dataset.RolloutMark, now time.Time) time.Time {
	if inst.Act.Busy != "" {
		return time.Time{}
	}
	if a := inst.Avail; a != dataset.StatusUp && a != dataset.StatusNA && c.state.SplitFrozen {
		// stopped by the split_action of a lost quorum: that says nothing
		// of the config (a failure would roll it back from the minority):
		// the turn is to take again, once this node holds the quorum
		c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnDelay, Cause: "stopped by split_action (quorum lost), not a failure: the turn is taken again"}, now)
		return time.Time{}
	}
	if a := inst.Avail; a != dataset.StatusUp && a != dataset.StatusNA {
		c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnFailed, Cause: fmt.Sprintf("%s within update_monitor after its restart", a)}, now)
		return time.Time{}
	}
	due := time.UnixMilli(m.SinceMs).Add(time.Duration(r.MonitorMs) * time.Millisecond)
	if now.Before(due) {
		return due
	}
	if inst.Chk.LastMon.Before(due) {
		c.check(svc, inst, true) // its end comes back here (rolloutChecked)
		return time.Time{}
	}
	c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnOK}, now)
	return time.Time{}
}

// rolloutChecked ends the watch of the local instance of svc for a
// rollout, if one is in progress (after a status check, and in every
// decision pass: watchTurns); it returns when to look again (zero: at the
// end of the next check, or never).
func (c *Core) rolloutChecked(svc string, inst *instsm.Instance, now time.Time) time.Time {
	ss := c.state.Services[svc]
	if m := ss.RolloutMark; m != nil && ss.Rollout != nil && m.ID == ss.Rollout.ID && m.State == dataset.TurnMonitoring {
		return c.watchTurn(svc, inst, ss.Rollout, m, now)
	}
	return time.Time{}
}

// watchTurns is rolloutChecked for the local instances of a pass (only:
// those of an incremental pass, nil for all).
func (c *Core) watchTurns(now time.Time, only []*instsm.Instance) (next time.Time) {
	list := c.ilist
	if only != nil {
		list = only
	}
	for _, inst := range list {
		if inst.Local {
			next = earliest(next, c.rolloutChecked(inst.Name, inst, now))
		}
	}
	return next
}
