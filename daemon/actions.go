package daemon

import (
	"errors"
	"fmt"
	"strings"

	"haven/api"
	"haven/dataset"
	"haven/monitor"
	"haven/node"
)

// nodeAction runs freeze, thaw or drain of this node.
func (d *Daemon) nodeAction(action string, done func(any, error)) {
	switch action {
	case "freeze", "thaw":
		d.setNodeFrozen(action == "freeze", "admin "+action)
		done(nil, nil)
	case "drain":
		d.setNodeFrozen(true, "admin drain")
		// stop nothing before the freeze is on disk
		d.afterSaved(func(err error) {
			if err != nil {
				done(nil, err)
				return
			}
			d.setMonitor(dataset.NodeDraining, "admin drain")
			d.stopAll("node drain", func(err error) {
				d.setMonitor(dataset.NodeIdle, "drain done")
				done(nil, err)
			})
		})
	default:
		done(nil, badInput(fmt.Errorf("unknown node action %q (freeze | thaw | drain)", action)))
	}
}

func (d *Daemon) setNodeFrozen(frozen bool, reason string) {
	d.core.SetNodeFrozen(frozen, reason)
	d.applyReady()
}

// stopAll stops every local instance that is not down, then calls done.
func (d *Daemon) stopAll(reason string, done func(error)) {
	pending := 0
	var errs []error
	finish := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
		pending--
		if pending == 0 {
			done(errors.Join(errs...))
		}
	}
	pending++ // guard while launching
	for _, name := range d.serviceNames() {
		inst := d.services[name]
		if !inst.local || inst.set == nil || !d.running(inst) {
			continue
		}
		pending++
		d.runAction(inst, "stop", reason, finish)
	}
	finish(nil)
}

// serviceAction runs one admin action on one service.
func (d *Daemon) serviceAction(req api.ActionRequest, done func(any, error)) {
	inst, err := d.lookup(req.Name)
	if err != nil {
		done(nil, err)
		return
	}
	ok := func(result string) { done(api.ActionResponse{Result: result}, nil) }
	if req.Local {
		d.localAction(inst, req, ok, done)
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
	tk := d.core.AdminTarget(treq)
	d.tickets[tk] = func(a node.Answer) {
		if err := answerErr(a); err != nil {
			done(nil, err)
			return
		}
		done(api.ActionResponse{ID: a.ID, Result: a.Result}, nil)
	}
	d.applyReady()
}

// localAction acts on this node's instance directly, without orchestration.
func (d *Daemon) localAction(inst *instance, req api.ActionRequest, ok func(string), done func(any, error)) {
	switch req.Action {
	case "freeze", "thaw":
		d.setFrozen(inst.name, req.Action == "freeze", "admin "+req.Action+" --local")
		ok(req.Action + " done")
	case "start":
		if avail, running := d.core.Status(inst.name); avail == dataset.StatusUp || avail == dataset.StatusNA && running {
			// a start would run a second copy: nothing to do
			ok("already up: nothing done")
			return
		}
		d.runAction(inst, "start", "admin start --local", func(err error) {
			if err != nil {
				done(nil, failed("%v", err))
				return
			}
			ok("started")
		})
	case "stop":
		// BEHAVIOUR 5: stop --local stops and freezes this node's instance
		d.setFrozen(inst.name, true, "admin stop --local")
		// stop only once the freeze is on disk
		d.afterSaved(func(err error) {
			if err != nil {
				done(nil, err)
				return
			}
			d.runAction(inst, "stop", "admin stop --local", func(err error) {
				if err != nil {
					done(nil, failed("%v", err))
					return
				}
				ok("stopped and frozen")
			})
		})
	case "clear":
		if d.clearLocal(inst, "admin clear --local") {
			ok("cleared")
			return
		}
		ok("nothing to clear")
	default:
		done(nil, badInput(fmt.Errorf("%s does not take --local", req.Action)))
	}
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

// deleteService stops the local instance if it runs, then removes the
// config everywhere: the tombstone travels with the heartbeats. It refuses
// while the service runs on another node whose daemon is heard (stop it
// first), or when the local stop fails; a node that is down stops its
// instance when the tombstone reaches it.
func (d *Daemon) deleteService(inst *instance, done func(any, error)) {
	snap := d.snapshot()
	var elsewhere []string
	for _, node := range snap.ClusterNodes {
		v, ok := snap.Nodes[node]
		if node == d.node.Name || !ok || !v.Alive() {
			continue
		}
		if i, ok := v.Data.Services[inst.name]; ok {
			if a := monitor.EffectiveAvail(i); a == dataset.StatusUp || a == dataset.StatusWarn {
				elsewhere = append(elsewhere, node)
			}
		}
	}
	if len(elsewhere) > 0 {
		done(nil, failed("not deleted: it runs on %s (stop it first: svcmgr -s %s stop --wait)", strings.Join(elsewhere, ", "), inst.name))
		return
	}
	d.removeService(inst.name, d.nextVersion(), func(err error) {
		if err != nil {
			done(nil, err)
			return
		}
		done(api.ActionResponse{Result: "deleted"}, nil)
	})
}
