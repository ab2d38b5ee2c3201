package sim

import (
	"fmt"
	"haven/view"
	"strings"

	"haven/dataset"
	"haven/monitor"
)

// durable is what a daemon persists (daemon.durable): it survives daemon
// restarts and crashes.
type durable struct {
	Lamport    uint64
	NodeFrozen bool
	Services   map[string]*durableService
}

type durableService struct {
	Frozen      bool
	LocalExpect string
	Target      dataset.Target
	StartFailed bool
	Clear       dataset.ClearRequest
}

func (d *durable) svc(name string) *durableService {
	if d.Services == nil {
		d.Services = map[string]*durableService{}
	}
	ds := d.Services[name]
	if ds == nil {
		ds = &durableService{}
		d.Services[name] = ds
	}
	return ds
}

func (d *daemon) nextVersion() dataset.Version {
	d.n.dur.Lamport++
	return dataset.Version{Counter: d.n.dur.Lamport, Origin: d.name}
}

func (d *daemon) witness(v dataset.Version) {
	if v.Counter > d.n.dur.Lamport {
		d.n.dur.Lamport = v.Counter
	}
}

// targets mirrors daemon.targets.
func (d *daemon) targets() map[string]dataset.Target {
	out := map[string]dataset.Target{}
	for _, name := range d.c.svcNames {
		if t := d.n.dur.svc(name).Target; !t.Version.IsZero() {
			out[name] = t
		}
	}
	return out
}

// mergeTargets mirrors daemon.mergeTargets (no --wait callers here).
func (d *daemon) mergeTargets(ts map[string]dataset.Target) {
	changed := false
	for _, name := range sortedKeys(ts) {
		t := ts[name]
		d.witness(t.Version)
		ds := d.n.dur.svc(name)
		if _, ok := d.c.svcs[name]; !ok || !t.Version.Newer(ds.Target.Version) {
			continue
		}
		ds.Target = t
		changed = true
	}
	if changed {
		d.changed()
	}
}

// setTarget mirrors daemon.setTarget.
func (d *daemon) setTarget(name string, t dataset.Target) dataset.Target {
	t.Version = d.nextVersion()
	if t.ID == "" {
		t.ID = fmt.Sprintf("%s-%d", d.name, t.Version.Counter)
	}
	d.n.dur.svc(name).Target = t
	d.changed()
	return t
}

// targetReached mirrors daemon.targetReached (with the nodes it is not
// known on, Decision.TargetUnknown, that the daemon tells --wait callers).
func (d *daemon) targetReached(inst *instance, unknown []string) {
	t := d.n.dur.svc(inst.name).Target
	if t.Expect == "" || t.Expect == dataset.ExpectNone {
		return
	}
	if len(unknown) > 0 {
		d.c.logf(d.name, inst.name, "target %s reached on the known nodes only, %s unknown (id %s): cleared", t.String(), strings.Join(unknown, ","), t.ID)
	} else {
		d.c.logf(d.name, inst.name, "target %s reached (id %s): cleared", t.String(), t.ID)
	}
	d.setTarget(inst.name, dataset.Target{Expect: dataset.ExpectNone, ID: t.ID})
}

// noteTargetFailed mirrors daemon.noteTargetFailed (no --wait callers
// here: the timeline shows each new cause once).
func (d *daemon) noteTargetFailed(inst *instance, cause string) {
	if cause == inst.targetFailed {
		return
	}
	inst.targetFailed = cause
	if cause != "" {
		t := d.n.dur.svc(inst.name).Target
		d.c.logf(d.name, inst.name, "target %s cannot be reached (id %s): %s", t.String(), t.ID, cause)
	}
}

func (d *daemon) clears() map[string]dataset.ClearRequest {
	out := map[string]dataset.ClearRequest{}
	for _, name := range d.c.svcNames {
		if c := d.n.dur.svc(name).Clear; !c.Version.IsZero() {
			out[name] = c
		}
	}
	return out
}

func (d *daemon) mergeClears(cs map[string]dataset.ClearRequest) {
	for _, name := range sortedKeys(cs) {
		d.witness(cs[name].Version)
		d.applyClear(name, cs[name])
	}
}

