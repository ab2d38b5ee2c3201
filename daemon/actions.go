package daemon

import (
	"fmt"

	"haven/api"
	"haven/node"
)

// nodeAction runs freeze, thaw or drain of this node (the node core's
// AdminNode: a drain stops nothing before its freeze is on disk).
func (d *Daemon) nodeAction(action string, done func(any, error)) {
	tk := d.core.AdminNode(action, d.clk.Now())
	d.tickets[tk] = func(a node.Answer) { done(nil, answerErr(a)) }
	d.applyReady()
}

func (d *Daemon) setNodeFrozen(frozen bool, reason string) {
	d.core.SetNodeFrozen(frozen, reason)
	d.applyReady()
}

// serviceAction runs one admin action on one service.
func (d *Daemon) serviceAction(req api.ActionRequest, done func(any, error)) {
	if req.Force && (!req.Local || req.Action != "start") {
		done(nil, badInput(fmt.Errorf("%s %s: force goes with start --local only", req.Name, req.Action)))
		return
	}
	inst, err := d.lookup(req.Name)
	if err != nil {
		done(nil, err)
		return
	}
	answer := func(a node.Answer) {
		if err := answerErr(a); err != nil {
			done(nil, err)
			return
		}
		done(api.ActionResponse{ID: a.ID, Result: a.Result}, nil)
	}
	if req.Local {
		// acts on this node's instance directly, without orchestration
		// (stop --local: the freeze is on disk before the stop runs)
		d.tickets[d.core.AdminLocal(node.LocalRequest{Service: inst.name, Action: req.Action, Now: d.clk.Now(), Force: req.Force})] = answer
		d.applyReady()
		return
	}
	if req.Action == "delete" {
		d.deleteService(inst, done)
		return
	}
	treq := node.TargetRequest{Service: inst.name, Action: req.Action, Node: req.Node, Now: d.clk.Now(),
		Nodes: inst.cfg.NodeList(d.cluster.NodeNames()), Wait: req.Wait}
	if req.Wait && req.WaitTimeout > 0 {
		treq.Deadline = d.clk.Now().Add(req.WaitTimeout)
		d.armStep(treq.Deadline)
	}
	d.tickets[d.core.AdminTarget(treq)] = answer
	d.applyReady()
}

// clearLocal resets a failed monitor state of the local instance.
func (d *Daemon) clearLocal(inst *instance, reason string) bool {
	ok := d.core.ClearLocal(inst.name, reason, d.clk.Now())
	d.applyReady()
	return ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// deleteService deletes the service everywhere (the node core's
// DeleteService: the local instance stopped first, then the config
// removed and a tombstone left, which travels with the heartbeats).
func (d *Daemon) deleteService(inst *instance, done func(any, error)) {
	tk := d.core.DeleteService(inst.name, d.clk.Now())
	d.tickets[tk] = func(a node.Answer) {
		if err := answerErr(a); err != nil {
			done(nil, err)
			return
		}
		done(api.ActionResponse{Result: a.Result}, nil)
	}
	d.applyReady()
}
