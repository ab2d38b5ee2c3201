package driver

import (
	"fmt"
	"time"

	"haven/node"
)

// Request is an admin action on one service (svcmgr -s SVC ACTION).
type Request struct {
	Service string
	Action  string // start stop freeze thaw delete clear abort takeover giveback switch restart
	// Node is switch --to and clear --node.
	Node string
	// Local acts on this node's instance, without orchestration (restart
	// always does); Force lets start --local run a second copy.
	Local, Force bool
	// Wait answers when the target is reached or failed; WaitTimeout
	// bounds it (zero: as long as the caller waits).
	Wait        bool
	WaitTimeout time.Duration
	// Nodes are the service's nodes (its config's, "*" expanded).
	Nodes []string
	// Sig is the admin's signature of a deletion or a target.
	Sig string
}

// ServiceAction routes an admin action on one service to the core: a
// --local one (and restart) to this node's instance, delete to the
// deletion everywhere, the others to a cluster-wide target (with --wait,
// answered when it is reached or failed, or at its deadline). done gets
// the answer, at once or when the action or the target ends.
func (d *Driver) ServiceAction(r Request, done func(node.Answer)) {
	if r.Force && (!r.Local || r.Action != "start") {
		done(node.Answer{Bad: true, Err: fmt.Errorf("%s %s: force goes with start --local only", r.Service, r.Action)})
		return
	}
	now := d.clk.Now()
	switch {
	case r.Local || r.Action == "restart":
		d.Ask(node.LocalRequest{Service: r.Service, Action: r.Action, Now: now, Force: r.Force}, done)
	case r.Action == "delete":
		d.Ask(node.Deletion{Service: r.Service, Now: now, Sig: r.Sig}, done)
	case r.Action == "rollout" || r.Action == "rollback":
		if r.Local || r.Wait || r.Node != "" {
			done(node.Answer{Bad: true, Err: fmt.Errorf("%s %s: takes no --local, --node or daemon-side wait", r.Service, r.Action)})
			return
		}
		if r.Action == "rollback" {
			d.Ask(node.RollbackRequest{Service: r.Service, Now: now}, done)
			return
		}
		d.Ask(node.RolloutRequest{Service: r.Service, Now: now}, done)
	default:
		treq := node.TargetRequest{Service: r.Service, Action: r.Action, Node: r.Node, Now: now, Nodes: r.Nodes, Wait: r.Wait, Sig: r.Sig}
		if r.Wait && r.WaitTimeout > 0 {
			treq.Deadline = now.Add(r.WaitTimeout)
			d.armWake(treq.Deadline)
		}
		d.Ask(treq, done)
	}
}

// NodeAction runs freeze, thaw or drain of this node.
func (d *Driver) NodeAction(action string, done func(node.Answer)) {
	d.Ask(node.NodeAdmin{Action: action, Now: d.clk.Now()}, done)
}

// EditConfig hands an edit made here (create, set, unset) to the core,
// which installs it and answers once the state is written and the live
// peers hold it.
func (d *Driver) EditConfig(req node.ConfigRequest, done func(node.Answer)) {
	req.Now = d.clk.Now()
	d.Ask(req, done)
}

// RunAction starts or stops the local instance for the shell itself (a
// deletion, a node removed from the service's nodes); done (may be nil)
// gets the end.
func (d *Driver) RunAction(svc, action, reason string, done func(error)) {
	d.Ask(node.OwnAction{Service: svc, Kind: action, Reason: reason, Now: d.clk.Now()}, func(a node.Answer) {
		if done != nil {
			done(a.Err)
		}
	})
}