// applyClear mirrors daemon.applyClear.
func (d *daemon) applyClear(name string, c dataset.ClearRequest) {
	ds := d.n.dur.svc(name)
	if _, ok := d.c.svcs[name]; !ok || !c.Version.Newer(ds.Clear.Version) {
		return
	}
	ds.Clear = c
	d.changed()
	if inst := d.insts[name]; inst != nil && (c.Node == "" || c.Node == d.name) {
		d.clearLocal(inst, "admin clear (from "+c.Version.Origin+")")
	}
}

func (d *daemon) clearLocal(inst *instance, reason string) bool {
	if !inst.mon.State.Failed() {
		return false
	}
	next := monitor.Clear(inst.mon, d.c.clk.Now())
	d.setInstanceMonitor(inst, next.State, reason)
	inst.mon = next
	d.persistMonitor(inst)
	return true
}

// serviceAction mirrors daemon.serviceAction and localAction for one admin
// request made on this node; it returns the answer the CLI would print.
func (d *daemon) serviceAction(name, action, node string, local bool) (string, error) {
	if _, ok := d.c.svcs[name]; !ok {
		return "", fmt.Errorf("no service %s", name)
	}
	inst := d.insts[name]
	if local {
		if inst == nil {
			return "", fmt.Errorf("%s: this node is not one of the service's nodes", name)
		}
		return d.localAction(inst, action)
	}
	t, isTarget := view.ActionTarget(action, d.name, node)
	switch {
	case isTarget:
	case action == "abort":
		cur := d.n.dur.svc(name).Target
		if cur.Expect == "" || cur.Expect == dataset.ExpectNone || cur.Expect == dataset.ExpectAborted {
			return "no target to abort", nil
		}
		d.setTarget(name, dataset.Target{Expect: dataset.ExpectAborted, ID: cur.ID})
		return "target " + cur.String() + " aborted", nil
	case action == "clear":
		d.applyClear(name, dataset.ClearRequest{Node: node, Version: d.nextVersion()})
		return "clear requested", nil
	default:
		return "", fmt.Errorf("unknown action %q", action)
	}
	if t.Node != "" && !d.c.svcs[name].HasNode(t.Node, d.c.names) {
		return "", fmt.Errorf("%s: %s is not one of the service's nodes", name, t.Node)
	}
	cur := d.n.dur.svc(name).Target
	if cur.Expect != "" && cur.Expect != dataset.ExpectNone && cur.Expect != dataset.ExpectAborted {
		if cur.Expect != t.Expect || cur.Node != t.Node {
			return "", fmt.Errorf("%s: target %s (id %s) is in progress: wait for it, or run abort first", name, cur.String(), cur.ID)
		}
		t = cur
	} else {
		t = d.setTarget(name, t)
	}
	return "target " + t.String() + " accepted (id " + t.ID + ")", nil
}

// localAction mirrors daemon.localAction (the answer is given at once; the
// action runs on).
func (d *daemon) localAction(inst *instance, action string) (string, error) {
	switch action {
	case "freeze", "thaw":
		d.setFrozen(inst.name, action == "freeze", "admin "+action+" --local")
		return action + " done", nil
	case "start":
		if inst.avail == dataset.StatusUp {
			return "already up: nothing done", nil
		}
		d.runAction(inst, "start", "admin start --local", nil)
		return "start requested", nil
	case "stop":
		d.setFrozen(inst.name, true, "admin stop --local")
		d.runAction(inst, "stop", "admin stop --local", nil)
		return "stop requested, instance frozen", nil
	case "clear":
		if d.clearLocal(inst, "admin clear --local") {
			return "cleared", nil
		}
		return "nothing to clear", nil
	}
	return "", fmt.Errorf("%s does not take --local", action)
}

// nodeAction mirrors daemon.nodeAction (freeze, thaw).
func (d *daemon) nodeAction(action string) (string, error) {
	switch action {
	case "freeze", "thaw":
		d.setNodeFrozen(action == "freeze", "admin "+action)
		return action + " done", nil
	}
	return "", fmt.Errorf("unknown node action %q", action)
}
