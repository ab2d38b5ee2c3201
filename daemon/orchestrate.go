package daemon

import (
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
)

// snapshot gathers what the decision core reads (the node core's view).
func (d *Daemon) snapshot() monitor.Snapshot { return d.core.Snapshot(d.clk.Now()) }

// LocalNode is this node's dataset entry, for the node core's view.
func (d *Daemon) LocalNode() dataset.Node { return d.localNode() }

// LocalServices are the installed service configs, for the node core's view.
func (d *Daemon) LocalServices() map[string]*config.ServiceConfig {
	svcs := make(map[string]*config.ServiceConfig, len(d.services))
	for name, inst := range d.services {
		svcs[name] = inst.cfg
	}
	return svcs
}

// orchestrate runs the node core's decision pass over the view of now
// and carries out what it asks (applyReady: actions, step timer, events).
func (d *Daemon) orchestrate() {
	if d.core.Stopping() {
		return
	}
	viewOnly := d.gen == d.stepGen // only the view changed: maybe incremental
	d.stepGen = d.gen
	d.lastStep = d.clk.Now()
	began := time.Now() // the CPU time of the pass, whatever d.clk is
	if viewOnly {
		d.core.OrchestrateView(d.lastStep)
	} else {
		d.core.Orchestrate(d.lastStep)
	}
	d.metrics.observeDecision(time.Since(began))
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
