package daemon

import (
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
			d.core.TargetReached(inst.name, dec.TargetUnknown, snap)
		}
		d.core.NoteTargetFailed(inst.name, dec.TargetFailed)
		d.applyReady()
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
	t := d.core.ExpireWaiters(now, snap)
	d.applyReady()
	if !t.IsZero() && (next.IsZero() || t.Before(next)) {
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
	d.core.SetMonitorState(inst.name, inst.mon.State == dataset.StartFailed, inst.mon.LocalExpect)
	d.applyReady()
}

// setTarget records a new admin target for a service, cluster-wide.
func (d *Daemon) setTarget(name string, t dataset.Target) dataset.Target {
	t = d.core.SetTarget(name, t)
	d.applyReady()
	return t
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
