package sim

import (
	"fmt"

	"haven/dataset"
	"haven/node"
)

// applyReady is the simulation's driver of the node core (as
// daemon.applyReady): Persist is what survives a crash (the simulated
// disk, Node.dur), Publish marks the dataset changed, the events are the
// timeline, the answers go to their callers.
func (d *daemon) applyReady() {
	for d.core.HasReady() {
		rd := d.core.Ready()
		if rd.Persist != nil {
			d.n.dur = rd.Persist.Clone()
		}
		if rd.Publish {
			d.changed()
		}
		for _, e := range rd.Events {
			d.c.logf(d.name, e.Service(), "%s", e.String())
		}
		for _, a := range rd.Answers {
			if f := d.tickets[a.Ticket]; f != nil {
				delete(d.tickets, a.Ticket)
				f(a)
			}
		}
		for _, a := range rd.Run {
			d.startAction(a)
		}
		for _, ck := range rd.Check {
			d.runCheck(ck)
		}
		for _, r := range rd.Done {
			if inst := d.insts[r.Service]; inst != nil {
				d.endAction(inst, r.Err)
			}
		}
		d.armStep(rd.WakeAt)
	}
}

func (d *daemon) clearLocal(inst *instance, reason string) bool {
	ok := d.core.ClearLocal(inst.name, reason, d.c.clk.Now())
	d.applyReady()
	return ok
}

// serviceAction is daemon.serviceAction for one admin request made on
// this node (no --wait callers): it returns the answer the CLI would
// print.
func (d *daemon) serviceAction(name, action, to string, local bool) (string, error) {
	cfg, ok := d.c.svcs[name]
	if !ok {
		return "", fmt.Errorf("no service %s", name)
	}
	inst := d.insts[name]
	if local {
		if inst == nil {
			return "", fmt.Errorf("%s: this node is not one of the service's nodes", name)
		}
		return d.localAction(inst, action)
	}
	var ans node.Answer
	tk := d.core.AdminTarget(node.TargetRequest{Service: name, Action: action, Node: to, Nodes: cfg.NodeList(d.c.names), Now: d.c.clk.Now()})
	d.tickets[tk] = func(a node.Answer) { ans = a }
	d.applyReady()
	return ans.Result, ans.Err
}

// localAction mirrors daemon.localAction (the answer is given at once; the
// action runs on).
func (d *daemon) localAction(inst *instance, action string) (string, error) {
	switch action {
	case "freeze", "thaw":
		d.setFrozen(inst.name, action == "freeze", "admin "+action+" --local")
		return action + " done", nil
	case "start":
		if avail, _ := d.core.Status(inst.name); avail == dataset.StatusUp {
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
