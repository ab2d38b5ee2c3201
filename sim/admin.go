package sim

import (
	"fmt"
	"time"

	"haven/config"
	"haven/driver"
	"haven/node"
)

// effects are the simulation's IO of the node core (driver.Effects): the
// simulated disk (Node.dur) is written at once, the actions take their
// simulated durations, the checks answer at once, the events go to the
// timeline.
type effects struct{ d *daemon }

// SaveState writes the simulated disk: what survives a crash.
func (e effects) SaveState(seq uint64, st *node.State) bool { return e.d.saveState(seq, st) }

func (e effects) Order([]node.Action)            {}
func (e effects) Event(ev node.Event)            { e.d.record(ev) }
func (e effects) StartAction(a node.Action)      { e.d.startAction(a) }
func (e effects) StartCheck(ck node.Check)       { e.d.runCheck(ck) }
func (e effects) Probe(p node.Probe)             { e.d.probe(p) }
func (e effects) Fence(f node.Fence)             { e.d.fence(f) }
func (e effects) ArmWake(time.Time)              {} // process reads drv.WakeAt
func (e effects) RefusedName(driver.RefusedName) {}
func (e effects) Announce(string)                {} // the timeline has the core's event

// RunNodeAction records a node action: the simulated machine goes on.
func (e effects) RunNodeAction(na node.NodeAction) {
	e.d.record(node.NodeActionRun{Action: na.Kind, Reason: na.Reason})
}

// ApplyConfigs writes the config files at once and reports them.
func (e effects) ApplyConfigs(ops []node.ConfigOp) {
	for _, op := range ops {
		e.d.applyConfig(op)
	}
}

// Publish sends the local dataset to the peers.
func (e effects) Publish() {
	if e.d.hb != nil {
		e.d.hb.Publish(e.d.localNode())
	}
}

// coreConfig is the node core's config of node n (the driver's, from the
// simulated node.toml and cluster.toml).
func (c *Cluster) coreConfig(n string, compat int, local node.Local) node.Config {
	nc := &config.NodeConfig{Name: n, MaintenanceGracePeriod: c.opt.MaintenanceGrace, RejoinGracePeriod: c.opt.RejoinGrace,
		ReadyPeriod: c.opt.ReadyPeriod, ReadyFastAck: c.opt.ReadyFastAck, CheckInterval: c.opt.CheckInterval, MonitorInterval: c.opt.MonitorInterval,
		HB: config.HBConfig{Timeout: c.opt.HBTimeout, Interval: c.opt.HBInterval}, Guard: c.opt.Guard, GuardLease: c.opt.GuardLease}
	cfg := driver.CoreConfig(nc, c.clusterConfig(n, nc), compat, local, simCodec)
	cfg.Quorum.Timing.StopBudget = c.stopBudget()
	return cfg
}

// record puts a typed event on the timeline.
func (d *daemon) record(e node.Event) {
	switch e.(type) {
	case node.FlexInstances, node.RolloutProgress:
		// (every node says the count of a flex service, and where a
		// rollout stands, as it sees them: kept in the events, left out
		// of the timeline, where the instances' own lines say the same)
	default:
		d.c.logf(d.name, e.Service(), "%s", e.String())
	}
	d.c.events = append(d.c.events, Event{At: d.c.Now(), Node: d.name, Event: e})
	d.c.notePeerUp(d.name, e)
}

// reply is a CLI's answer to an admin request: the result it prints, or
// the error; "ok" when the core says nothing (dflt).
func reply(f func(string, error), dflt bool) func(node.Answer) {
	return func(a node.Answer) {
		if dflt && a.Err == nil && a.Result == "" {
			a.Result = "ok"
		}
		f(a.Result, a.Err)
	}
}

// serviceAction is daemon.serviceAction for one admin request made on
// this node: reply gets the answer the CLI would print, at once or when
// the action it started ends (wait: when the target is reached or failed,
// or at timeout when set).
func (d *daemon) serviceAction(r driver.Request, f func(string, error)) {
	cfg, ok := d.n.files[r.Service]
	if !ok {
		f("", fmt.Errorf("no service %s", r.Service))
		return
	}
	r.Nodes = cfg.NodeList(d.c.names)
	answer := reply(f, false)
	d.drv.ServiceAction(r, func(a node.Answer) {
		if !r.Local {
			d.c.noteAnswer(d.name, r.Service, r.Action, a)
		}
		answer(a)
	})
}

// nodeAction is daemon.nodeAction (freeze, thaw, drain).
func (d *daemon) nodeAction(action string, f func(string, error)) {
	d.drv.NodeAction(action, reply(f, true))
}

// keyword is daemon.keyword for set and unset: the keywords applied to
// this node's config, which the core installs as a new version and
// answers once every live peer holds it.
func (d *daemon) keyword(name, op string, kws []string, f func(string, error)) {
	cfg, ok := d.n.files[name]
	if !ok {
		f("", fmt.Errorf("no service %s", name))
		return
	}
	raw, err := simCodec.EditService(name, cfg.Raw, op, kws)
	if err == nil {
		cfg, err = simCodec.ParseService(name, raw)
	}
	if err != nil {
		f("", err)
		return
	}
	d.drv.EditConfig(node.ConfigRequest{Service: name, Config: cfg, What: "changed", Op: op, Kws: kws}, reply(f, true))
}
