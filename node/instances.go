package node

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
)

// InstanceInfo is what the core holds of an instance, for the driver's
// dataset and status.
type InstanceInfo struct {
	Local     bool
	Avail     dataset.Status
	Overall   dataset.Status
	Resources map[string]dataset.Resource // a copy
	Monitor   dataset.InstanceMonitor
	Leader    bool
	Flags     string
	Busy      string
}

// addInstance installs (or refreshes, after a config change) the instance
// of svc: a new one takes its local expect and start failed from the
// durable state, and its status is unknown until checked.
func (c *Core) addInstance(svc string, spec instsm.Spec, now time.Time) {
	c.install(svc)
	inst := c.insts[svc]
	if inst == nil {
		inst = &instsm.Instance{Avail: dataset.StatusUnknown, Overall: dataset.StatusUnknown, Res: map[string]dataset.Resource{},
			Mon: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone,
				LocalExpect: dataset.ExpectNone, StateSince: now}}
		ss := c.state.Services[svc]
		if ss.LocalExpect != "" {
			inst.Mon.LocalExpect = ss.LocalExpect
		}
		if ss.StartFailed {
			inst.Mon.State = dataset.StartFailed
		}
		inst.Name = svc
		c.insts[svc] = inst
		c.inames = append(c.inames, svc)
		sort.Strings(c.inames)
		c.relist()
	}
	c.nextCheck = time.Time{} // the periodic checks look again
	switch {
	case spec.Local:
		inst.Retiring = false
	case inst.Local && inst.Spec.Runnable && inst.Act.Busy != "":
		// removed while an action runs here: its end decides (a start
		// that ends up is stopped then, stopRetired)
		inst.Retiring = true
	case inst.Local && inst.Spec.Runnable:
		// This node was removed from the service's nodes while the
		// instance runs here: it is stopped, by the drivers of the config
		// that had it (the driver binds an action to the drivers of the
		// moment it is ordered: order it before installing the new ones).
		inst.Retiring = c.stopRetired(svc, inst, now)
	}
	inst.Local, inst.Spec = spec.Local, spec
	inst.Gen++
	c.publish()
}

// stopRetired stops the instance of a node removed from the service's
// nodes when it runs (up or warn), and reports whether it did: the stop and
// its check run with the drivers of the config that had the node.
func (c *Core) stopRetired(svc string, inst *instsm.Instance, now time.Time) bool {
	if inst.Avail != dataset.StatusUp && inst.Avail != dataset.StatusWarn {
		return false
	}
	const reason = "this node was removed from the service's nodes"
	prev := inst.Mon.State
	c.setMonitorState(svc, inst, dataset.Stopping, reason, now)
	c.beginAction(svc, inst, "stop", reason, now)
	inst.Act.PrevState = prev
	return true
}

// relist rebuilds the list of instances in name order.
func (c *Core) relist() {
	c.ilist = c.ilist[:0]
	for _, n := range c.inames {
		c.ilist = append(c.ilist, c.insts[n])
	}
}

// removeInstance forgets the instance of svc (its config was deleted).
func (c *Core) removeInstance(svc string) {
	if inst, ok := c.insts[svc]; ok {
		for _, tk := range inst.Chk.CheckWaiters {
			c.answer(Answer{Ticket: tk})
		}
		delete(c.insts, svc)
		for i, n := range c.inames {
			if n == svc {
				c.inames = append(c.inames[:i], c.inames[i+1:]...)
				break
			}
		}
		c.relist()
		delete(c.targetFailed, svc)
		delete(c.targetPending, svc)
		c.publish()
	}
}

// Instance returns what the core holds of the instance of svc.
func (c *Core) Instance(svc string) (InstanceInfo, bool) {
	inst := c.insts[svc]
	if inst == nil {
		return InstanceInfo{}, false
	}
	res := make(map[string]dataset.Resource, len(inst.Res))
	for k, v := range inst.Res {
		res[k] = v
	}
	return InstanceInfo{Local: inst.Local, Avail: inst.Avail, Overall: inst.Overall, Resources: res,
		Monitor: inst.Mon, Leader: inst.Leader, Flags: inst.Flags, Busy: inst.Act.Busy}, true
}

