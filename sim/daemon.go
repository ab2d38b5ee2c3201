package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/driver"
	"haven/heartbeat"
	"haven/node"
)

// tickPeriod is the daemon's periodic tick (daemon.tickPeriod).
const tickPeriod = 500 * time.Millisecond

// daemon models one node's daemon loop (package daemon). It is rebuilt on
// every daemon start; what survives a restart is in Node.dur. Its methods
// carry the names of the daemon's so that the two can be kept in step.
type daemon struct {
	n    *Node
	c    *Cluster
	name string

	hb     heartbeat.Heartbeat
	events <-chan heartbeat.Event
	compat int // announced (opts.Compat)
	insts  map[string]*instance
	inames []string // sorted local service names

	mode     string // "stop", "shutdown", "restart" once a stop began
	nextTick time.Time

	// drv drives the node core (package driver: the loop rules, the
	// answers by ticket, the order of a Ready); core is its core (durable
	// state, targets, clears).
	drv  *driver.Driver
	core *node.Core

	// writes are the state writes in flight on a slow or failing disk
	// (disk.go)
	writes []simWrite

	// later are the arbitrator answers and fence ends due, pausedUntil
	// the end of a pause (quorum.go)
	later       []pending
	pausedUntil time.Time

	// guardLast is the guard's last answer handed to the core (guard.go)
	guardLast node.GuardReported
}

// instance is the daemon's runtime of one local service (daemon.instance).
// Its monitor, placement leader and flags are the node core's.
type instance struct {
	name    string
	cfg     *config.ServiceConfig
	busy    string // "start" | "stop" while an action runs (the fake driver)
	whole   bool   // busy is a restart of the whole instance (rollouts.go)
	busyEnd time.Time
}

// CoreRun is one daemon's run of its core, recorded (Options.Record):
// the core's config and first state, the recording of its inputs and
// outputs, the core at the end of the run.
type CoreRun struct {
	Node   string
	Config node.Config
	State  node.State
	Rec    *driver.Recording
	Core   *node.Core
}

// Runs are the daemons' runs of their cores, in the order they started
// (Options.Record).
func (c *Cluster) Runs() []CoreRun { return c.runs }

// startDaemon is daemon.New + Run up to the loop: install the services from
// the durable state, join the heartbeat, enter rejoin, publish, check.
func (n *Node) startDaemon() error {
	c := n.c
	now := c.clk.Now()
	if !n.machineUp {
		n.machineUp = true
		c.running[n.name] = map[string]bool{}
	}
	d := &daemon{n: n, c: c, name: n.name, compat: n.compat, insts: map[string]*instance{}}
	if c.opt.Record {
		rec := &driver.Recording{}
		cfg := c.coreConfig(n.name, n.compat, rec.Local(d))
		d.core = node.New(cfg, n.dur.Clone())
		d.drv = driver.New(d.core, effects{d}, c.clk)
		rec.Record(d.drv)
		c.runs = append(c.runs, CoreRun{Node: n.name, Config: cfg, State: n.dur.Clone(), Rec: rec, Core: d.core})
	} else {
		d.core = node.New(c.coreConfig(n.name, n.compat, d), n.dur.Clone())
		d.drv = driver.New(d.core, effects{d}, c.clk)
	}
	for _, name := range sortedKeys(n.files) { // loadServices / installInstance
		d.installInstance(n.files[name], now)
	}
	hb, err := c.net.Join(heartbeat.Config{Node: n.name, Members: c.members, ClusterName: "sim", Secret: simSecret,
		Timeout: c.opt.HBTimeout, Interval: c.opt.HBInterval})
	if err != nil {
		return err
	}
	d.hb, d.events = hb, hb.Events()
	n.d = d
	d.record(node.DaemonStarted{Compat: d.compat})
	d.drv.Start()
	d.drv.Publish()
	for _, name := range d.inames {
		d.drv.CheckNow(name)
	}
	d.nextTick = now.Add(tickPeriod)
	return nil
}

