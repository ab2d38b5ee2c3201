package sim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/driver"
	"haven/heartbeat"
	"haven/internal/clock"
	"haven/node"
)

// simSecret is the cluster secret of every simulated node.
const simSecret = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"

// T0 is the simulated epoch: times in the timeline are relative to it.
var T0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Options are the node.toml timings shared by every simulated node, and the
// default simulated durations of actions.
type Options struct {
	HBTimeout        time.Duration // hb.timeout (default 3s)
	HBInterval       time.Duration // hb.interval (default 1s)
	ReadyPeriod      time.Duration // ready_period (default 2s)
	MaintenanceGrace time.Duration // maintenance_grace_period (default 6s)
	RejoinGrace      time.Duration // rejoin_grace_period (default 10s)
	StartDuration    time.Duration // a start action (default 1s)
	StopDuration     time.Duration // a stop action (default 1s)
	ReadyFastAck     bool          // node.ready_fast_ack on every node
	CheckInterval    time.Duration // check_interval (default 60s)
	MonitorInterval  time.Duration // monitor_interval (default 5s)
	// Guard is node.guard on every node (guard.go), GuardLease its
	// node.guard_lease (default 12s).
	Guard      bool
	GuardLease time.Duration
	// Record keeps each daemon's run of its core (driver.Recording),
	// in Cluster.Runs, to replay it.
	Record bool
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.HBTimeout, 3*time.Second)
	def(&o.HBInterval, time.Second)
	def(&o.ReadyPeriod, 2*time.Second)
	def(&o.MaintenanceGrace, 6*time.Second)
	def(&o.RejoinGrace, 10*time.Second)
	def(&o.StartDuration, time.Second)
	def(&o.StopDuration, time.Second)
	def(&o.CheckInterval, 60*time.Second)
	def(&o.MonitorInterval, 5*time.Second)
	def(&o.GuardLease, 12*time.Second)
}

// Cluster is a simulated cluster: N nodes in one process, one fake clock,
// the heartbeat's in-memory network.
type Cluster struct {
	opt     Options
	clk     *clock.Fake
	net     *heartbeat.MemNetwork
	members []config.Member
	names   []string // sorted
	nodes   map[string]*Node
	quantum time.Duration // the longest step between two turns of the daemons

	svcs     map[string]*config.ServiceConfig
	svcNames []string                            // sorted
	actDur   map[string]map[string]time.Duration // svc -> action -> duration

	// running is the truth about the simulated resources: node -> svc -> up.
	running map[string]map[string]bool
	fails   map[string]int // "node/svc/action" -> failures left (-1: always)

	lines  []string  // the timeline
	events []Event   // the node cores' typed events
	runs   []CoreRun // with Options.Record

	q quorumOptions // quorum.go

	startOverlaps map[string][]string // svc -> starts begun while active elsewhere (starts.go)
	startCrowds   map[string][]crowd  // svc -> every start, with the other nodes it was active on (starts.go)
	tokenMax      map[string]uint64   // svc -> the greatest fencing token handed out so far (starts.go)
	tokenBack     map[string][]string // svc -> starts whose token was below one handed out before (starts.go)

	paths   map[[2]string]*onPath // from, to -> frames held, lost, duplicated (onpath.go)
	acks    []Ack                 // the admin targets acknowledged (observers.go)
	revived map[string][]string   // node -> when a peer saw it up while it did not run

	rollbacks     map[string]map[string][]rollbackSeen // svc -> rollout undone -> the rollbacks written to a disk (rollouts.go)
	restartCrowds map[string][]crowd                   // svc -> every restart of a whole instance, with the others in one (rollouts.go)

	// ctx, when set, ends Run early once done (a what-if interrupted)
	ctx context.Context
}

// Event is a typed event of a node core, at a simulated time.
type Event struct {
	At    time.Duration // since T0
	Node  string
	Event node.Event
}

// Events returns the node cores' typed events so far, in order.
func (c *Cluster) Events() []Event { return c.events }

