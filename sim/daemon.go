package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/heartbeat"
	"haven/monitor"
	"haven/node"
	"haven/view"
)

// tickPeriod is the daemon's periodic tick (daemon.tickPeriod).
const tickPeriod = 500 * time.Millisecond

// fullPassPeriod is the daemon's safety-net pass (daemon.fullPassPeriod).
const fullPassPeriod = 5 * time.Second

// daemon models one node's daemon loop (package daemon). It is rebuilt on
// every daemon start; what survives a restart is in Node.dur. Its methods
// carry the names of the daemon's so that the two can be kept in step.
type daemon struct {
	n    *Node
	c    *Cluster
	name string

	hb      heartbeat.Heartbeat
	events  <-chan heartbeat.Event
	monitor dataset.NodeMonitor
	compat  int  // announced (opts.Compat)
	compOK  bool // d.compat: every live member announces ours
	started time.Time
	peers   map[string]*peer
	pnames  []string // sorted peer names
	insts   map[string]*instance
	inames  []string // sorted local service names

	gen, stepGen, published uint64
	lastStep                time.Time
	// viewChanged is set when a peer's data or status changed since the
	// last Step (daemon.viewChanged).
	viewChanged      bool
	stopping         bool
	mode             string // "stop", "shutdown", "restart" once a stop began
	stepAt, nextTick time.Time

	// core is the node core (package node): durable state, targets,
	// clears, answers by ticket.
	core    *node.Core
	tickets map[node.Ticket]func(node.Answer)
}

// peer is the daemon's view of another member (daemon.peer) plus the status
// the timeline last showed.
type peer struct {
	view.Peer
	shown      dataset.NodeStatus
	lastStatus dataset.NodeStatus // daemon.peer.lastStatus
}

// instance is the daemon's runtime of one local service (daemon.instance).
// Its monitor, placement leader and flags are the node core's.
type instance struct {
	name    string
	cfg     *config.ServiceConfig
	avail   dataset.Status
	busy    string // "start" | "stop" while an action runs (the fake driver)
	busyEnd time.Time
	done    func(error)
}