// process is one turn of daemon.loop at the clock's now: the heartbeat
// events one by one, the ends of actions, the step timer, the periodic
// tick; after each, orchestrate when the dataset changed (d.gen) or a
// heartbeat event changed the view (d.viewChanged), and publish.
// It reports whether it published anything.
func (d *daemon) process() bool {
	if d.paused() {
		return false
	}
	pub := d.guardStep()
	after := func() {
		if d.drv.Pass() {
			pub = true
		}
	}
	for d.events != nil {
		select {
		case ev, ok := <-d.events:
			if !ok {
				d.events = nil
				continue
			}
			d.drv.Heartbeat(ev)
			after()
			continue
		default:
		}
		break
	}
	now := d.c.clk.Now()
	for _, name := range d.inames {
		if inst := d.insts[name]; inst.busy != "" && !now.Before(inst.busyEnd) {
			d.actionDone(inst)
			after()
		}
	}
	if d.writesDone() {
		after()
	}
	if d.runLater() {
		after()
	}
	if at := d.drv.WakeAt(); !at.IsZero() && !now.Before(at) {
		d.drv.Wake()
		after()
	}
	if !now.Before(d.nextTick) {
		// daemon.tick (the sim's resources never change by themselves)
		d.drv.Tick()
		d.nextTick = now.Add(tickPeriod)
		after()
	}
	after()
	if d.mode != "" && d.readyToExit() {
		d.exit()
		return true
	}
	return pub
}

// due returns the earliest time process has work of its own.
func (d *daemon) due() time.Time {
	t := d.nextTick
	if at := d.drv.WakeAt(); !at.IsZero() && at.Before(t) {
		t = at
	}
	for _, inst := range d.insts {
		if inst.busy != "" && inst.busyEnd.Before(t) {
			t = inst.busyEnd
		}
	}
	if l := d.laterDue(); !l.IsZero() && l.Before(t) {
		t = l
	}
	if w := d.writeDue(); !w.IsZero() && w.Before(t) {
		t = w
	}
	return t
}

// peerStatus is this node's conclusion about a peer.
func (d *daemon) peerStatus(name string) dataset.NodeStatus {
	return d.core.PeerStatus(name, d.c.clk.Now())
}

// LocalInfo is the driver's part of this node's dataset entry
// (daemon.LocalInfo).
func (d *daemon) LocalInfo() dataset.Node {
	n := dataset.Node{Name: d.name, Labels: d.n.labels, Gen: d.drv.Gen()}
	if d.n.capacity != nil {
		c := *d.n.capacity
		n.Capacity = &c
	}
	return n
}

// LocalServices are the configs installed on this machine
// (daemon.LocalServices).
func (d *daemon) LocalServices() map[string]*config.ServiceConfig { return d.n.files }

// simCodec parses and edits the simulated service configs (the daemon's
// codec, files named NAME.toml).
var simCodec = tomlfile.ServiceCodec{File: func(name string) string { return name + ".toml" }}

// installInstance is daemon.installInstance: the core's instance of a
// config, and the driver's runtime when this node is one of its nodes.
// (A node removed from a running service's nodes is not modelled.)
func (d *daemon) installInstance(cfg *config.ServiceConfig, now time.Time) {
	local := cfg.HasNode(d.name, d.c.names)
	specs := node.LadderSpecs(cfg)
	monitored := false
	for _, s := range specs {
		monitored = monitored || s.Monitor
	}
	d.drv.Input(node.InstanceInstalled{Service: cfg.Name, Spec: node.InstanceSpec{Local: local, Runnable: local, Monitored: monitored,
		Resources: specs, MonitorAction: cfg.MonitorAction, Flex: cfg.IsFlex()}, Now: now})
	if local && d.insts[cfg.Name] == nil {
		d.insts[cfg.Name] = &instance{name: cfg.Name}
	}
	if inst := d.insts[cfg.Name]; inst != nil {
		inst.cfg = cfg
	}
	d.relist()
}

// relist sorts the names of the local instances.
func (d *daemon) relist() {
	d.inames = sortedKeys(d.insts)
}

// applyConfig is daemon.applyConfig: a config the core hands out is
// written to the simulated machine's disk at once (or removed), the
// instance rebuilt (or forgotten), and reported.
func (d *daemon) applyConfig(op node.ConfigOp) {
	now := d.c.clk.Now()
	name := op.Service
	if op.Config == nil {
		delete(d.n.files, name)
		delete(d.insts, name)
		d.relist()
		d.drv.Input(node.InstanceRemoved{Service: name})
		d.drv.Changed()
		d.drv.Input(node.ConfigWritten{Service: name, Now: now})
		return
	}
	d.n.files[name] = op.Config
	d.installInstance(op.Config, now)
	d.drv.Changed()
	d.drv.Input(node.ConfigWritten{Service: name, Now: now})
	d.drv.Input(node.CheckOrdered{Service: name})
}