// Node is one simulated machine and its daemon.
type Node struct {
	name      string
	c         *Cluster
	machineUp bool
	compat    int // announced by the next daemon start
	labels    map[string]string
	// capacity is what its daemon publishes for the services' requests
	// (node capacity_cpu= capacity_mem=); nil: none (a node of an
	// earlier release)
	capacity *dataset.Capacity
	dur      node.State // what its daemon persisted (the disk)
	disk     diskState  // how that disk behaves (disk.go)
	// files are the service configs installed on the machine (its
	// service directory): every service of the scenario at first, then
	// what config distribution writes.
	files map[string]*config.ServiceConfig
	d     *daemon // nil while the daemon is not running
	// tokens are the HAVEN_FENCING_TOKEN of the last start the fake
	// driver ran, by service (what the app saw).
	tokens map[string]uint64
	// guard is the machine's node guard (guard.go): it survives the
	// daemon, not the machine.
	guard simGuard
	// ranUntil is when its daemon last stopped running (a crash, an
	// exit, a pause): the revival observer's reference (observers.go).
	ranUntil time.Time
}

// New returns a cluster of the named nodes; no daemon runs yet.
func New(names []string, opt Options) (*Cluster, error) {
	opt.defaults()
	if opt.HBInterval >= opt.HBTimeout {
		return nil, fmt.Errorf("hb.interval %s must be shorter than hb.timeout %s", opt.HBInterval, opt.HBTimeout)
	}
	c := &Cluster{opt: opt, clk: clock.NewFake(T0), nodes: map[string]*Node{}, svcs: map[string]*config.ServiceConfig{},
		actDur: map[string]map[string]time.Duration{}, running: map[string]map[string]bool{}, fails: map[string]int{}}
	c.net = heartbeat.NewMemNetwork(c.clk)
	c.net.Lose(c.loseFrame) // paused daemons, frames lost on the path (onpath.go)
	c.names = append([]string(nil), names...)
	sort.Strings(c.names)
	for i, n := range c.names {
		if _, dup := c.nodes[n]; dup || n == "" {
			return nil, fmt.Errorf("empty or duplicate node name %q", n)
		}
		c.members = append(c.members, config.Member{Name: n, Addr: fmt.Sprintf("10.0.0.%d:10000", i+1)})
		c.nodes[n] = &Node{name: n, c: c, machineUp: true, compat: 1, labels: map[string]string{}, dur: node.State{Services: map[string]node.ServiceState{}},
			files: map[string]*config.ServiceConfig{}}
		c.running[n] = map[string]bool{}
	}
	c.quantum = opt.quantum()
	return c, nil
}

// quantum is the longest step between two turns of the daemons: at least
// a turn every beat period, as the daemon reacts to each event.
func (o Options) quantum() time.Duration {
	return min(o.HBInterval, max(10*time.Millisecond, min(500*time.Millisecond, o.HBTimeout/30)))
}

// AddService installs a service config on every node (before the daemons
// start; a later change travels by config distribution: svcmgr set,
// unset, delete).
// startDur and stopDur override the action durations when positive.
func (c *Cluster) AddService(cfg *config.ServiceConfig, startDur, stopDur time.Duration) error {
	if _, dup := c.svcs[cfg.Name]; dup {
		return fmt.Errorf("service %s defined twice", cfg.Name)
	}
	for _, n := range c.nodes {
		if n.d != nil {
			return fmt.Errorf("service %s: services are defined before the daemons start", cfg.Name)
		}
	}
	for _, n := range cfg.NodeList(c.names) {
		if c.nodes[n] == nil {
			return fmt.Errorf("service %s: node %s is not a cluster member", cfg.Name, n)
		}
	}
	c.svcs[cfg.Name] = cfg
	for _, n := range c.nodes {
		n.files[cfg.Name] = cfg
	}
	c.svcNames = append(c.svcNames, cfg.Name)
	sort.Strings(c.svcNames)
	c.actDur[cfg.Name] = map[string]time.Duration{"start": startDur, "stop": stopDur}
	return nil
}

// Node returns the named node, or nil.
func (c *Cluster) Node(name string) *Node { return c.nodes[name] }

// Now returns the simulated time since T0.
func (c *Cluster) Now() time.Duration { return c.clk.Now().Sub(T0) }

// Timeline returns the lines logged so far.
func (c *Cluster) Timeline() []string { return c.lines }

func (c *Cluster) logf(node, svc, format string, args ...any) {
	who := node
	if svc != "" {
		who += " " + svc
	}
	c.lines = append(c.lines, fmt.Sprintf("%s  %-9s %s", fmtTime(c.Now()), who, fmt.Sprintf(format, args...)))
}

