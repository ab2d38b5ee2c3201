package node

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/planted"
	"haven/monitor"
	"haven/node/instsm"
)

// The restart ladder (docs/behaviour.md 4): a monitored resource found down where
// the instance runs (local expect started, idle, not frozen) is restarted
// alone (Action "restart" with its RID: a stop then a start of that
// resource only), up to its `restart` times, `restart_delay` after each
// failure; the monitor state is `restarting` meanwhile. When none is left,
// the service's monitor_action runs (`tocing`), only if another candidate
// node exists: freezestop (freeze, stop), switch (exclude this node, stop),
// crash or reboot (a NodeAction). With no other candidate, or with
// monitor_action none, the daemon gives up (Instance.GaveUp): an event, and
// nothing more until a clear, a start, or the resource is up again; the
// instance keeps no expectation to run (local expect none). An instance
// down here while the service is up on another node drops it too: the
// ladder is only the one of the node where the service runs and ran last,
// so a later failure there is never restarted here as well.
//
// The counters are durable (ServiceState.Restarts): a daemon restart does
// not give the restarts back. A failure is forgotten (its restart given
// back) once the resource is up and the failure is RestartStable old
// (Pacemaker's failure-timeout): a restart that brings the resource up
// keeps its count spent until then. A successful start of the instance, a
// clear, or the service up on another node while it is down here reset
// every counter, the exclusion and GaveUp.

// RestartStableMin is the least stabilisation time of the restart ladder;
// it is at least twice monitor_interval (StableAfter).
const RestartStableMin = 60 * time.Second

// StableAfter is how long after its last failure a resource that is up
// gets its restarts back: max(RestartStableMin, 2 x monitor_interval).
func StableAfter(monitorInterval time.Duration) time.Duration {
	if d := 2 * monitorInterval; d > RestartStableMin {
		return d
	}
	return RestartStableMin
}

// LadderSpecs are what the restart ladder reads of the resources of cfg
// (the disabled ones left out), in start order: the drivers put them in
// InstanceSpec.Resources.
func LadderSpecs(cfg *config.ServiceConfig) []instsm.ResourceSpec {
	var out []instsm.ResourceSpec
	for _, r := range cfg.Resources {
		if !r.Disable {
			out = append(out, instsm.ResourceSpec{RID: r.RID, Monitor: r.Monitor, Restart: r.Restart, RestartDelay: r.RestartDelay,
				RestartDelayMax: r.RestartDelayMax, RestartWindow: r.RestartWindow})
		}
	}
	return out
}

