package daemon

import (
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/view"
)

// snapshot gathers what the decision core reads: plain data, with now.
func (d *Daemon) snapshot() monitor.Snapshot {
	peers := make(map[string]view.Peer, len(d.peers))
	for name, p := range d.peers {
		peers[name] = p.Peer
	}
	svcs := make(map[string]*config.ServiceConfig, len(d.services))
	for name, inst := range d.services {
		svcs[name] = inst.cfg
	}
	return view.Snapshot(view.Input{
		Now:              d.clk.Now(),
		Local:            d.localNode(),
		Peers:            peers,
		MaintenanceGrace: d.node.MaintenanceGracePeriod,
		ClusterNodes:     d.cluster.NodeNames(),
		Services:         svcs,
		Compat:           d.compat,
		ReadyPeriod:      d.node.ReadyPeriod,
	})
}

// orchestrate runs the decision core and carries out its decisions.
func (d *Daemon) orchestrate() {
	if d.stopping {
		return
	}
	d.stepGen = d.gen
	d.lastStep = d.clk.Now()
	d.viewChanged = false
	snap := d.snapshot()
	d.watchMultipleActive(snap)
	decisions := monitor.Step(snap)
	now := d.clk.Now()
	var next time.Time
	for _, dec := range decisions {
		inst := d.services[dec.Service]
		if inst == nil || !inst.local {
			continue
		}
		if !dec.Deadline.IsZero() && (next.IsZero() || dec.Deadline.Before(next)) {
			next = dec.Deadline
		}
		if inst.leader != dec.PlacementLeader || inst.flags != dec.Flags {
			inst.leader, inst.flags = dec.PlacementLeader, dec.Flags
			d.changed()
		}
		if dec.Monitor.GlobalExpect != inst.mon.GlobalExpect {
			inst.mon.GlobalExpect = dec.Monitor.GlobalExpect
			d.changed()
		}
		if dec.TargetReached {
			d.targetReached(inst, d.reachedVerdict(snap, inst.name, dec.TargetUnknown))
		}
		d.noteTargetFailed(inst, dec.TargetFailed)
		if !dec.Changed {
			continue
		}
		if inst.busy != "" {
			// an action of ours is running: its end decides the state
			continue
		}
		d.log.Info("decision", zap.String("svc", dec.Service), zap.String("state", string(dec.Monitor.State)),
			zap.String("action", string(dec.Action)), zap.String("reason", dec.Reason))
		switch dec.Action {
		case monitor.ActionStart, monitor.ActionStop:
			inst.mon = dec.Monitor
			d.changed()
			d.runAction(inst, string(dec.Action), dec.Reason, nil)
		case monitor.ActionFreeze, monitor.ActionThaw:
			d.setFrozen(inst.name, dec.Action == monitor.ActionFreeze, dec.Reason)
			inst.mon = monitor.AfterFreeze(dec.Monitor, now)
			d.changed()
		default:
			if inst.mon.State != dec.Monitor.State {
				d.emit(api.Event{Kind: "instance_monitor", Service: inst.name,
					Message: string(inst.mon.State) + " -> " + string(dec.Monitor.State) + ": " + dec.Reason})
			}
			inst.mon = dec.Monitor
			d.persistMonitor(inst)
			d.changed()
		}
	}
	if t := d.expireWaiters(snap); !t.IsZero() && (next.IsZero() || t.Before(next)) {
		next = t
	}
	d.armStep(next)
}

// armStep makes the loop run the core again at t (the end of a ready
// window), unless an earlier wake-up is already armed.
func (d *Daemon) armStep(t time.Time) {
	if t.IsZero() {
		return
	}
	if !d.stepAt.IsZero() && !t.Before(d.stepAt) && d.clk.Now().Before(d.stepAt) {
		return
	}
	d.stepAt = t
	d.stepTimer = d.clk.After(t.Sub(d.clk.Now()))
}

// persistMonitor saves what must survive a restart of the instance monitor.
func (d *Daemon) persistMonitor(inst *instance) {
	ds := d.dur.Services[inst.name]
	failed := inst.mon.State == dataset.StartFailed
	if ds.StartFailed == failed && ds.LocalExpect == inst.mon.LocalExpect {
		return
	}
	ds.StartFailed = failed
	ds.LocalExpect = inst.mon.LocalExpect
	d.dur.Services[inst.name] = ds
	d.saveState()
}

// setTarget records a new admin target for a service, cluster-wide.
func (d *Daemon) setTarget(name string, t dataset.Target) dataset.Target {
	t.Version = d.nextVersion()
	if t.ID == "" {
		t.ID = fmt.Sprintf("%s-%d", d.node.Name, t.Version.Counter)
	}
	ds := d.dur.Services[name]
	ds.Target = t
	d.dur.Services[name] = ds
	d.saveState()
	d.log.Info("target set", zap.String("svc", name), zap.String("target", t.String()), zap.String("id", t.ID))
	d.emit(api.Event{Kind: "target", Service: name, Message: "target " + t.String() + " (id " + t.ID + ")"})
	d.changed()
	return t
}

