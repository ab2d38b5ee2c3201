package daemon

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"haven/api"
	"haven/dataset"
)

// nodeAction runs freeze, thaw or drain of this node.
func (d *Daemon) nodeAction(action string, done func(any, error)) {
	switch action {
	case "freeze", "thaw":
		d.setNodeFrozen(action == "freeze", "admin "+action)
		done(nil, nil)
	case "drain":
		d.setNodeFrozen(true, "admin drain")
		d.setMonitor(dataset.NodeDraining, "admin drain")
		d.stopAll("node drain", func(err error) {
			d.setMonitor(dataset.NodeIdle, "drain done")
			done(nil, err)
		})
	default:
		done(nil, badInput(fmt.Errorf("unknown node action %q (freeze | thaw | drain)", action)))
	}
}

func (d *Daemon) setNodeFrozen(frozen bool, reason string) {
	if d.dur.NodeFrozen == frozen {
		return
	}
	d.dur.NodeFrozen = frozen
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
		if !inst.local || inst.set == nil || inst.avail == dataset.StatusDown || inst.avail == dataset.StatusNA {
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
	switch req.Action {
	case "freeze", "thaw":
		d.setFrozen(inst.name, req.Action == "freeze", "admin "+req.Action)
		ok(req.Action + " done")
	case "start":
		if !req.Local {
			done(nil, failed("orchestrated start is not available yet: use start --local"))
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
		if !req.Local {
			done(nil, failed("orchestrated stop is not available yet: use stop --local"))
			return
		}
		// BEHAVIOUR 5: stop --local stops and freezes this node's instance
		d.setFrozen(inst.name, true, "admin stop --local")
		d.runAction(inst, "stop", "admin stop --local", func(err error) {
			if err != nil {
				done(nil, failed("%v", err))
				return
			}
			ok("stopped and frozen")
		})
	case "clear":
		if req.Node != "" && req.Node != d.node.Name {
			ok("nothing to clear on this node")
			return
		}
		if inst.mon.State.Failed() {
			ds := d.dur.Services[inst.name]
			ds.StartFailed = false
			d.dur.Services[inst.name] = ds
			d.saveState()
			d.setInstanceMonitor(inst, dataset.Idle, "admin clear")
			ok("cleared")
			return
		}
		ok("nothing to clear")
	case "delete":
		d.deleteService(inst, done)
	default:
		done(nil, badInput(fmt.Errorf("unknown action %q", req.Action)))
	}
}

// deleteService stops the local instance if it runs, then removes the
// config everywhere: the tombstone travels with the heartbeats.
func (d *Daemon) deleteService(inst *instance, done func(any, error)) {
	d.removeService(inst.name, d.nextVersion(), func(err error) {
		if err != nil {
			done(nil, err)
			return
		}
		done(api.ActionResponse{Result: "deleted"}, nil)
	})
}