func fmtTime(d time.Duration) string { return fmt.Sprintf("%8.3fs", d.Seconds()) }

func (c *Cluster) duration(svc, action string) time.Duration {
	if d := c.actDur[svc][action]; d > 0 {
		return d
	}
	if action == "stop" {
		return c.opt.StopDuration
	}
	return c.opt.StartDuration
}

// Fail scripts the next count runs of action ("start" or "stop") of svc on
// node to fail; count < 0 means every run until Fail(..., 0).
func (c *Cluster) Fail(node, svc, action string, count int) {
	key := node + "/" + svc + "/" + action
	if count == 0 {
		delete(c.fails, key)
		return
	}
	c.fails[key] = count
}

// actionResult consumes a scripted failure.
func (c *Cluster) actionResult(node, svc, action string) bool {
	key := node + "/" + svc + "/" + action
	left, ok := c.fails[key]
	if !ok {
		return true
	}
	if left > 0 {
		if left == 1 {
			delete(c.fails, key)
		} else {
			c.fails[key] = left - 1
		}
	}
	return false
}

// settle lets the daemons exchange what they have to say at the current
// time, in node-name order, until no daemon publishes anything new.
func (c *Cluster) settle() {
	for round := 0; ; round++ {
		if round > 1000 {
			panic("sim: the daemons do not settle (a publish loop?)")
		}
		if c.ctx != nil && c.ctx.Err() != nil {
			return // an abandoned what-if: its state is thrown away
		}
		active := c.fireGuards()
		for _, name := range c.names {
			if d := c.nodes[name].d; d != nil && d.process() {
				active = true
			}
		}
		if !active {
			return
		}
	}
}

// Run advances the simulated time by dur, letting the heartbeats and the
// daemons work (less when the cluster's context ended).
func (c *Cluster) Run(dur time.Duration) {
	end := c.clk.Now().Add(dur)
	c.settle()
	for c.clk.Now().Before(end) {
		if c.ctx != nil && c.ctx.Err() != nil {
			return
		}
		now := c.clk.Now()
		next := now.Add(c.quantum)
		if end.Before(next) {
			next = end
		}
		for _, name := range c.names {
			if d := c.nodes[name].d; d != nil {
				if t := d.due(); t.After(now) && t.Before(next) {
					next = t
				}
			}
			if g := &c.nodes[name].guard; g.armed && g.until.After(now) && g.until.Before(next) {
				next = g.until
			}
		}
		c.net.Advance(next.Sub(now))
		c.settle()
	}
}

// Start boots the daemon of node (after a crash the machine comes back
// with every service down). compat > 0 changes the announced compat.
func (c *Cluster) Start(node string, compat int) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	if compat > 0 {
		n.compat = compat
	}
	if n.d != nil {
		return fmt.Errorf("%s: the daemon is already running", node)
	}
	err = n.startDaemon()
	c.settle()
	return err
}

// Stop asks the daemon of node to stop: "stop" (maintenance, services keep
// running), "shutdown" (stop the local instances, announce shutting) or
// "restart" (stop, then start again; compat > 0 changes the compat).
func (c *Cluster) Stop(node, mode string, compat int) error {
	n, err := c.daemonOf(node)
	if err != nil {
		return err
	}
	if compat > 0 {
		n.compat = compat
	}
	n.d.beginStop(mode)
	c.settle()
	return nil
}

// Crash stops node without a clean stop: the network loses it, its
// daemon stops acting and its services die with the machine.
func (c *Cluster) Crash(node string) error {
	n, err := c.node(node)
	if err != nil {
		return err
	}
	c.net.Crash(node)
	n.d, n.machineUp, n.guard, n.ranUntil = nil, false, simGuard{}, c.clk.Now()
	c.running[node] = map[string]bool{}
	c.logf(node, "", "crashed")
	c.settle()
	return nil
}

// Kill makes the resources of svc on node die (the app's process is
// killed): the next check there says down.
func (c *Cluster) Kill(node, svc string) error {
	if _, err := c.node(node); err != nil {
		return err
	}
	if c.svcs[svc] == nil {
		return fmt.Errorf("no service %s", svc)
	}
	c.running[node][svc] = false
	c.logf(node, svc, "killed (its app's process died)")
	c.settle()
	return nil
}

