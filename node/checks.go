package node

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"haven/dataset"
	"haven/dataset/status"
)

// instChecks are the status checks of an instance.
type instChecks struct {
	// checking is set while a check runs; pendingCheck asks for a full
	// one as soon as it ends; lastFull and lastMon are the last ends.
	checking          bool
	pendingCheck      bool
	lastFull, lastMon time.Time
	// ending is the action whose commands ended, waiting on the full
	// check that follows (at endAt).
	ending *actionEnd
	endAt  time.Time
	// checkWaiters are answered when the next full check ends.
	checkWaiters []Ticket
	// faults are the hard and fatal faults of the last check, to act on
	// each once (faults.go).
	faults string
}

// actionEnd is the end of an action's commands, waiting on the full
// check that follows.
type actionEnd struct {
	kind string
	err  error
}

// InstanceSpec is what the driver says of an instance when it installs it.
type InstanceSpec struct {
	// Local is true when this node is one of the service's nodes.
	Local bool
	// Runnable is true when the driver could build its resource drivers
	// here: only then is it checked and are actions run.
	Runnable bool
	// Monitored is true when it has monitored resources (checked every
	// monitor interval, between the full checks).
	Monitored bool
	// Cause says why it is not Runnable (in the refusals of actions).
	Cause string
	// Resources are its resources in start order (the disabled ones left
	// out), MonitorAction the service's monitor_action: the restart
	// ladder's settings (ladder.go).
	Resources     []ResourceSpec
	MonitorAction string
}

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
func (c *Core) check(svc string, inst *instance, full bool) {
	if (!inst.local || !inst.spec.Runnable) && !inst.retiring {
		c.afterFullCheck(svc, inst)
		return
	}
	if inst.chk.checking {
		if full {
			inst.chk.pendingCheck = true
		}
		return
	}
	inst.chk.checking = true
	c.ready.Check = append(c.ready.Check, Check{Service: svc, Full: full, Gen: inst.gen, FencingToken: c.fencingToken(svc)})
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
	inst.chk.checking = false
	if ck.Full {
		inst.chk.lastFull = now
	}
	inst.chk.lastMon = now
	if due := c.checkDue(inst); !c.nextCheck.IsZero() && due.Before(c.nextCheck) {
		c.nextCheck = due
	}
	if ck.Gen != inst.gen {
		// the config changed meanwhile: this result is stale
		c.check(svc, inst, true)
		return
	}
	if ck.Full && inst.chk.pendingCheck {
		// an action ended while this check ran: only the next one counts
		inst.chk.pendingCheck = false
		c.check(svc, inst, true)
		return
	}
	for _, rid := range slices.Sorted(maps.Keys(res)) {
		r := res[rid]
		if old, ok := inst.res[rid]; ok && old.Status != r.Status {
			c.emit(ResourceStatus{Svc: svc, RID: rid, From: old.Status, To: r.Status, Reason: r.Log})
		}
		inst.res[rid] = r
		if r.Status == dataset.StatusUp {
			inst.sawUp(rid)
		}
	}
	if ck.Full {
		for rid := range inst.res {
			if _, ok := res[rid]; !ok {
				delete(inst.res, rid)
			}
		}
	}
	avail, overall := status.Instance(inst.res)
	if avail != inst.avail || overall != inst.overall {
		c.emit(InstanceStatus{Svc: svc, From: inst.avail, To: avail, Overall: overall})
		inst.avail, inst.overall = avail, overall
		c.publish()
	}
	if inst.chk.pendingCheck {
		inst.chk.pendingCheck = false
		c.check(svc, inst, true)
		return
	}
	if ck.Full {
		c.afterFullCheck(svc, inst)
	}
	c.resourceFaults(svc, inst, now)
	c.ladder(svc, inst, now)
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
		if inst.act.busy != "" || inst.chk.checking || !inst.local || !inst.spec.Runnable {
			continue
		}
		switch {
		case !now.Before(c.fullDue(inst)):
			c.check(inst.name, inst, true)
		case inst.spec.Monitored && now.Sub(inst.chk.lastMon) >= c.cfg.MonitorInterval:
			c.check(inst.name, inst, false)
		default:
			if due := c.checkDue(inst); next.IsZero() || due.Before(next) {
				next = due
			}
		}
	}
	c.nextCheck = next
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
func (c *Core) fullDue(inst *instance) time.Time {
	due := inst.chk.lastFull.Add(c.cfg.CheckInterval)
	if slot := c.cfg.CheckInterval / checkSlots; slot > 0 {
		if d := due.Truncate(slot); d.After(inst.chk.lastFull) {
			due = d
		}
	}
	return due
}

// checkDue is the time of the next periodic check of an instance.
func (c *Core) checkDue(inst *instance) time.Time {
	due := c.fullDue(inst)
	if m := inst.chk.lastMon.Add(c.cfg.MonitorInterval); inst.spec.Monitored && m.Before(due) {
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
	inst.chk.ending = &actionEnd{kind: kind, err: err}
	inst.chk.endAt = now
	c.check(svc, inst, true)
}

// afterFullCheck answers those who waited on the status check
// (whenChecked) and ends the action that waited on it.
func (c *Core) afterFullCheck(svc string, inst *instance) {
	for _, tk := range inst.chk.checkWaiters {
		c.answer(Answer{Ticket: tk})
	}
	inst.chk.checkWaiters = nil
	end := inst.chk.ending
	if end == nil {
		return
	}
	inst.chk.ending = nil
	if end.kind == "stop" && end.err == nil {
		// the commands said ok, the check says otherwise: the check wins
		if end.err = stillUp(inst.res); end.err != nil {
			c.emit(ActionEnd{Svc: svc, Action: "stop", Err: end.err.Error()})
		}
	}
	c.finishAction(svc, inst, end.kind, end.err, inst.chk.endAt)
	c.actionAnswered(inst, end.err)
	if !inst.local && inst.retiring {
		// the node was removed from the service's nodes: after its stop
		// the old drivers are done; after another action (a start in
		// flight at the removal) what runs is stopped now
		inst.retiring = end.kind != "stop" && inst.act.busy == "" && c.stopRetired(svc, inst, inst.chk.endAt)
	}
	if c.shutdown && end.kind == "start" && inst.local && inst.spec.Runnable {
		// a start that was running when the shutdown came: the shutdown
		// stops what it started, or the daemon would exit with the service
		// running (found by the chaos suite's SimulStart)
		if _, running := c.Status(svc); running {
			c.runAction(svc, "stop", "daemon shutdown (the start in flight ended)", inst.chk.endAt)
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
	if inst == nil || !inst.local || !inst.spec.Runnable {
		c.answer(Answer{Ticket: tk})
		return tk
	}
	inst.chk.checkWaiters = append(inst.chk.checkWaiters, tk)
	return tk
}