// startDaemon is daemon.New + Run up to the loop: install the services from
// the durable state, join the heartbeat, enter rejoin, publish, check.
func (n *Node) startDaemon() error {
	c := n.c
	now := c.clk.Now()
	if !n.machineUp {
		n.machineUp = true
		c.running[n.name] = map[string]bool{}
	}
	d := &daemon{n: n, c: c, name: n.name, monitor: dataset.NodeIdle, compat: n.compat, compOK: true,
		started: now, peers: map[string]*peer{}, insts: map[string]*instance{},
		core: node.New(node.Config{Name: n.name}, n.dur.Clone()), tickets: map[node.Ticket]func(node.Answer){}}
	for _, name := range c.svcNames { // every config is installed everywhere
		d.core.AddInstance(name, c.svcs[name].HasNode(n.name, c.names), now)
	}
	for _, name := range c.svcNames { // loadServices / installInstance
		cfg := c.svcs[name]
		if !cfg.HasNode(n.name, c.names) {
			continue
		}
		d.insts[name] = &instance{name: name, cfg: cfg, avail: dataset.StatusUnknown}
		d.inames = append(d.inames, name)
	}
	for _, m := range c.names { // startHeartbeat
		if m != n.name {
			d.peers[m] = &peer{shown: dataset.NodeStUnknown}
			d.pnames = append(d.pnames, m)
		}
	}
	hb, err := c.net.Join(heartbeat.Config{Node: n.name, Members: c.members, ClusterName: "sim", Secret: simSecret,
		Timeout: c.opt.HBTimeout, Interval: c.opt.HBInterval})
	if err != nil {
		return err
	}
	d.hb, d.events = hb, hb.Events()
	n.d = d
	c.logf(n.name, "", "daemon started (compat %d)", d.compat)
	if len(d.peers) > 0 {
		d.setMonitor(dataset.NodeRejoin, "waiting to hear from every cluster node")
	}
	d.changed()
	d.publish()
	for _, name := range d.inames {
		d.check(d.insts[name])
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
	pub := false
	after := func() {
		d.showPeers()
		if d.gen != d.stepGen || d.viewChanged {
			d.orchestrate()
		}
		if d.gen != d.published {
			pub = true
		}
		d.publish()
	}
	for d.events != nil {
		select {
		case ev, ok := <-d.events:
			if !ok {
				d.events = nil
				continue
			}
			d.onHeartbeat(ev)
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
	if !d.stepAt.IsZero() && !now.Before(d.stepAt) {
		d.stepAt = time.Time{}
		d.orchestrate()
		after()
	}
	if !now.Before(d.nextTick) {
		// daemon.tick (the sim's resources never change by themselves)
		d.updateRejoin()
		for _, name := range sortedKeys(d.peers) {
			p := d.peers[name]
			if st := d.peerStatus(p); st != p.lastStatus {
				p.lastStatus = st
				d.viewChanged = true
			}
		}
		if now.Sub(d.lastStep) >= fullPassPeriod {
			d.orchestrate()
		}
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
	if !d.stepAt.IsZero() && d.stepAt.Before(t) {
		t = d.stepAt
	}
	for _, inst := range d.insts {
		if inst.busy != "" && inst.busyEnd.Before(t) {
			t = inst.busyEnd
		}
	}
	return t
}

// onHeartbeat mirrors daemon.onHeartbeat (config distribution aside: every
// simulated node has every config from the start).
func (d *daemon) onHeartbeat(ev heartbeat.Event) {
	p := d.peers[ev.Node]
	if p == nil {
		return
	}
	switch ev.Kind {
	case heartbeat.Up:
		p.Up = true
	case heartbeat.Down:
		p.Peer = view.NoteDown(p.Peer)
	case heartbeat.Data:
		if ev.Data == nil {
			return
		}
		wasMaint := !p.MaintSince.IsZero()
		p.Peer = view.NoteData(p.Peer, ev.Data, d.c.clk.Now())
		if !wasMaint && !p.MaintSince.IsZero() {
			d.c.logf(d.name, "", "peer %s in maintenance (grace %s)", ev.Node, d.c.opt.MaintenanceGrace)
		}
		d.core.MergeTargets(ev.Data.Targets, d.snapshot)
		d.core.MergeClears(ev.Data.Clears, d.c.clk.Now())
		d.applyReady()
	default:
		return
	}
	d.updateCompat()
	d.updateRejoin()
	// a peer's change is a change of this node's view: decide again
	d.viewChanged = true
}

// showPeers logs the changes of the peers' status as this node concludes
// it (view.Status): the timeline's "n2: n1 up -> down".
func (d *daemon) showPeers() {
	for _, name := range d.pnames {
		p := d.peers[name]
		if st := d.peerStatus(p); st != p.shown {
			d.c.logf(d.name, "", "peer %s %s -> %s", name, p.shown, st)
			p.shown = st
		}
	}
}

func (d *daemon) peerStatus(p *peer) dataset.NodeStatus {
	return view.Status(p.Peer, d.c.clk.Now(), d.c.opt.MaintenanceGrace)
}

// updateCompat mirrors daemon.updateCompat.
func (d *daemon) updateCompat() {
	peers := make(map[string]view.Peer, len(d.peers))
	for name, p := range d.peers {
		peers[name] = p.Peer
	}
	ok := view.CompatOK(d.compat, peers)
	if ok == d.compOK {
		return
	}
	d.compOK = ok
	if ok {
		d.c.logf(d.name, "", "cluster members run compatible versions. enable ha orchestration")
	} else {
		d.c.logf(d.name, "", "cluster members run incompatible versions. disable ha orchestration")
	}
	d.changed()
}

// updateRejoin mirrors daemon.updateRejoin.
func (d *daemon) updateRejoin() {
	if d.monitor != dataset.NodeRejoin {
		return
	}
	var missing []string
	for _, name := range d.pnames {
		if d.peers[name].Data == nil {
			missing = append(missing, name)
		}
	}
	grace := d.c.opt.RejoinGrace
	switch view.Rejoin(len(missing), d.started, d.c.clk.Now(), grace) {
	case view.RejoinDone:
		d.setMonitor(dataset.NodeIdle, "every cluster node was heard from")
		return
	case view.StayRejoin:
		return
	}
	reason := fmt.Sprintf("rejoin grace period (%s) ended with nodes never heard from: %s", grace, strings.Join(missing, ", "))
	if !d.core.NodeFrozen() {
		d.setNodeFrozen(true, reason+": node frozen")
	}
	d.setMonitor(dataset.NodeIdle, reason)
}

// snapshot mirrors daemon.snapshot.
func (d *daemon) snapshot() monitor.Snapshot {
	peers := make(map[string]view.Peer, len(d.peers))
	for name, p := range d.peers {
		peers[name] = p.Peer
	}
	svcs := make(map[string]*config.ServiceConfig, len(d.insts))
	for _, name := range d.c.svcNames {
		svcs[name] = d.c.svcs[name]
	}
	return view.Snapshot(view.Input{
		Now:              d.c.clk.Now(),
		Local:            d.localNode(),
		Peers:            peers,
		MaintenanceGrace: d.c.opt.MaintenanceGrace,
		ClusterNodes:     d.c.names,
		Services:         svcs,
		Compat:           d.compOK,
		ReadyPeriod:      d.c.opt.ReadyPeriod,
	})
}

// orchestrate is daemon.orchestrate: the node core's decision pass.
func (d *daemon) orchestrate() {
	if d.stopping {
		return
	}
	d.stepGen = d.gen
	d.lastStep = d.c.clk.Now()
	d.viewChanged = false
	d.core.Orchestrate(d.snapshot())
	d.applyReady()
}

// armStep mirrors daemon.armStep (the step timer is a due time here).
func (d *daemon) armStep(t time.Time) {
	if t.IsZero() {
		return
	}
	if !d.stepAt.IsZero() && !t.Before(d.stepAt) && d.c.clk.Now().Before(d.stepAt) {
		return
	}
	d.stepAt = t
}

// runAction is daemon.runAction: the node core orders the action
// (startAction runs it).
func (d *daemon) runAction(inst *instance, action, reason string, done func(error)) {
	if err := d.core.RunAction(inst.name, action, reason, d.c.clk.Now()); err != nil {
		if done != nil {
			done(err)
		}
		return
	}
	inst.done = done
	d.applyReady()
}

// startAction is the fake resource driver of an action the core ordered:
// it takes the service's simulated duration; process ends it.
func (d *daemon) startAction(a node.Action) {
	inst := d.insts[a.Service]
	inst.busy = a.Kind
	inst.busyEnd = d.c.clk.Now().Add(d.c.duration(inst.name, a.Kind))
}

// actionDone is daemon.actionDone and the status check that follows: the
// simulated resources change, the instance status is refreshed, then the
// core takes the end of the action.
func (d *daemon) actionDone(inst *instance) {
	action := inst.busy
	ok := d.c.actionResult(d.name, inst.name, action)
	if ok {
		d.c.running[d.name][inst.name] = action == "start"
	}
	d.check(inst)
	inst.busy = ""
	var err error
	if !ok {
		err = fmt.Errorf("%s failed (scripted)", action)
	}
	d.core.ActionDone(inst.name, action, err, d.c.clk.Now())
	d.applyReady()
	if done := inst.done; done != nil {
		inst.done = nil
		done(err)
	}
}

// check is the status check: the instance's avail is what the simulated
// resources say (a check takes no simulated time).
func (d *daemon) check(inst *instance) {
	avail := dataset.StatusDown
	if d.c.running[d.name][inst.name] {
		avail = dataset.StatusUp
	}
	if avail != inst.avail {
		if inst.avail != dataset.StatusUnknown || avail == dataset.StatusUp {
			d.c.logf(d.name, inst.name, "avail %s -> %s", inst.avail, avail)
		}
		inst.avail = avail
		d.changed()
	}
}

func (d *daemon) setFrozen(name string, frozen bool, reason string) {
	d.core.SetFrozen(name, frozen, reason)
	d.applyReady()
}

func (d *daemon) setNodeFrozen(frozen bool, reason string) {
	d.core.SetNodeFrozen(frozen, reason)
	d.applyReady()
}

func frozenWord(f bool) string {
	if f {
		return "frozen"
	}
	return "thawed"
}

func (d *daemon) setMonitor(m dataset.NodeMonitor, reason string) {
	if d.monitor == m {
		return
	}
	d.c.logf(d.name, "", "node monitor %s -> %s: %s", d.monitor, m, reason)
	d.monitor = m
	d.changed()
}

func (d *daemon) changed() { d.gen++ }

func (d *daemon) publish() {
	if d.hb == nil || d.gen == d.published {
		return
	}
	d.published = d.gen
	d.hb.Publish(d.localNode())
}

// localNode mirrors daemon.localNode.
func (d *daemon) localNode() dataset.Node {
	n := dataset.Node{Name: d.name, Monitor: d.monitor, Frozen: d.core.NodeFrozen(), Compat: d.compat,
		Labels: d.n.labels, Services: map[string]dataset.Instance{}, Targets: d.core.Targets(), Clears: d.core.Clears(), Gen: d.gen}
	for name, inst := range d.insts {
		info, _ := d.core.Instance(name)
		n.Services[name] = dataset.Instance{Avail: inst.avail, Overall: inst.avail, Frozen: d.core.Frozen(name),
			Monitor: info.Monitor, PlacementLeader: info.Leader, Flags: info.Flags, Resources: map[string]dataset.Resource{}}
	}
	return n
}

// beginStop mirrors daemon.beginStop; "restart" is a stop followed by a
// start once the daemon has exited.
func (d *daemon) beginStop(mode string) {
	if d.mode != "" {
		return
	}
	d.mode, d.stopping = mode, true
	if mode == "shutdown" {
		d.setMonitor(dataset.NodeShutting, "daemon shutdown requested")
		for _, name := range d.inames {
			if inst := d.insts[name]; inst.avail != dataset.StatusDown {
				d.runAction(inst, "stop", "daemon shutdown", nil)
			}
		}
		return
	}
	d.setMonitor(dataset.NodeMaintenance, "daemon "+mode+" requested: services keep running")
}

func (d *daemon) readyToExit() bool {
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
	d.publish()
	d.hb.Close()
	d.n.d = nil
	d.c.logf(d.name, "", "daemon stopped (%s)", d.mode)
	if d.mode == "restart" {
		if err := d.n.startDaemon(); err != nil {
			d.c.logf(d.name, "", "daemon start failed: %v", err)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
