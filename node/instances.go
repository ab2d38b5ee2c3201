package node

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"haven/dataset"
	"haven/monitor"
)

// instance is the core's part of a service's instance on this node: its
// monitor (dataset.InstanceMonitor), the last decision's placement leader
// and flags, the action in flight, and the status from its checks. The
// driver runs its checks and actions.
type instance struct {
	name string
	// local is true when this node is one of the service's nodes.
	local bool
	spec  InstanceSpec
	// gen counts the installs of the instance (config changes): a check
	// of an older one is stale.
	gen uint64

	// the status, from the last checks
	res map[string]dataset.Resource
	// pubRes are the resources last published (published.go): never
	// written once handed out.
	pubRes  map[string]dataset.Resource
	avail   dataset.Status
	overall dataset.Status
	// chk is the instance's status checks (checks.go).
	chk instChecks
	// act is the action in flight.
	act    inFlight
	mon    dataset.InstanceMonitor
	leader bool
	flags  string
	// retiring: this node was removed from the service's nodes while the
	// instance ran here; its stop and the check that ends it run with the
	// drivers of the config that had it (the driver keeps them).
	retiring bool
	// multi is what the rule of a service up on several nodes keeps
	// (multiactive.go).
	multi instMulti
	// lad is the instance's place on the restart ladder (ladder.go).
	lad instLadder
	// ranElsewhere is the node where the service was last seen running
	// while not here (failover.go); startReason is the reason of the
	// last start ordered.
	ranElsewhere, startReason string
	// fa is the ready window of the instance (fastack.go).
	fa instFastAck
}

// inFlight is the action in flight on an instance, and how long the last
// ones took.
type inFlight struct {
	// caller is the ticket answered when the action in flight ends (0:
	// none); prevState is the monitor state before it, for actionAborted.
	caller    Ticket
	prevState dataset.MonitorState
	busy      string // the action in flight: "start" | "stop"
	// busyAt is when the action in flight began; lastStart and lastStop
	// how long the last start and stop took (dataset.Instance.LastStartMs).
	busyAt              time.Time
	lastStart, lastStop time.Duration
}

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
func (c *Core) addInstance(svc string, spec InstanceSpec, now time.Time) {
	c.install(svc)
	inst := c.insts[svc]
	if inst == nil {
		inst = &instance{avail: dataset.StatusUnknown, overall: dataset.StatusUnknown, res: map[string]dataset.Resource{},
			mon: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone,
				LocalExpect: dataset.ExpectNone, StateSince: now}}
		ss := c.state.Services[svc]
		if ss.LocalExpect != "" {
			inst.mon.LocalExpect = ss.LocalExpect
		}
		if ss.StartFailed {
			inst.mon.State = dataset.StartFailed
		}
		inst.name = svc
		c.insts[svc] = inst
		c.inames = append(c.inames, svc)
		sort.Strings(c.inames)
		c.relist()
	}
	c.nextCheck = time.Time{} // the periodic checks look again
	switch {
	case spec.Local:
		inst.retiring = false
	case inst.local && inst.spec.Runnable && inst.act.busy != "":
		// removed while an action runs here: its end decides (a start
		// that ends up is stopped then, stopRetired)
		inst.retiring = true
	case inst.local && inst.spec.Runnable:
		// This node was removed from the service's nodes while the
		// instance runs here: it is stopped, by the drivers of the config
		// that had it (the driver binds an action to the drivers of the
		// moment it is ordered: order it before installing the new ones).
		inst.retiring = c.stopRetired(svc, inst, now)
	}
	inst.local, inst.spec = spec.Local, spec
	inst.gen++
	c.publish()
}