// Status returns the instance status (avail) of svc here, and whether it
// may run something a stop must end (monitor.EffectiveAvail up or warn:
// n/a and started counts).
func (c *Core) Status(svc string) (avail dataset.Status, running bool) {
	inst := c.insts[svc]
	if inst == nil {
		return dataset.StatusUnknown, false
	}
	switch monitor.EffectiveAvail(dataset.Instance{Avail: inst.Avail, Monitor: inst.Mon}) {
	case dataset.StatusDown, dataset.StatusNA:
		return inst.Avail, false
	}
	return inst.Avail, true
}

// Busy returns the action in flight on the instance of svc, "" if none.
func (c *Core) Busy(svc string) string {
	if inst := c.insts[svc]; inst != nil {
		return inst.Act.Busy
	}
	return ""
}

// AnyBusy reports whether an action is in flight on any instance.
func (c *Core) AnyBusy() bool {
	for _, inst := range c.insts {
		if inst.Act.Busy != "" {
			return true
		}
	}
	return false
}

// runAction orders the start or the stop of the local instance of svc
// (an admin's --local action, a daemon shutdown, a drain, a deletion):
// the monitor goes to starting or stopping and Ready.Run carries the
// order. The ticket is answered when the action ends (Err nil when it
// succeeded). It fails at once when an action is already in flight or
// the instance cannot run here.
func (c *Core) runAction(svc, kind, reason string, now time.Time) (Ticket, error) {
	inst := c.insts[svc]
	if inst == nil {
		return 0, fmt.Errorf("%s: no instance here", svc)
	}
	if inst.Act.Busy != "" {
		return 0, fmt.Errorf("%s: an action is already running (%s)", svc, inst.Act.Busy)
	}
	if !inst.Local {
		return 0, fmt.Errorf("%s: this node is not one of the service's nodes", svc)
	}
	if !inst.Spec.Runnable {
		if inst.Spec.Cause != "" {
			return 0, fmt.Errorf("%s: cannot run here: %s", svc, inst.Spec.Cause)
		}
		return 0, fmt.Errorf("%s: cannot run here", svc)
	}
	state := dataset.Starting
	switch kind {
	case "stop":
		state = dataset.Stopping
	case "restart":
		state = dataset.Restarting // the whole instance: Action.RID ""
	}
	prev := inst.Mon.State
	c.setMonitorState(svc, inst, state, reason, now)
	c.beginAction(svc, inst, kind, reason, now)
	inst.Act.PrevState = prev
	inst.Act.Caller = c.newTicket()
	return inst.Act.Caller, nil
}

func (c *Core) beginAction(svc string, inst *instsm.Instance, kind, reason string, now time.Time) {
	inst.Act.Busy = kind
	inst.Act.BusyAt = now
	inst.Act.Caller = 0
	inst.Act.PrevState = inst.Mon.State
	c.publish()
	if kind == "start" || kind == "restart" {
		c.noteRunDigest(svc)
	}
	token := c.fencingToken(svc)
	if kind == "start" {
		token = c.nextFencingToken(svc)
		inst.StartReason = reason
	}
	c.emit(ActionBegin{Svc: svc, Action: kind, Reason: reason, FencingToken: token})
	c.ready.Run = append(c.ready.Run, Action{Kind: kind, Service: svc, Reason: reason, FencingToken: token})
}

// setMonitorState changes the monitor state of an instance, with its event.
func (c *Core) setMonitorState(svc string, inst *instsm.Instance, s dataset.MonitorState, reason string, now time.Time) {
	if inst.Mon.State == s {
		return
	}
	c.emit(InstanceMonitor{Svc: svc, From: inst.Mon.State, To: s, Reason: reason})
	inst.Mon.State = s
	inst.Mon.StateSince = now
	c.publish()
}

// persistMonitor records what must survive a restart of the monitor.
func (c *Core) persistMonitor(svc string, inst *instsm.Instance) {
	c.setLocalState(svc, inst.Mon.State == dataset.StartFailed, inst.Mon.LocalExpect)
}

// persistMonitors records again what every local instance monitor
// observed (after a roll back, once the disk takes writes again).
func (c *Core) persistMonitors() {
	for _, svc := range slices.Sorted(maps.Keys(c.insts)) {
		if inst := c.insts[svc]; inst.Local {
			c.persistMonitor(svc, inst)
		}
	}
}

// noteRunDigest records that the instance of svc is (re)started whole on
// the config installed now.
func (c *Core) noteRunDigest(svc string) {
	ss := c.state.Services[svc]
	if ss.RunDigest == ss.ConfigDigest {
		return
	}
	ss.RunDigest = ss.ConfigDigest
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
}
