package daemon

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/dataset"
	"haven/monitor"
	"haven/view"
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
	if d.dur.NodeFrozen == frozen {
		return
	}
	d.dur.NodeFrozen, d.dur.NodeFrozenReason = frozen, map[bool]string{true: reason}[frozen]
	d.saveState()
	word := map[bool]string{true: "frozen", false: "thawed"}[frozen]
	d.log.Info("node "+word, zap.String("reason", reason))
	d.emit(api.Event{Kind: "node_" + word, Message: "node " + word + ": " + reason})
	d.changed()
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
		if !inst.local || inst.set == nil || !inst.running() {
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
	t, isTarget := view.ActionTarget(req.Action, d.node.Name, req.Node)
	switch {
	case isTarget:
	case req.Action == "abort":
		cur := d.dur.Services[inst.name].Target
		if cur.Expect == "" || cur.Expect == dataset.ExpectNone || cur.Expect == dataset.ExpectAborted {
			ok("no target to abort")
			return
		}
		d.setTarget(inst.name, dataset.Target{Expect: dataset.ExpectAborted, ID: cur.ID})
		d.answerWaiters(inst.name, cur.ID, failed("%s: target %s aborted", inst.name, cur.String()))
		ok("target " + cur.String() + " aborted")
		return
	case req.Action == "clear":
		d.requestClear(inst, req.Node)
		ok("clear requested")
		return
	case req.Action == "delete":
		d.deleteService(inst, done)
		return
	default:
		done(nil, badInput(fmt.Errorf("unknown action %q", req.Action)))
		return
	}
	nodes := inst.cfg.NodeList(d.cluster.NodeNames())
	if t.Node != "" && !contains(nodes, t.Node) {
		done(nil, badInput(fmt.Errorf("%s: %s is not one of the service's nodes (%v)", inst.name, t.Node, nodes)))
		return
	}
	cur := d.dur.Services[inst.name].Target
	if cur.Expect != "" && cur.Expect != dataset.ExpectNone && cur.Expect != dataset.ExpectAborted {
		if cur.Expect != t.Expect || cur.Node != t.Node {
			done(nil, failed("%s: target %s (id %s) is in progress: wait for it, or run abort first", inst.name, cur.String(), cur.ID))
			return
		}
		t = cur // the same target again: join it
	} else {
		t = d.setTarget(inst.name, t)
	}
	res := api.ActionResponse{ID: t.ID, Result: "target " + t.String() + " accepted (id " + t.ID + ")"}
	if !req.Wait {
		done(res, nil)
		return
	}
	if t.ID == cur.ID && inst.targetFailed != "" {
		// joined a target that cannot be reached: say so at once
		done(nil, failed("target %s (id %s) cannot be reached: %s (the target stays in place: fix the cause, then svcmgr clear; or abort)",
			t.String(), t.ID, inst.targetFailed))
		return
	}
	var deadline time.Time
	if req.WaitTimeout > 0 {
		deadline = d.clk.Now().Add(req.WaitTimeout)
		d.armStep(deadline)
	}
	d.waiters = append(d.waiters, waiter{svc: inst.name, id: t.ID, deadline: deadline, done: func(err error) {
		if err != nil {
			done(nil, err)
			return
		}
		res.Result = "target " + t.String() + " reached (id " + t.ID + ")"
		done(res, nil)
	}})
}

// localAction acts on this node's instance directly, without orchestration.
func (d *Daemon) localAction(inst *instance, req api.ActionRequest, ok func(string), done func(any, error)) {
	switch req.Action {
	case "freeze", "thaw":
		d.setFrozen(inst.name, req.Action == "freeze", "admin "+req.Action+" --local")
		ok(req.Action + " done")
	case "start":
		if inst.avail == dataset.StatusUp || inst.avail == dataset.StatusNA && inst.running() {
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
	if !inst.mon.State.Failed() {
		return false
	}
	next := monitor.Clear(inst.mon, d.clk.Now())
	d.setInstanceMonitor(inst, next.State, reason)
	inst.mon = next
	d.persistMonitor(inst)
	return true
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
