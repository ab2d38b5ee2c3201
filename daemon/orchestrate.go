package daemon

import (
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

// setTarget records a new admin target for a service, cluster-wide.
func (d *Daemon) setTarget(name string, t dataset.Target) dataset.Target {
	t = d.core.SetTarget(name, t)
	d.applyReady()
	return t
}
