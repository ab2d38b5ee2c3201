package daemon

import (
	"haven/api"
	"haven/driver"
	"haven/node"
)

// nodeAction runs freeze, thaw or drain of this node (the node core's
// AdminNode: a drain stops nothing before its freeze is on disk).
func (d *Daemon) nodeAction(action string, done func(any, error)) {
	d.drv.NodeAction(action, func(a node.Answer) { done(nil, answerErr(a)) })
}

func (d *Daemon) setNodeFrozen(frozen bool, reason string) {
	d.drv.Step(node.NodeFrozenSet{Frozen: frozen, Reason: reason})
}

// serviceAction runs one admin action on one service (the driver routes
// it: --local to this node's instance, delete everywhere, the others to a
// cluster-wide target).
func (d *Daemon) serviceAction(req api.ActionRequest, done func(any, error)) {
	inst, err := d.lookup(req.Name)
	if err != nil {
		done(nil, err)
		return
	}
	r := driver.Request{Service: inst.name, Action: req.Action, Node: req.Node, Local: req.Local, Force: req.Force,
		Wait: req.Wait, WaitTimeout: req.WaitTimeout, Sig: req.Sig, Nodes: inst.cfg.NodeList(d.cluster.NodeNames())}
	d.drv.ServiceAction(r, func(a node.Answer) {
		if err := answerErr(a); err != nil {
			done(nil, err)
			return
		}
		done(api.ActionResponse{ID: a.ID, Result: a.Result, WasFrozen: a.WasFrozen, Flex: inst.cfg.IsFlex()}, nil)
	})
}