// startAction is the fake resource driver of an action the core ordered:
// it takes the service's simulated duration (a restart of the one
// resource: its start duration); process ends it.
func (d *daemon) startAction(a node.Action) {
	inst := d.insts[a.Service]
	if a.Kind == "start" {
		if d.n.tokens == nil {
			d.n.tokens = map[string]uint64{}
		}
		d.n.tokens[a.Service] = a.FencingToken
		d.c.noteToken(a.Service, d.name, a.FencingToken)
	}
	if a.Kind == "start" || a.Kind == "restart" {
		d.c.noteStart(a.Service, d.name)
	}
	if a.Kind == "restart" && a.RID == "" {
		d.c.noteWholeRestart(a.Service, d.name)
	}
	if a.Kind == "restart" && a.RID == "" && d.c.running[d.name][a.Service] {
		// a restart of the whole instance stops it first: down until its
		// start ends (and down still when that start fails)
		d.c.running[d.name][a.Service] = false
		d.c.noteRunning(a.Service)
	}
	inst.busy, inst.whole = a.Kind, a.Kind == "restart" && a.RID == ""
	kind := a.Kind
	if kind == "restart" {
		kind = "start"
	}
	inst.busyEnd = d.c.clk.Now().Add(d.c.duration(inst.name, kind))
}

// actionDone is daemon.actionDone and the status check that follows: the
// simulated resources change, the instance status is refreshed, then the
// core takes the end of the action.
func (d *daemon) actionDone(inst *instance) {
	action := inst.busy
	ok := d.c.actionResult(d.name, inst.name, action)
	if ok {
		d.c.running[d.name][inst.name] = action == "start" || action == "restart"
		d.c.noteRunning(inst.name)
	}
	inst.busy, inst.whole = "", false
	var err error
	if !ok {
		err = fmt.Errorf("%s failed (scripted)", action)
	}
	// the core orders the full check that ends the action
	d.drv.ActionDone(inst.name, action, err)
}

// simRID is the resource of a simulated instance whose config has none
// (a scenario's service line makes one resource of this name).
const simRID = "app#main"

// runCheck is the fake resource driver's status check: what the
// simulated resources say, at once. Every resource of the service's
// config (the ones not disabled) is up or down together, under its own
// name: the restart ladder and monitor_action follow the config's
// resources by name, as on a real node.
func (d *daemon) runCheck(ck node.Check) {
	st := dataset.StatusDown
	if d.c.running[d.name][ck.Service] {
		st = dataset.StatusUp
	}
	res := map[string]dataset.Resource{}
	var cfg *config.ServiceConfig
	if inst := d.insts[ck.Service]; inst != nil {
		cfg = inst.cfg
	}
	for _, rid := range simRIDs(cfg) {
		res[rid] = dataset.Resource{Status: st}
	}
	d.drv.Input(node.Checked{Check: ck, Resources: res, Now: d.c.clk.Now()})
}

// simRIDs are the resources a simulated instance of cfg reports: the
// config's, simRID when it has none.
func simRIDs(cfg *config.ServiceConfig) []string {
	var out []string
	if cfg != nil {
		for _, r := range cfg.Resources {
			if !r.Disable {
				out = append(out, r.RID)
			}
		}
	}
	if len(out) == 0 {
		out = []string{simRID}
	}
	return out
}

func frozenWord(f bool) string {
	if f {
		return "frozen"
	}
	return "thawed"
}

// localNode is daemon.localNode: the driver's part, then the core's.
func (d *daemon) localNode() dataset.Node {
	n := d.LocalInfo()
	n.Configs = d.core.ConfigEntries()
	return d.core.Dataset(n)
}

// beginStop is daemon.beginStop (the core's BeginStop); "restart" is a
// stop followed by a start once the daemon has exited.
func (d *daemon) beginStop(mode string) {
	if d.mode != "" {
		return
	}
	d.mode = mode
	if mode == "stop" {
		d.guardMaintenance() // before the node announces maintenance (guard.go)
	}
	d.drv.BeginStop(mode)
}

func (d *daemon) readyToExit() bool {
	if len(d.writes) > 0 {
		return false // the last states reach the disk first
	}
	for _, inst := range d.insts {
		if inst.busy != "" {
			return false
		}
	}
	return true
}

// exit is the end of daemon.Run: the last state reaches the peers, then the
// heartbeat closes.
func (d *daemon) exit() {
	if d.mode == "shutdown" {
		d.n.guard.armed = false // every local instance stopped: nothing to end
	}
	d.drv.Publish()
	d.hb.Close()
	d.n.d, d.n.ranUntil = nil, d.c.clk.Now()
	d.record(node.DaemonStopped{Mode: d.mode})
	if d.mode == "restart" {
		if err := d.n.startDaemon(); err != nil {
			d.c.logf(d.name, "", "daemon start failed: %v", err)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