// RestartDelay is the wait before the restart number attempt (from 1) of
// the ladder of spec: restart_delay x 2^(attempt-1), at most
// restart_delay_max (0, or less than restart_delay: restart_delay, no
// backoff).
func RestartDelay(spec instsm.ResourceSpec, attempt int) time.Duration {
	d, most := spec.RestartDelay, max(spec.RestartDelayMax, spec.RestartDelay)
	for i := 1; i < attempt && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// Monitor actions (DEFAULT.monitor_action).
const (
	MonitorActionNone       = "none"
	MonitorActionFreezeStop = "freezestop"
	MonitorActionSwitch     = "switch"
	MonitorActionCrash      = "crash"
	MonitorActionReboot     = "reboot"
)

// ladder runs one step of the restart ladder of a local instance: after
// each status check, and at each decision pass (a restart whose delay is
// over). now is the input's time.
func (c *Core) ladder(svc string, inst *instsm.Instance, now time.Time) {
	if !inst.Local || !inst.Spec.Runnable || inst.Act.Busy != "" || inst.Chk.Ending != nil || inst.Chk.Checking || c.stopping {
		return
	}
	c.expireFailures(svc, inst, now)
	c.slideWindows(svc, inst, now)
	ss := c.state.Services[svc]
	st := inst.Mon.State
	hold := ""
	switch {
	case inst.Mon.LocalExpect != dataset.ExpectStarted && ss.GaveUp == "":
		// (a gave-up instance expects to run no more: it only looks
		// whether its resources came up again, below)
		hold = "the instance is not started here"
	case st != dataset.Idle && st != dataset.Restarting:
		hold = "the instance is " + string(st)
	case ss.Frozen:
		hold = "instance frozen"
	case c.state.NodeFrozen:
		hold = "node frozen"
	case c.state.SplitFrozen:
		hold = "node frozen by its split_action"
	case inst.Lad.UpElsewhere != "" && !c.isFlex(svc):
		// (a flex service runs elsewhere on purpose: each instance's
		// ladder is its own)
		hold = "the service is up on " + inst.Lad.UpElsewhere
	case c.isFlex(svc) && flexUpWithout(inst, c.cfg.Name):
		// a flex instance down here whose slot another node took (its
		// start or a rollout's restart failed, the flex rules refilled
		// the target): a start in place would be one more than the
		// target, maybe above flex_max
		hold = "the flex target is up without this instance (" + strings.Join(inst.Flex.Up, ", ") + ")"
	}
	if hold != "" {
		inst.Lad.PendRID = ""
		if st == dataset.Restarting {
			c.setMonitorState(svc, inst, dataset.Idle, "restart cancelled: "+hold, now)
		}
		return
	}
	rid, res, spec := c.downMonitored(inst)
	if ss.GaveUp != "" {
		if allMonitoredUp(inst) {
			// it runs here again: the ladder is back, and the expectation
			c.resetLadder(svc, "every monitored resource is up again", now, false)
			c.expect(svc, inst, dataset.ExpectStarted)
			return
		}
		if ss.ActionHeld != "" && rid != "" {
			c.heldAction(svc, inst, rid, spec, now)
		}
		return
	}
	if rid == "" {
		inst.Lad.PendRID = ""
		if st == dataset.Restarting {
			c.setMonitorState(svc, inst, dataset.Idle, "monitored resources up", now)
		}
		return
	}
	if inst.Lad.PendRID != rid {
		// a new failure
		cnt := ss.Restarts[rid]
		cnt.LastFailure, cnt.FailedAt = failureText(res), now
		c.setRestartCount(svc, rid, cnt)
		left := spec.Restart - cnt.Spent
		delay := RestartDelay(spec, cnt.Spent+1)
		c.emit(ResourceFailed{Svc: svc, RID: rid, Reason: cnt.LastFailure, Remaining: max(left, 0), Delay: delay.String()})
		if left <= 0 {
			inst.Lad.PendRID = ""
			c.monitorAction(svc, inst, rid, spec, now)
			return
		}
		inst.Lad.PendRID, inst.Lad.PendAt = rid, now.Add(delay)
		c.setMonitorState(svc, inst, dataset.Restarting,
			fmt.Sprintf("%s down: restart %d of %d%s in %s", rid, cnt.Spent+1, spec.Restart, windowText(spec), delay), now)
	}
	if now.Before(inst.Lad.PendAt) {
		c.wakeAt(inst.Lad.PendAt)
		return
	}
	cnt := ss.Restarts[rid]
	cnt.Spent++
	if spec.RestartWindow > 0 {
		cnt.At = append(slices.Clip(cnt.At), now)
	}
	c.setRestartCount(svc, rid, cnt)
	inst.Lad.PendRID = ""
	c.beginRestart(svc, inst, rid, fmt.Sprintf("%s down: restart %d of %d%s", rid, cnt.Spent, spec.Restart, windowText(spec)))
}

// ladderAll runs the ladder of every local instance (a decision pass); it
// reports whether it changed anything.
func (c *Core) ladderAll(now time.Time) bool {
	n := len(c.ready.Events)
	for _, inst := range c.passInstances() {
		c.ladder(inst.Name, inst, now)
	}
	return len(c.ready.Events) != n
}

// downMonitored returns the first monitored resource (in start order)
// whose last check says down, with its status and spec; "" when none. A
// resource not seen up (nor started) in this run of the daemon is left
// out: found down at start, it is no failure of a running instance.
func (c *Core) downMonitored(inst *instsm.Instance) (string, dataset.Resource, instsm.ResourceSpec) {
	for _, spec := range monitoredSpecs(inst) {
		if r, ok := inst.Res[spec.RID]; ok && r.Status == dataset.StatusDown && !r.Disabled && inst.Lad.UpSeen[spec.RID] {
			return spec.RID, r, spec
		}
	}
	return "", dataset.Resource{}, instsm.ResourceSpec{}
}

// allMonitoredUp reports whether the instance has monitored resources and
// the last check found every one up.
func allMonitoredUp(inst *instsm.Instance) bool {
	specs := monitoredSpecs(inst)
	for _, spec := range specs {
		if r, ok := inst.Res[spec.RID]; !ok || r.Status != dataset.StatusUp {
			return false
		}
	}
	return len(specs) > 0
}

func monitoredSpecs(inst *instsm.Instance) []instsm.ResourceSpec {
	var out []instsm.ResourceSpec
	for _, s := range inst.Spec.Resources {
		if s.Monitor {
			out = append(out, s)
		}
	}
	return out
}

func failureText(r dataset.Resource) string {
	if r.Log != "" {
		return "check says down: " + r.Log
	}
	return "check says down"
}

// beginRestart orders the restart of one resource (stop, then start, of
// that resource only); actionDone with kind "restart" ends it.
func (c *Core) beginRestart(svc string, inst *instsm.Instance, rid, reason string) {
	inst.Act.Busy = "restart"
	inst.Lad.RestartRID = rid
	inst.Act.Caller = 0
	inst.Act.PrevState = inst.Mon.State
	c.publish()
	c.emit(ActionBegin{Svc: svc, Action: "restart " + rid, Reason: reason})
	c.ready.Run = append(c.ready.Run, Action{Kind: "restart", Service: svc, RID: rid, Reason: reason})
}

// monitorAction runs the service's monitor_action once the restarts of rid
// are spent, only when another candidate node exists; else it gives up.
func (c *Core) monitorAction(svc string, inst *instsm.Instance, rid string, spec instsm.ResourceSpec, now time.Time) {
	why := fmt.Sprintf("%s down, %d restarts spent", rid, spec.Restart)
	act := inst.Spec.MonitorAction
	if act == "" || act == MonitorActionNone {
		c.giveUp(svc, inst, why+": monitor_action none: nothing more is done (svcmgr clear or restart)", now)
		return
	}
	others := monitor.OtherCandidates(c.Snapshot(now), svc)
	if len(others) == 0 {
		c.giveUp(svc, inst, why+": monitor_action "+act+" not run: no other candidate node", now)
		if act == MonitorActionSwitch || act == MonitorActionFreezeStop {
			// run once another candidate appears (heldAction): a peer
			// frozen by its split_action, or down, may come back. A crash
			// or a reboot is not deferred: it would take the node down
			// long after the failure
			ss := c.state.Services[svc]
			ss.ActionHeld = act
			c.state.Services[svc] = ss
			c.persist()
		}
		return
	}
	reason := why + ": monitor_action " + act + " (next candidate " + others[0] + ")"
	c.giveUp(svc, inst, reason, now)
	c.emit(MonitorActionTaken{Svc: svc, Action: act, Reason: reason})
	switch act {
	case MonitorActionFreezeStop:
		c.setFrozen(svc, true, reason)
		c.beginTocStop(svc, inst, reason, now)
	case MonitorActionSwitch:
		ss := c.state.Services[svc]
		ss.Excluded = reason
		c.state.Services[svc] = ss
		c.persist()
		c.publish()
		c.beginTocStop(svc, inst, reason, now)
	case MonitorActionCrash:
		c.nodeAction(NodeCrash, svc+": "+reason)
	case MonitorActionReboot:
		c.nodeAction(NodeReboot, svc+": "+reason)
	}
}

// heldAction runs the monitor_action that the ladder of svc gave up
// without, for want of another candidate, once one exists: the resource
// rid is still down here, nothing else reset the ladder.
func (c *Core) heldAction(svc string, inst *instsm.Instance, rid string, spec instsm.ResourceSpec, now time.Time) {
	if len(monitor.OtherCandidates(c.Snapshot(now), svc)) == 0 {
		return
	}
	ss := c.state.Services[svc]
	ss.ActionHeld = ""
	c.state.Services[svc] = ss
	c.persist()
	c.monitorAction(svc, inst, rid, spec, now) // the service's monitor_action now

}

// beginTocStop stops the instance for its monitor_action (state tocing);
// the stop ends as any stop (idle, or stop failed).
func (c *Core) beginTocStop(svc string, inst *instsm.Instance, reason string, now time.Time) {
	prev := inst.Mon.State
	c.setMonitorState(svc, inst, dataset.Tocing, reason, now)
	c.beginAction(svc, inst, "stop", reason, now)
	inst.Act.PrevState = prev
}

// giveUp records that the ladder of the instance ended (durable): the
// orchestrator does not start it again by itself until it is reset, and
// the instance keeps no expectation to run (local expect none): once the
// service ran elsewhere, this node's ladder is not the one to restart it.
func (c *Core) giveUp(svc string, inst *instsm.Instance, reason string, now time.Time) {
	ss := c.state.Services[svc]
	ss.GaveUp = reason
	c.state.Services[svc] = ss
	if !planted.On(planted.GaveUpKeeps) {
		c.expect(svc, inst, dataset.ExpectNone)
	}
	c.persist()
	c.publish()
	c.emit(LadderGaveUp{Svc: svc, Reason: reason})
	if inst.Mon.State == dataset.Restarting {
		c.setMonitorState(svc, inst, dataset.Idle, reason, now)
	}
}

// setRestartCount writes the counter of rid (a new map: the state handed
// to the driver shares nothing that changes).
func (c *Core) setRestartCount(svc, rid string, cnt RestartCount) {
	ss := c.state.Services[svc]
	m := make(map[string]RestartCount, len(ss.Restarts)+1)
	for k, v := range ss.Restarts {
		m[k] = v
	}
	m[rid] = cnt
	ss.Restarts = m
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
}

// expireFailures gives their restarts back to the resources that are up
// and whose last failure is older than StableAfter.
func (c *Core) expireFailures(svc string, inst *instsm.Instance, now time.Time) {
	ss := c.state.Services[svc]
	if len(ss.Restarts) == 0 || ss.GaveUp != "" {
		return
	}
	stable := StableAfter(c.cfg.MonitorInterval)
	for _, rid := range slices.Sorted(maps.Keys(ss.Restarts)) {
		cnt := ss.Restarts[rid]
		r, ok := inst.Res[rid]
		if !ok || r.Status != dataset.StatusUp || now.Sub(cnt.FailedAt) < stable {
			continue
		}
		if cnt.Spent > 0 {
			c.emit(RestartsReset{Svc: svc, RID: rid, Reason: fmt.Sprintf("up, last failure %s ago (stabilisation %s)", now.Sub(cnt.FailedAt).Round(time.Second), stable)})
		}
		m := make(map[string]RestartCount, len(ss.Restarts))
		for k, v := range ss.Restarts {
			if k != rid {
				m[k] = v
			}
		}
		if len(m) == 0 {
			m = nil
		}
		ss.Restarts = m
		c.state.Services[svc] = ss
		c.persist()
		c.publish()
	}
}

// slideWindows forgets the restarts of the local instance's resources
// that are older than their restart_window: they count no more against
// restart, nor in the backoff. The give-up stays (a clear, a start, or the
// resource up again ends it).
func (c *Core) slideWindows(svc string, inst *instsm.Instance, now time.Time) {
	if c.state.Services[svc].GaveUp != "" {
		return
	}
	for _, spec := range monitoredSpecs(inst) {
		cnt, ok := c.state.Services[svc].Restarts[spec.RID]
		if !ok || spec.RestartWindow <= 0 {
			continue
		}
		keep := cnt.At
		for len(keep) > 0 && now.Sub(keep[0]) >= spec.RestartWindow {
			keep = keep[1:]
		}
		gone := len(cnt.At) - len(keep)
		if gone == 0 {
			continue
		}
		// (restarts counted before the window was set have no time: they
		// stay counted until a reset)
		cnt.At, cnt.Spent = slices.Clone(keep), max(cnt.Spent-gone, 0)
		c.setRestartCount(svc, spec.RID, cnt)
		c.emit(RestartsReset{Svc: svc, RID: spec.RID, Reason: fmt.Sprintf("%d restart(s) older than restart_window %s no longer count", gone, spec.RestartWindow)})
	}
}

// windowText is " within W" for a resource with a restart_window.
func windowText(spec instsm.ResourceSpec) string {
	if spec.RestartWindow <= 0 {
		return ""
	}
	return " within " + spec.RestartWindow.String()
}

// resetLadder forgets the ladder of svc: counters, GaveUp, and with
// exclusion the switch's exclusion too. It reports whether anything was
// reset.
func (c *Core) resetLadder(svc, reason string, now time.Time, exclusion bool) bool {
	ss := c.state.Services[svc]
	if len(ss.Restarts) == 0 && ss.GaveUp == "" && (!exclusion || ss.Excluded == "") {
		return false
	}
	ss.Restarts, ss.GaveUp, ss.ActionHeld = nil, "", ""
	if exclusion {
		ss.Excluded = ""
	}
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
	c.emit(RestartsReset{Svc: svc, Reason: reason})
	if inst := c.insts[svc]; inst != nil {
		inst.Lad.PendRID = ""
	}
	return true
}

// watchLadders resets the ladder of the local instances that are down
// here while the service is up on another node (the switch's exclusion
// ends: never a ping-pong back, as the service runs elsewhere), and drops
// their expectation to run: the service ran last on that node, so a later
// failure there is that node's ladder's, never this one's.
func (c *Core) watchLadders(s monitor.Snapshot, now time.Time) {
	for _, inst := range c.passInstances() {
		if inst.Local {
			inst.Lad.UpElsewhere = c.upElsewhere(s, inst.Name)
			if inst.Lad.UpElsewhere != "" && inst.Act.Busy == "" && inst.Avail == dataset.StatusDown && !c.isFlex(inst.Name) && !planted.On(planted.GaveUpKeeps) {
				c.expect(inst.Name, inst, dataset.ExpectNone)
			}
		}
		ss := c.state.Services[inst.Name]
		if !inst.Local || (len(ss.Restarts) == 0 && ss.GaveUp == "" && ss.Excluded == "") || inst.Act.Busy != "" {
			continue
		}
		if _, running := c.Status(inst.Name); running {
			continue
		}
		if n := inst.Lad.UpElsewhere; n != "" && !c.isFlex(inst.Name) {
			c.resetLadder(inst.Name, "service up on "+n, now, true)
		}
	}
}

// expect sets the local expect of the instance (durable).
func (c *Core) expect(svc string, inst *instsm.Instance, le string) {
	if inst.Mon.LocalExpect == le {
		return
	}
	inst.Mon.LocalExpect = le
	c.persistMonitor(svc, inst)
	c.publish()
}

// held reports whether the orchestrator must not start the instance of
// svc by itself: its ladder gave up.
func (c *Core) held(svc string) bool { return c.state.Services[svc].GaveUp != "" }

// ResourceFailed: a monitored resource found down where the instance runs.
type ResourceFailed struct {
	Svc       string `json:"svc"`
	RID       string `json:"rid"`
	Reason    string `json:"reason"`
	Remaining int    `json:"remaining"`
	Delay     string `json:"delay"`
}

func (ResourceFailed) Kind() string      { return "resource_failed" }
func (e ResourceFailed) Service() string { return e.Svc }
func (ResourceFailed) Level() Level      { return Warn }
func (e ResourceFailed) String() string {
	if e.Remaining == 0 {
		return fmt.Sprintf("%s failed (%s): no restart left", e.RID, e.Reason)
	}
	return fmt.Sprintf("%s failed (%s): %d restart(s) left, next in %s", e.RID, e.Reason, e.Remaining, e.Delay)
}

// LadderGaveUp: the restarts of a resource are spent; the daemon restarts
// it no more (the monitor_action, if one runs, follows).
type LadderGaveUp struct {
	Svc    string `json:"svc"`
	Reason string `json:"reason"`
}

func (LadderGaveUp) Kind() string      { return "restarts_spent" }
func (e LadderGaveUp) Service() string { return e.Svc }
func (LadderGaveUp) Level() Level      { return Warn }
func (e LadderGaveUp) String() string  { return "restarts spent: " + e.Reason }

// MonitorActionTaken: the monitor_action of a service runs here.
type MonitorActionTaken struct {
	Svc    string `json:"svc"`
	Action string `json:"action"`
	Reason string `json:"reason"`
}

func (MonitorActionTaken) Kind() string      { return "monitor_action" }
func (e MonitorActionTaken) Service() string { return e.Svc }
func (MonitorActionTaken) Level() Level      { return Error }
func (e MonitorActionTaken) String() string  { return "monitor_action " + e.Action + ": " + e.Reason }

// RestartsReset: the restart counters (RID "": all of them, with the
// exclusion and the give-up) were reset.
type RestartsReset struct {
	Svc    string `json:"svc"`
	RID    string `json:"rid,omitempty"`
	Reason string `json:"reason"`
}

func (RestartsReset) Kind() string      { return "restarts_reset" }
func (e RestartsReset) Service() string { return e.Svc }
func (RestartsReset) Level() Level      { return Info }
func (e RestartsReset) String() string {
	if e.RID != "" {
		return e.RID + " restarts given back: " + e.Reason
	}
	return "restart ladder reset: " + e.Reason
}

// clearLocal resets a failed monitor state of the local instance of svc
// (svcmgr clear, here or heard from a peer); false when it is not failed.
func (c *Core) clearLocal(svc, reason string, now time.Time) bool {
	inst := c.insts[svc]
	if inst == nil || !inst.Local {
		return false
	}
	// the restart ladder's counters, give-up and exclusion go too
	reset := c.resetLadder(svc, reason, now, true)
	if !inst.Mon.State.Failed() {
		return reset
	}
	next := monitor.Clear(inst.Mon, now)
	c.setMonitorState(svc, inst, next.State, reason, now)
	inst.Mon = next
	c.persistMonitor(svc, inst)
	return true
}

// flexUpWithout reports whether the last pass counted a flex service's
// target up on other nodes than self.
func flexUpWithout(inst *instsm.Instance, self string) bool {
	fx := inst.Flex
	return fx.Target > 0 && len(fx.Up) >= fx.Target && !slices.Contains(fx.Up, self)
}