// Partition cuts every link between the nodes of a and those of b.
func (c *Cluster) Partition(a, b []string) {
	c.net.Partition(a, b)
	c.logf("-", "", "partition %s | %s", strings.Join(a, " "), strings.Join(b, " "))
}

// Heal removes every partition.
func (c *Cluster) Heal() {
	c.net.Heal()
	c.logf("-", "", "partitions healed")
}

// Admin runs an admin action on node: "svcmgr -s svc ACTION" when svc is
// set, else "nodemgr ACTION". arg is --to (switch) or --node (clear).
func (c *Cluster) Admin(node, svc, action, arg string, local bool) (string, error) {
	return c.admin(node, svc, action, arg, local, false, false)
}

// AdminForce runs "svcmgr -s SVC start --local --force" on node.
func (c *Cluster) AdminForce(node, svc string) (string, error) {
	return c.admin(node, svc, "start", "", true, false, true)
}

// AdminWait runs "svcmgr -s SVC ACTION --wait" on node: the target's
// --wait caller is a ticket of the node core, answered when the target is
// reached or failed (its answer comes on the timeline then).
func (c *Cluster) AdminWait(node, svc, action, arg string) (string, error) {
	return c.admin(node, svc, action, arg, false, true, false)
}

// AdminWaitFor is AdminWait with --time: the answer comes at the latest
// after timeout, with where the target stands.
func (c *Cluster) AdminWaitFor(node, svc, action, arg string, timeout time.Duration) (string, error) {
	return c.adminReq(node, driver.Request{Service: svc, Action: action, Node: arg, Wait: true, WaitTimeout: timeout})
}

// Keyword runs "svcmgr -s SVC set|unset --kw K[=V] ..." on node: the edit
// is installed there and answered once every live peer holds it (its
// answer comes on the timeline then).
func (c *Cluster) Keyword(node, svc, op string, kws []string) (string, error) {
	return c.request(node, svc, op, "(answered when every live node holds the change)", func(d *daemon, reply func(string, error)) {
		d.keyword(svc, op, kws, reply)
	})
}

func (c *Cluster) admin(node, svc, action, arg string, local, wait, force bool) (string, error) {
	return c.adminReq(node, driver.Request{Service: svc, Action: action, Node: arg, Local: local, Force: force, Wait: wait})
}

// adminReq runs an admin request on node (r.Service "": a node action).
func (c *Cluster) adminReq(node string, r driver.Request) (string, error) {
	if r.Action == "rollout" {
		c.watchMinUp(r.Service)
	}
	pending := "(answered when the action ends)"
	if r.Wait {
		pending = "(waiting: answered when the target is reached)"
	}
	return c.request(node, r.Service, r.Action, pending, func(d *daemon, reply func(string, error)) {
		if r.Service == "" {
			d.nodeAction(r.Action, reply)
			return
		}
		d.serviceAction(r, reply)
	})
}

// request runs an admin request on node's daemon: its answer is returned
// when it comes at once (else pending), and put on the timeline when it
// comes later.
func (c *Cluster) request(node, svc, action, pending string, do func(*daemon, func(string, error))) (string, error) {
	n, err := c.daemonOf(node)
	if err != nil {
		return "", err
	}
	answered := false
	var res string
	reply := func(r string, e error) {
		if !answered {
			answered, res, err = true, r, e
			return
		}
		// an answer that came later (when the action it started ended)
		if e != nil {
			c.logf(node, svc, "answer to %q: error: %v", action, e)
		} else {
			c.logf(node, svc, "answer to %q: %s", action, r)
		}
	}
	do(n.d, reply)
	if !answered {
		answered = true
		res = pending
	}
	c.settle()
	return res, err
}

func (c *Cluster) node(name string) (*Node, error) {
	if n := c.nodes[name]; n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("no node %q", name)
}

func (c *Cluster) daemonOf(name string) (*Node, error) {
	n, err := c.node(name)
	if err == nil && n.d == nil {
		err = fmt.Errorf("%s: the daemon is not running", name)
	}
	return n, err
}

// UpOn returns the nodes where svc really runs, sorted.
func (c *Cluster) UpOn(svc string) []string {
	var out []string
	for _, n := range c.names {
		if c.running[n][svc] {
			out = append(out, n)
		}
	}
	return out
}