// targetReached clears a reached target and answers its --wait callers
// (with err when it is reached on the known nodes only).
func (d *Daemon) targetReached(inst *instance, err error) {
	t := d.dur.Services[inst.name].Target
	if t.Expect == "" || t.Expect == dataset.ExpectNone {
		return
	}
	d.log.Info("target reached", zap.String("svc", inst.name), zap.String("target", t.String()), zap.String("id", t.ID))
	d.emit(api.Event{Kind: "target_reached", Service: inst.name, Message: "target " + t.String() + " reached (id " + t.ID + ")"})
	d.setTarget(inst.name, dataset.Target{Expect: dataset.ExpectNone, ID: t.ID})
	d.answerWaiters(inst.name, t.ID, err)
}

// reachedVerdict is the answer to the --wait callers of a reached target
// of svc: nil when every node of the service is known, else an error that
// says the target is reached on the known nodes only, and where it stands.
func (d *Daemon) reachedVerdict(snap monitor.Snapshot, svc string, unknown []string) error {
	if len(unknown) == 0 {
		return nil
	}
	t := d.dur.Services[svc].Target
	return failed("target %s (id %s) reached on the known nodes only: %s: the service may still run where it is unknown",
		t.String(), t.ID, monitor.Progress(snap, svc))
}

// answerWaiters ends the --wait calls waiting on target id of a service.
func (d *Daemon) answerWaiters(name, id string, err error) {
	keep := d.waiters[:0]
	for _, w := range d.waiters {
		if w.svc == name && (id == "" || w.id == id) {
			w.done(err)
			continue
		}
		keep = append(keep, w)
	}
	d.waiters = keep
}

// waiter is a --wait caller. A zero deadline waits as long as the caller.
type waiter struct {
	svc, id  string
	deadline time.Time
	done     func(error)
}

// noteTargetFailed answers the --wait callers of a target that can no
// longer be reached (monitor's Decision.TargetFailed) with its cause, and
// logs each new cause once. The target stays in place.
func (d *Daemon) noteTargetFailed(inst *instance, cause string) {
	if cause == inst.targetFailed {
		return
	}
	inst.targetFailed = cause
	if cause == "" {
		return
	}
	t := d.dur.Services[inst.name].Target
	msg := fmt.Sprintf("target %s (id %s) cannot be reached: %s (the target stays in place: fix the cause, then svcmgr clear; or abort)", t.String(), t.ID, cause)
	d.log.Warn("target cannot be reached", zap.String("svc", inst.name), zap.String("target", t.String()),
		zap.String("id", t.ID), zap.String("reason", cause))
	d.emit(api.Event{Kind: "target_failed", Service: inst.name, Message: msg})
	d.answerWaiters(inst.name, t.ID, failed("%s", msg))
}

// expireWaiters answers the --wait callers whose time is up with where the
// target stands (monitor.Progress: the unknown nodes, the state of each
// known one), and returns the next deadline.
func (d *Daemon) expireWaiters(snap monitor.Snapshot) time.Time {
	now := d.clk.Now()
	var next time.Time
	keep := d.waiters[:0]
	for _, w := range d.waiters {
		if w.deadline.IsZero() {
			keep = append(keep, w)
			continue
		}
		if now.Before(w.deadline) {
			if next.IsZero() || w.deadline.Before(next) {
				next = w.deadline
			}
			keep = append(keep, w)
			continue
		}
		t := d.dur.Services[w.svc].Target
		w.done(failed("timed out waiting for target %s (id %s): %s (the target stays in place: see print status, or abort)",
			t.String(), w.id, monitor.Progress(snap, w.svc)))
	}
	d.waiters = keep
	return next
}

// watchMultipleActive logs and emits, once per change, a failover service
// found up on more than one node (after a partition heals, or a daemon that
// came back after its peers failed its services over). Nothing stops the
// extra instance automatically yet: the admin decides (stop --local, switch).
func (d *Daemon) watchMultipleActive(s monitor.Snapshot) {
	for _, name := range sortedKeys(d.services) {
		inst := d.services[name]
		var up []string
		for _, node := range s.ClusterNodes {
			v, ok := s.Nodes[node]
			if !ok || !v.Alive() {
				continue
			}
			if i, ok := v.Data.Services[name]; ok && monitor.EffectiveAvail(i) == dataset.StatusUp {
				up = append(up, node)
			}
		}
		multi := ""
		if len(up) > 1 {
			multi = strings.Join(up, ",")
		}
		if multi == inst.multiActive {
			continue
		}
		inst.multiActive = multi
		if multi == "" {
			continue
		}
		msg := "service up on more than one node: " + multi + " (stop the extra instance with svcmgr stop --local, or switch)"
		d.log.Warn(msg, zap.String("svc", name))
		d.emit(api.Event{Kind: "multiple_active", Service: name, Message: msg})
		d.svclogs.write(name, "", msg)
	}
}
