package daemon

import (
	"fmt"
	"sort"

	"haven/dataset"
	"haven/node"
)

// configState is the loop-owned part of the daemon about configs that
// are not plain installed ones: the files that do not parse, and the
// config writes in flight (configs.go).
type configState struct {
	// invalid are the services whose config file does not parse: their
	// durable state is kept, they are shown as "config invalid" and the
	// daemon does not act on them until the config is repaired.
	invalid map[string]*badConfig
	// last is closed when the last config write handed to a worker has
	// ended: each write waits for the one before (the core's order).
	last chan struct{}
	// parked are the requests that read a config while a write of it is
	// in flight: they run once it is written (whenConfigIdle).
	parked map[string][]func()
	// merging: a turn of mergeMoreLater is queued.
	merging bool
	// refused are the peers' configs that do not parse here (a node in
	// nodes that is not a member, an invalid keyword), by service: the
	// status shows them as invalid until a config of that name is
	// installed or deleted here.
	refused map[string]string
	// orders are the peers' deletions and targets refused here for their
	// admin signature (node/configsigned.go), by service: the status shows
	// the last one (dataset.ServiceStatus.OrderRefused) until the config
	// is written again here or a target is taken.
	orders map[string]string
}

// badConfig is a service config file that does not parse.
type badConfig struct {
	raw []byte
	err string // "file:line: key: msg"
}

// setInvalid records that the config of name does not parse. Its durable
// state (frozen, target, local expect, version) is kept as it was.
func (d *Daemon) setInvalid(name string, raw []byte, err error) {
	if d.cfgs.invalid == nil {
		d.cfgs.invalid = map[string]*badConfig{}
	}
	d.cfgs.invalid[name] = &badConfig{raw: raw, err: err.Error()}
	d.drv.Input(node.ServiceKept{Service: name})
	d.changed()
}

// invalidNames lists the services whose config is invalid, sorted.
func (d *Daemon) invalidNames() []string {
	out := make([]string, 0, len(d.cfgs.invalid))
	for n := range d.cfgs.invalid {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// invalidInstance is what this node announces of a service whose config
// does not parse: its durable state, and "unknown" for its status, which
// peers count as possibly up, so that none starts a second instance while
// this one may still run.
func (d *Daemon) invalidInstance(name string) dataset.Instance {
	ds := d.dur.Services[name]
	mon := dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone}
	if ds.LocalExpect != "" {
		mon.LocalExpect = ds.LocalExpect
	}
	if ds.StartFailed {
		mon.State = dataset.StartFailed
	}
	return dataset.Instance{
		Avail:         dataset.StatusUnknown,
		Overall:       dataset.StatusUnknown,
		Frozen:        ds.Frozen,
		Monitor:       mon,
		Resources:     map[string]dataset.Resource{},
		ConfigVersion: ds.ConfigVersion,
		ConfigError:   d.cfgs.invalid[name].err,
	}
}

// invalidStatus is the status of a service whose config does not parse
// here: its nodes are those that announce an instance of it.
func (d *Daemon) invalidStatus(name string, nodes map[string]dataset.Node) dataset.ServiceStatus {
	return d.badStatus(name, d.cfgs.invalid[name].err, nodes)
}

// peerConfigRefused records a peer's config refused because it does not
// parse here (the last good config, if any, is kept: node.ConfigRefused).
func (d *Daemon) peerConfigRefused(e node.ConfigRefused) {
	if e.Deletion {
		d.orderRefused(e.Svc, fmt.Sprintf("the deletion from %s is refused here: %s (the config is kept)", e.From, e.Err))
		return
	}
	if !e.Kept || e.Err == "" {
		return
	}
	if d.cfgs.refused == nil {
		d.cfgs.refused = map[string]string{}
	}
	d.cfgs.refused[e.Svc] = fmt.Sprintf("the config from %s is refused here: %s", e.From, e.Err)
}

// orderRefused records a peer's deletion or target of svc refused here
// for its admin signature.
func (d *Daemon) orderRefused(svc, msg string) {
	if d.cfgs.orders == nil {
		d.cfgs.orders = map[string]string{}
	}
	d.cfgs.orders[svc] = msg
	d.changed()
}

// showRefused adds the peers' configs refused here to the status st: the
// error on a service this node has (its last good config kept), or a
// service shown as invalid when this node has none.
func (d *Daemon) showRefused(st *dataset.ClusterStatus, nodes map[string]dataset.Node) {
	for _, name := range sortedKeys(d.cfgs.orders) {
		if ss, ok := st.Services[name]; ok {
			ss.OrderRefused = d.cfgs.orders[name]
			st.Services[name] = ss
		}
	}
	for _, name := range sortedKeys(d.cfgs.refused) {
		msg := d.cfgs.refused[name]
		if ss, ok := st.Services[name]; ok {
			if ss.ConfigError == "" {
				ss.ConfigError = msg + " (the last good config is kept)"
				st.Services[name] = ss
			}
			continue
		}
		st.Services[name] = d.badStatus(name, msg, nodes)
	}
}

// badStatus is the status of a service without a valid config here.
func (d *Daemon) badStatus(name, err string, nodes map[string]dataset.Node) dataset.ServiceStatus {
	ss := dataset.ServiceStatus{
		PlacementState: "n/a",
		GlobalExpect:   dataset.ExpectNone,
		Instances:      map[string]dataset.Instance{},
		ConfigError:    err,
	}
	for _, node := range sortedKeys(nodes) {
		if _, ok := nodes[node].Services[name]; ok {
			ss.Nodes = append(ss.Nodes, node)
		}
	}
	if t := d.dur.Services[name].Target; t.Active() {
		ss.GlobalExpect = t.String()
	}
	aggregate(&ss, name, nodes, nil)
	return ss
}
