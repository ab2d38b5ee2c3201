package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/dataset"
	"haven/driver"
	"haven/node"
	"haven/resource"
)

// applyReady carries out what the node core asks after an input (the
// driver's Apply, in the order of node.Ready, with the daemon's effects).
func (d *Daemon) applyReady() { d.drv.Apply() }

// effects are the daemon's IO of the node core (driver.Effects): the
// state to the persister, the events to node.log and the events stream,
// the actions, checks, probes and fences in workers, the config files off
// the loop.
type effects struct{ d *Daemon }

func (e effects) StartAction(a node.Action)        { e.d.runAll([]node.Action{a}) }
func (e effects) RunNodeAction(na node.NodeAction) { e.d.runNodeActions([]node.NodeAction{na}) }
func (e effects) StartCheck(ck node.Check)         { e.d.startCheck(ck) }
func (e effects) Probe(p node.Probe)               { e.d.runProbes([]node.Probe{p}) }
func (e effects) Fence(f node.Fence)               { e.d.runFences([]node.Fence{f}) }
func (e effects) ApplyConfigs(ops []node.ConfigOp) { e.d.applyConfigs(ops) }
func (e effects) RefusedName(r driver.RefusedName) { e.d.refusePeerName(r) }

// Announce announces again the addresses of the local instance of svc,
// in a worker (the announcements go on from the ip drivers' own
// goroutines; failures are in the service log).
func (e effects) Announce(svc string) {
	d := e.d
	inst := d.services[svc]
	if inst == nil {
		return
	}
	set := inst.drivers()
	if set == nil {
		return
	}
	d.goWorker(func(ctx context.Context) {
		if err := set.Announce(ctx); err != nil {
			d.post(func() { d.svclogs.write(svc, "", "announce: "+err.Error()) })
		}
	})
}

// Event writes an event to node.log and the events stream; a peer's
// config refused is also kept for the status.
func (e effects) Event(ev node.Event) {
	e.d.logEvent(ev)
	switch ev := ev.(type) {
	case node.ConfigRefused:
		e.d.peerConfigRefused(ev)
	case node.TargetRefused:
		e.d.orderRefused(ev.Svc, fmt.Sprintf("the target %s from %s is refused here: %s (nothing acts on it)", ev.Target.String(), ev.From, ev.Err))
	case node.TargetAdopted:
		delete(e.d.cfgs.orders, ev.Svc)
	case node.TargetSet:
		delete(e.d.cfgs.orders, ev.Svc)
	case node.InstanceMonitor:
		e.d.prepareOnMonitor(ev)
	}
}

// ArmWake arms the step timer.
func (e effects) ArmWake(t time.Time) {
	d := e.d
	if d.stepTimer == nil {
		d.stepTimer = d.clk.NewTimer(t.Sub(d.clk.Now()))
	} else {
		d.stepTimer.Reset(t.Sub(d.clk.Now()))
	}
	d.step = d.stepTimer.C()
}

// Publish sends the local dataset (to the metrics too: a lone node has no
// heartbeat).
func (e effects) Publish() {
	n := e.d.localNode()
	e.d.metrics.setLocal(n, func(svc string) bool { inst := e.d.services[svc]; return inst != nil && inst.cfg.IsFlex() })
	if e.d.hb != nil {
		e.d.hb.Publish(n)
	}
}

// Order binds the actions the core ordered (and holds until their state
// is on disk) to the resource drivers of the instance now: an action runs
// with the drivers of the config of the time it was ordered (a node
// removed from a service's nodes stops its instance with the drivers of
// the config that had it).
func (e effects) Order(acts []node.Action) {
	d := e.d
	for _, a := range acts {
		var set *resource.Set
		if inst := d.services[a.Service]; inst != nil {
			set = inst.drivers()
		}
		if d.ordered == nil {
			d.ordered = map[string][]*resource.Set{}
		}
		d.ordered[a.Service] = append(d.ordered[a.Service], set)
	}
}

// runAll starts the actions the core released: their state is on disk
// (an action never rests on a change that may be undone; when the write
// fails the core aborts them).
func (d *Daemon) runAll(runs []node.Action) {
	for _, a := range runs {
		var set *resource.Set
		if q := d.ordered[a.Service]; len(q) > 0 {
			set = q[0]
			if len(q) == 1 {
				delete(d.ordered, a.Service)
			} else {
				d.ordered[a.Service] = q[1:]
			}
		} else if inst := d.services[a.Service]; inst != nil {
			set = inst.drivers()
		}
		d.startAction(a, set)
	}
}

// logEvent writes a typed event of the core to node.log and the events
// stream, with its structured fields (svc, node, from, to, reason,
// target...): `nodemgr events --format json` shows them.
func (d *Daemon) logEvent(e node.Event) {
	fields := eventFields(e)
	zf := make([]zap.Field, 0, len(fields)+1)
	zf = append(zf, zap.String("event", e.Kind()))
	for _, k := range sortedKeys(fields) {
		zf = append(zf, zap.String(k, fields[k]))
	}
	switch e := e.(type) {
	case node.ActionBegin:
		d.svclogs.write(e.Svc, "", e.String())
	case node.MultipleActive:
		d.svclogs.write(e.Svc, "", e.String())
	case node.MultipleActiveResolve:
		d.svclogs.write(e.Svc, "", e.String())
	case node.ActionEnd:
		d.svclogs.write(e.Svc, "", e.String())
	case node.Failover:
		d.svclogs.write(e.Svc, "", e.String())
	case node.ResourceStatus:
		d.svclogs.write(e.Svc, e.RID, "status "+string(e.From)+" -> "+string(e.To)+reasonSuffix(e.Reason))
	}
	switch e.Level() {
	case node.Warn:
		d.log.Warn(e.String(), zf...)
	case node.Error:
		d.log.Error(e.String(), zf...)
	default:
		d.log.Info(e.String(), zf...)
	}
	ae := api.Event{Kind: e.Kind(), Service: e.Service(), Message: e.String(), Fields: fields}
	if rs, ok := e.(node.ResourceStatus); ok {
		ae.RID = rs.RID
	}
	ae = d.stamp(ae)
	d.emit(ae)
	d.metrics.observe(e, ae.Time)
	d.hooks.enqueue(ae)
}

// eventFields flattens a typed event into strings: its JSON fields, a
// nested value (a target) as its text form or compact JSON.
func eventFields(e node.Event) map[string]string {
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
			continue
		}
		out[k] = string(v)
	}
	if t, ok := targetOf(e); ok {
		out["target"] = t.String()
		out["id"] = t.ID
	}
	return out
}

// targetOf returns the target an event is about, if any.
func targetOf(e node.Event) (dataset.Target, bool) {
	switch e := e.(type) {
	case node.TargetSet:
		return e.Target, true
	case node.TargetAdopted:
		return e.Target, true
	case node.TargetReached:
		return e.Target, true
	case node.TargetFailed:
		return e.Target, true
	case node.TargetPending:
		return e.Target, true
	}
	return dataset.Target{}, false
}

// answerErr is the error of a core's answer for the API: exit status 2 for
// a bad request, 1 for a failure.
func answerErr(a node.Answer) error {
	if a.Err == nil {
		return nil
	}
	if a.Bad {
		return badInput(a.Err)
	}
	return failed("%v", a.Err)
}