// stopRetired stops the instance of a node removed from the service's
// nodes when it runs (up or warn), and reports whether it did: the stop and
// its check run with the drivers of the config that had the node.
func (c *Core) stopRetired(svc string, inst *instance, now time.Time) bool {
	if inst.avail != dataset.StatusUp && inst.avail != dataset.StatusWarn {
		return false
	}
	const reason = "this node was removed from the service's nodes"
	prev := inst.mon.State
	c.setMonitorState(svc, inst, dataset.Stopping, reason, now)
	c.beginAction(svc, inst, "stop", reason, now)
	inst.act.prevState = prev
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
		for _, tk := range inst.chk.checkWaiters {
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
	res := make(map[string]dataset.Resource, len(inst.res))
	for k, v := range inst.res {
		res[k] = v
	}
	return InstanceInfo{Local: inst.local, Avail: inst.avail, Overall: inst.overall, Resources: res,
		Monitor: inst.mon, Leader: inst.leader, Flags: inst.flags, Busy: inst.act.busy}, true
}

// Status returns the instance status (avail) of svc here, and whether it
// may run something a stop must end (monitor.EffectiveAvail up or warn:
// n/a and started counts).
func (c *Core) Status(svc string) (avail dataset.Status, running bool) {
	inst := c.insts[svc]
	if inst == nil {
		return dataset.StatusUnknown, false
	}
	switch monitor.EffectiveAvail(dataset.Instance{Avail: inst.avail, Monitor: inst.mon}) {
	case dataset.StatusDown, dataset.StatusNA:
		return inst.avail, false
	}
	return inst.avail, true
}

// Busy returns the action in flight on the instance of svc, "" if none.
func (c *Core) Busy(svc string) string {
	if inst := c.insts[svc]; inst != nil {
		return inst.act.busy
	}
	return ""
}

// AnyBusy reports whether an action is in flight on any instance.
func (c *Core) AnyBusy() bool {
	for _, inst := range c.insts {
		if inst.act.busy != "" {
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
	if inst.act.busy != "" {
		return 0, fmt.Errorf("%s: an action is already running (%s)", svc, inst.act.busy)
	}
	if !inst.local {
		return 0, fmt.Errorf("%s: this node is not one of the service's nodes", svc)
	}
	if !inst.spec.Runnable {
		if inst.spec.Cause != "" {
			return 0, fmt.Errorf("%s: cannot run here: %s", svc, inst.spec.Cause)
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
	prev := inst.mon.State
	c.setMonitorState(svc, inst, state, reason, now)
	c.beginAction(svc, inst, kind, reason, now)
	inst.act.prevState = prev
	inst.act.caller = c.newTicket()
	return inst.act.caller, nil
}

// actionAborted reports that an ordered action was not run (the state
// write it waited on failed): the instance is no longer busy, its monitor
// goes back to the state before, and the action's ticket gets err.
func (c *Core) actionAborted(svc, kind string, err error, now time.Time) {
	inst := c.insts[svc]
	if inst == nil || inst.act.busy != kind {
		return
	}
	inst.act.busy = ""
	c.nextCheck = time.Time{}
	c.setMonitorState(svc, inst, inst.act.prevState, "not run: "+err.Error(), now)
	c.actionAnswered(inst, err)
}

// actionAnswered answers the caller of the instance's action, if any.
func (c *Core) actionAnswered(inst *instance, err error) {
	tk := inst.act.caller
	if tk == 0 {
		return
	}
	inst.act.caller = 0
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

func (c *Core) beginAction(svc string, inst *instance, kind, reason string, now time.Time) {
	inst.act.busy = kind
	inst.act.busyAt = now
	inst.act.caller = 0
	inst.act.prevState = inst.mon.State
	c.publish()
	token := c.fencingToken(svc)
	if kind == "start" {
		token = c.nextFencingToken(svc)
		inst.startReason = reason
	}
	c.emit(ActionBegin{Svc: svc, Action: kind, Reason: reason, FencingToken: token})
	c.ready.Run = append(c.ready.Run, Action{Kind: kind, Service: svc, Reason: reason, FencingToken: token})
}

// finishAction ends an action once the status check that followed it has
// ended: the monitor takes AfterStart / AfterStop (and Failure), and what
// must survive a restart is persisted.
func (c *Core) finishAction(svc string, inst *instance, kind string, err error, now time.Time) {
	inst.act.busy = ""
	if took := now.Sub(inst.act.busyAt); !inst.act.busyAt.IsZero() && took >= 0 && err == nil {
		switch kind {
		case "start", "restart":
			if inst.lad.restartRID == "" { // not one resource's restart (the ladder)
				inst.act.lastStart = took
			}
		case "stop":
			inst.act.lastStop = took
		}
	}
	inst.act.busyAt = time.Time{}
	c.publish()
	if kind == "restart" && inst.lad.restartRID != "" {
		// the ladder goes on from the check that followed (ladder.go)
		inst.lad.restartRID = ""
		if rid, _, _ := c.downMonitored(inst); rid == "" && inst.mon.State == dataset.Restarting {
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
			inst.sawUp(spec.RID)
		}
	}
	if kind == "start" && err == nil {
		// a fresh run: a new ladder
		c.resetLadder(svc, "the instance started", now, true)
	}
	var next dataset.InstanceMonitor
	if kind == "start" {
		next = monitor.AfterStart(inst.mon, err == nil, now)
	} else {
		next = monitor.AfterStop(inst.mon, err == nil, now)
	}
	reason := kind + " succeeded"
	if err != nil {
		reason = err.Error()
		next = monitor.Failure(next, reason)
	}
	c.setMonitorState(svc, inst, next.State, reason, now)
	inst.mon = next
	c.persistMonitor(svc, inst)
	if kind == "start" && err == nil {
		c.noteStarted(svc, inst)
	}
}

// clearLocal resets a failed monitor state of the local instance of svc
// (svcmgr clear, here or heard from a peer); false when it is not failed.
func (c *Core) clearLocal(svc, reason string, now time.Time) bool {
	inst := c.insts[svc]
	if inst == nil || !inst.local {
		return false
	}
	// the restart ladder's counters, give-up and exclusion go too
	reset := c.resetLadder(svc, reason, now, true)
	if !inst.mon.State.Failed() {
		return reset
	}
	next := monitor.Clear(inst.mon, now)
	c.setMonitorState(svc, inst, next.State, reason, now)
	inst.mon = next
	c.persistMonitor(svc, inst)
	return true
}

// setMonitorState changes the monitor state of an instance, with its event.
func (c *Core) setMonitorState(svc string, inst *instance, s dataset.MonitorState, reason string, now time.Time) {
	if inst.mon.State == s {
		return
	}
	c.emit(InstanceMonitor{Svc: svc, From: inst.mon.State, To: s, Reason: reason})
	inst.mon.State = s
	inst.mon.StateSince = now
	c.publish()
}

// persistMonitor records what must survive a restart of the monitor.
func (c *Core) persistMonitor(svc string, inst *instance) {
	c.setLocalState(svc, inst.mon.State == dataset.StartFailed, inst.mon.LocalExpect)
}

// persistMonitors records again what every local instance monitor
// observed (after a roll back, once the disk takes writes again).
func (c *Core) persistMonitors() {
	for _, svc := range slices.Sorted(maps.Keys(c.insts)) {
		if inst := c.insts[svc]; inst.local {
			c.persistMonitor(svc, inst)
		}
	}
}

// Dataset fills what the core owns of this node's dataset entry in n
// (which holds the driver's part: name, labels, load, configs,
// generation): the node monitor, the frozen flag, the compat, the
// targets and clears it relays, and every local instance.
func (c *Core) Dataset(n dataset.Node) dataset.Node {
	n.Monitor = c.monitor
	n.Frozen = c.state.NodeFrozen
	n.FrozenReason = c.state.NodeFrozenReason
	n.SplitFrozen, n.SplitFrozenReason = c.state.SplitFrozen, c.state.SplitFrozenReason
	n.Compat = c.cfg.Compat
	n.Conf = c.cfg.ClusterConf
	n.Format = c.localFormat()
	n.Targets = c.Targets()
	n.Clears = c.clears()
	if c.quorumOn() {
		n.SplitAction = c.cfg.Quorum.SplitAction
	}
	n.Guard = c.guardInfo()
	if len(n.Services) == 0 {
		// sized once: grown entry by entry, the map of 2,000 instances
		// was copied over a dozen times
		n.Services = make(map[string]dataset.Instance, len(c.ilist))
	}
	for _, inst := range c.ilist {
		if !inst.local && !inst.retiring && inst.mon.State != dataset.StopFailed {
			// not one of the service's nodes; one just removed from them
			// shows its instance until it stopped (or failed to: then
			// the others still see it running here)
			continue
		}
		ss := c.state.Services[inst.name]
		n.Services[inst.name] = dataset.Instance{
			Excluded:        excludedText(ss.Excluded, inst),
			GaveUp:          ss.GaveUp,
			Avail:           inst.avail,
			Overall:         inst.overall,
			Frozen:          ss.Frozen,
			Monitor:         inst.mon,
			PlacementLeader: inst.leader,
			Flags:           inst.flags,
			Resources:       publishedResources(inst, ss),
			ConfigVersion:   ss.ConfigVersion,
			FencingToken:    ss.FencingToken,
			FencingSeen:     ss.FencingSeen,
			ReadyAck:        inst.fa.ack,
			LastStartMs:     inst.act.lastStart.Milliseconds(),
			LastStopMs:      inst.act.lastStop.Milliseconds(),
		}
	}
	return n
}

// sawUp records that the resource rid was up, or started, in this run.
func (inst *instance) sawUp(rid string) {
	if inst.lad.upSeen == nil {
		inst.lad.upSeen = map[string]bool{}
	}
	inst.lad.upSeen[rid] = true
}
