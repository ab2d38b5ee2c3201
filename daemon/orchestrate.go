package daemon

import (
	"haven/config"
	"haven/dataset"
	"haven/monitor"
)

// snapshot gathers what the decision core reads (the node core's view).
func (d *Daemon) snapshot() monitor.Snapshot { return d.core.Snapshot(d.clk.Now()) }

// LocalInfo is the daemon's part of this node's dataset entry (node.Local):
// what the node core does not keep.
func (d *Daemon) LocalInfo() dataset.Node {
	capacity := d.capacity
	n := dataset.Node{
		Name:        d.node.Name,
		Load15:      d.load15,
		MemAvailPct: d.memPct,
		Labels:      d.node.Labels,
		Capacity:    &capacity,
		Services:    map[string]dataset.Instance{},
		Gen:         d.drv.Gen(),
	}
	for name := range d.cfgs.invalid {
		n.Services[name] = d.invalidInstance(name)
	}
	return n
}

// LocalServices are the installed service configs, for the node core's view.
func (d *Daemon) LocalServices() map[string]*config.ServiceConfig {
	svcs := make(map[string]*config.ServiceConfig, len(d.services))
	for name, inst := range d.services {
		svcs[name] = inst.cfg
	}
	return svcs
}
