package daemon

import (
	"time"

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

// orchestrate runs the node core's decision pass over the view of now
// and carries out what it asks (applyReady: actions, step timer, events).
func (d *Daemon) orchestrate() {
	if d.stopping {
		return
	}
	d.stepGen = d.gen
	d.lastStep = d.clk.Now()
	d.viewChanged = false
	d.core.Orchestrate(d.snapshot())
	d.applyReady()
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

// setTarget records a new admin target for a service, cluster-wide.
func (d *Daemon) setTarget(name string, t dataset.Target) dataset.Target {
	t = d.core.SetTarget(name, t)
	d.applyReady()
	return t
}
