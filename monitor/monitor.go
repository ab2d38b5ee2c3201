package monitor

import (
	"slices"
	"sort"
	"strings"
	"time"

	"haven/affinity"
	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// DefaultReadyPeriod is used when Snapshot.ReadyPeriod is not positive.
const DefaultReadyPeriod = 16 * time.Second

// Orchestrate values (DEFAULT.orchestrate).
const (
	OrchestrateNo    = "no"
	OrchestrateStart = "start"
	OrchestrateHA    = "ha"
)

// Action is what the shell must do for one service on the local node.
type Action string

// Actions. The shell runs each one once, when a Decision carries it, and
// reports its end through the After* helpers.
const (
	ActionNone   Action = ""
	ActionStart  Action = "start"  // start the local instance
	ActionStop   Action = "stop"   // stop the local instance
	ActionFreeze Action = "freeze" // freeze the local instance (persist Instance.Frozen = true)
	ActionThaw   Action = "thaw"   // thaw the local instance (persist Instance.Frozen = false)
)

// Snapshot is everything Step reads. It is plain data: Step does not keep
// it, and does not modify it.
type Snapshot struct {
	// Now is the local clock's time; only compared with the local
	// instances' StateSince.
	Now time.Time
	// Local is the name of the node running Step.
	Local string
	// ClusterNodes are the cluster members, sorted (expands "*").
	ClusterNodes []string
	// Nodes are the views of every cluster node, the local one included
	// (with Status up, or maintenance/shutting when the local daemon says
	// so). A missing node counts as down.
	Nodes map[string]placement.NodeView
	// Services are the installed service configs by name.
	Services map[string]*config.ServiceConfig
	// ConstraintOK holds the constraints results per service and node. A
	// service missing from the map is evaluated by Step when it has a
	// constraint (placement.EvalConstraints), and is true everywhere when it
	// has none. Precompute it: it is the expensive part.
	ConstraintOK map[string]map[string]bool
	// Compat is false while the cluster members announce different compat
	// versions: no automatic start then (admin targets still work).
	Compat bool
	// ConfDiffers says which members' configuration differs from this
	// node's in what must agree (cluster.toml's members, quorum,
	// arbitrators, fence commands): no automatic start either while it is
	// set.
	ConfDiffers string
	// ReadyPeriod is the contest window (node.ready_period).
	ReadyPeriod time.Duration
	// Cache, when not nil, keeps what a full pass read of each node's
	// data for the next one (see Cache: the maps of Nodes must never be
	// modified once handed to Step).
	Cache *Cache
	// Fencing are the lost peers that have not certainly stopped what they
	// ran (cluster.quorum on: not fenced, self-stop deadline not passed),
	// by node, with why: no service whose nodes include one of them is
	// started here (monitor state "wait fence"). Empty with quorum off.
	Fencing map[string]string
	// FastAck is node.ready_fast_ack, when it may act now (quorum on: this
	// node's side holds the quorum): the node acks the claims of its peers
	// (Decision.ReadyAck) and starts a claim of its own before the ready
	// window ends once every live node of the service acked it (fastack.go).
	FastAck bool
}

// Decision is the outcome of Step for one service with a local instance.
type Decision struct {
	Service string
	// Monitor is the next monitor of the local instance; the shell stores it
	// in Nodes[Local].Data.Services[Service].Monitor (StateSince is set to
	// Now when the state changes).
	Monitor dataset.InstanceMonitor
	// Action is what the shell must run now (ActionNone: nothing).
	Action Action
	// Reason says why the state changed or the action is emitted. It is
	// non-empty whenever Changed is true; empty otherwise.
	Reason string
	// Changed is true when Monitor differs from the current monitor or an
	// action is emitted: the shell logs the decision once, with Reason.
	Changed bool
	// PlacementLeader is true when the local node is the one that would
	// start the service now (first candidate; for orchestrate=start the
	// natural leader when it is a candidate).
	PlacementLeader bool
	// Flags are docs/behaviour.md 1.7's letters for the local instance, in this order:
	// A hard affinity violated here, C constraints violated here, F node or
	// instance frozen, L natural placement leader (first node of the policy
	// order among the available nodes, ignoring the A, C and F filters).
	Flags string
	// Deadline, when non-zero, is when Step must run again even if nothing
	// else happens (the end of the ready window).
	Deadline time.Time
	// TargetReached is true when the effective admin target of the service
	// is non-empty and reached on every node whose state is known (its data
	// alive, its instance checked). A stopped or frozen target is not
	// reached while a node is unknown: it stays, so that the node adopts it
	// when it comes back. The shell clears a reached target (with a newer
	// version) and answers --wait callers.
	TargetReached bool
	// TargetUnknown, with TargetReached, lists the nodes of the service
	// whose state is not known (started, placed and thawed targets are
	// cleared anyway, so that the orchestration goes on): the shell answers
	// --wait callers that the target is reached on the known nodes only.
	TargetUnknown []string
	// TargetPending, with a stopped or frozen target not reached, lists
	// the nodes it still waits for when each of them was shut down
	// cleanly (its last data: shutting, the instance down) and every other
	// node of the service reached it: nothing runs there, so the shell
	// answers the --wait callers and lets a new admin target replace this
	// one; the target stays, so that these nodes comply when they come
	// back.
	TargetPending []string
	// TargetFailed, when not empty, says why the effective admin target can
	// no longer be reached without the admin: a start failed on every node
	// that could run the service, a stop failed where it still runs. It
	// names the failing nodes and their Monitor.Error. The target stays in
	// place (a "clear" after the fix lets it go on); the shell answers the
	// --wait callers with it.
	TargetFailed string
	// ReadyAck, with Snapshot.FastAck, is the claim (dataset.ClaimID) of a
	// peer's ready window that this node saw and does not contest; the
	// shell stores it in the local instance (Instance.ReadyAck) and
	// publishes it when it changes. Empty when it acks nothing.
	ReadyAck string
	// FlexTarget is, for a flex service, the number of instances it keeps
	// up as this Step sees it: flex_target, or in the global mode the
	// nodes where an instance belongs (global.go). Zero otherwise.
	FlexTarget int
	// FlexUp are, for a flex service, the nodes where an instance is up
	// (alive, avail up), in the order of its nodes; nil otherwise.
	// FlexGlobal is true in the global mode.
	FlexUp     []string
	FlexGlobal bool
}

// Step computes the decisions of the local node, one per configured service
// whose nodes include the local node, sorted by service name.
func Step(s Snapshot) []Decision {
	out, _ := step(s, nil, "")
	return out
}

// step is Step; when explain names a configured service, it also explains
// that service (Explain), from the very pass that decides it. With only
// non-nil, it decides only the services of only (StepOnly).
func step(s Snapshot, only []string, explain string) ([]Decision, *Explanation) {
	if s.ReadyPeriod <= 0 {
		s.ReadyPeriod = DefaultReadyPeriod
	}
	var all []string
	if only == nil {
		all = make([]string, 0, len(s.Services))
		for name, cfg := range s.Services {
			if cfg != nil {
				all = append(all, name)
			}
		}
	} else {
		all = make([]string, 0, len(only))
		for _, name := range only {
			if s.Services[name] != nil {
				all = append(all, name)
			}
		}
	}
	if only == nil {
		all = s.Cache.sort(all) // distinct: the keys of a map
	} else {
		sort.Strings(all)
	}
	names := make([]string, 0, len(all))
	lists := make([][]string, 0, len(all))
	for i, name := range all {
		if i > 0 && name == all[i-1] {
			continue
		}
		nodes := placement.NodeList(s.Services[name], s.ClusterNodes)
		if slices.Contains(nodes, s.Local) {
			names = append(names, name)
			lists = append(lists, nodes)
		}
	}
	p := newPass(&s, names)
	p.usage = p.capacityUse()
	aff := &affinityEnv{s: &s, p: p}
	env := affinity.Env{Presence: aff.presence, Config: aff.config}
	out := make([]Decision, 0, len(names))
	var c svcCtx
	var ex *Explanation
	// one buffer for every ranking of the pass: a ranking is done with
	// once its service is decided (an explained one keeps its own)
	buf := make([]string, 0, 3*len(s.ClusterNodes))
	for row, name := range names {
		b := buf
		if name == explain {
			b = nil
		}
		c.init(&s, p, row, name, s.Services[name], lists[row], env, name == explain, b)
		c.decide()
		if name == explain {
			ex = c.explanation(true)
		}
		aff.decided(name, c.cur.State, c.d.Monitor.State)
		c.holdLocal()
		out = append(out, c.d)
	}
	if cfg := s.Services[explain]; explain != "" && ex == nil && cfg != nil {
		// no local instance: the ranking only, after every local decision
		c.init(&s, p, -1, explain, cfg, placement.NodeList(cfg, s.ClusterNodes), env, true, nil)
		ex = c.explanation(false)
	}
	return out, ex
}

// affinityEnv is what the affinity rules read during one Step: the
// presences of placement.PresenceOf (with EffectiveAvail), except that a
// local instance whose state this Step already changed counts with its next
// state. So a service decided later in the Step sees a claim (ready,
// starting) made earlier in the same Step on the local node: two services
// cannot both claim the node against an anti-affinity rule in one Step,
// even when the ready window is skipped (single-node services).
type affinityEnv struct {
	s    *Snapshot
	p    *pass
	next map[string]dataset.MonitorState // local services whose state changed
}

func (e *affinityEnv) decided(svc string, cur, next dataset.MonitorState) {
	if cur == next {
		return
	}
	if e.next == nil {
		e.next = make(map[string]dataset.MonitorState)
	}
	e.next[svc] = next
}

func (e *affinityEnv) presence(node, svc string) affinity.Presence {
	inst, alive := e.p.instance(node, svc)
	if !alive {
		return affinity.Absent
	}
	if e.next != nil && node == e.s.Local {
		if st, ok := e.next[svc]; ok {
			return placement.PresenceWith(inst.Avail, st)
		}
	}
	return placement.PresenceWith(inst.Avail, inst.State)
}

func (e *affinityEnv) config(svc string) *config.ServiceConfig { return e.s.Services[svc] }

// svcCtx is the working data of one service during one Step.
type svcCtx struct {
	s       *Snapshot
	p       *pass
	cluster *placement.Cluster
	name    string
	cfg     *config.ServiceConfig
	nodes   []string
	aff     affinity.Env
	rank    placement.Ranking
	cOK     map[string]bool
	view    *placement.NodeView // local node
	inst    dataset.Instance    // local instance, as announced
	cur     dataset.InstanceMonitor
	target  dataset.Target
	d       Decision
	why     string // every note of this Step, changed or not (for Explain)
	explain bool   // explaining this service: the ranking carries verdicts

	// the instances of the service, aligned with nodes (zero when the
	// node's data is not alive): the pass's buffers, reused from one
	// service to the next
	insts []placement.InstanceState
	alive []bool

	// scan results over the alive instances of the service
	upCount    int    // nodes with avail up
	firstUp    string // the first of them
	warnNode   string // first node with avail warn or unknown
	transNode  string // first node (any) in a *ing state
	transState dataset.MonitorState

	// fc is the flex count of a flex service (flexAuto)
	fc flexCount
}

func (c *svcCtx) init(s *Snapshot, p *pass, row int, name string, cfg *config.ServiceConfig, nodes []string, aff affinity.Env, explain bool, buf []string) {
	cluster := p.cluster
	*c = svcCtx{s: s, p: p, cluster: cluster, name: name, cfg: cfg, nodes: nodes, aff: aff, explain: explain}
	c.insts, c.alive = p.buffers(len(nodes))
	c.view = c.cluster.View(s.Local)
	if c.view == nil {
		c.view = &placement.NodeView{Name: s.Local}
	}
	if row >= 0 {
		c.inst = p.local[row]
		p.instances(row, nodes, c.insts, c.alive)
	} else {
		// explained without a local instance: looked up
		c.inst = c.view.Data.Services[name]
		c.inst.Avail = EffectiveAvail(c.inst)
		for i, n := range nodes {
			c.insts[i], c.alive[i] = p.instance(n, name)
		}
	}
	c.target = c.view.Data.Targets[name]
	if ok, found := s.ConstraintOK[name]; found {
		c.cOK = ok
	} else if cfg.Constraint != nil {
		c.cOK = placement.EvalConstraints(cfg, s.Nodes)
	}
	in := placement.Input{
		Service: name, Config: cfg, ClusterNodes: s.ClusterNodes, Nodes: nodes,
		Views: s.Nodes, Cluster: cluster, ConstraintOK: c.cOK, Affinity: aff, Instances: c.insts,
		Buf: buf, Members: p.members, NoExcluded: buf != nil, Usage: p.usage,
	}
	if explain {
		in.Explain = true
		_, in.ConstraintErr = placement.ConstraintResults(cfg, s.Nodes)
	}
	c.rank = p.rank(row, &in, c.cacheable(row, buf))
	for i, n := range nodes {
		if !c.alive[i] {
			continue
		}
		inst := &c.insts[i]
		switch inst.Avail {
		case dataset.StatusUp:
			if c.upCount == 0 {
				c.firstUp = n
			}
			c.upCount++
		case dataset.StatusWarn, dataset.StatusUnknown:
			if c.warnNode == "" {
				c.warnNode = n
			}
		}
		if inst.State.Transitioning() && c.transNode == "" {
			c.transNode, c.transState = n, inst.State
		}
	}
	c.cur = c.inst.Monitor
	c.d = Decision{Service: name, Monitor: c.cur}
}

// instance returns the instance of the service on node and whether the
// node's data is alive (a dead node's instance is zero: down, idle).
func (c *svcCtx) instance(node string) (placement.InstanceState, bool) {
	for i, n := range c.nodes {
		if n == node {
			return c.insts[i], c.alive[i]
		}
	}
	return placement.InstanceState{}, false
}

func (c *svcCtx) decide() {
	if c.d.Monitor.State == "" {
		c.to(dataset.Idle, "initial state")
	}
	ge := dataset.ExpectNone
	if c.hasTarget() {
		ge = c.target.String()
	}
	if c.d.Monitor.GlobalExpect != ge {
		c.d.Monitor.GlobalExpect = ge
		c.note("global expect " + ge)
	}
	c.d.Flags = c.flags()
	c.d.PlacementLeader = c.placementLeader()

	// "start failed" clears once the service is up somewhere (a warn
	// instance, maybe the failed start's own leftovers, does not clear it).
	if c.d.Monitor.State == dataset.StartFailed {
		if c.global() {
			// in the global mode no other node runs this node's
			// instance: the failed start holds until a clear
		} else if c.cfg.IsFlex() {
			// a flex service up elsewhere may still need this node: the
			// failed start clears once the target is up without it (an
			// instance leaving its slot in a start-first rollout does
			// not count: it stops once replaced)
			if c.upCount-c.upLeaving() >= c.cfg.FlexTarget {
				c.to(dataset.Idle, "flex target up: clear start failed")
			}
		} else if c.upCount > 0 {
			c.to(dataset.Idle, "service up on "+c.firstUp+": clear start failed")
		}
	}
	if c.hasTarget() {
		if c.nodeTargetElsewhere() {
			// one other node's instance of a flex service: this one
			// goes on with the flex rules (flextargets.go)
			c.flexAuto()
			c.d.TargetReached = c.nodeTargetReached()
		} else {
			c.runTarget()
		}
		if c.d.TargetReached {
			c.unknownNodes()
		} else {
			c.d.TargetFailed = c.targetFailure()
		}
	} else if c.cfg.IsFlex() {
		c.flexAuto()
	} else {
		c.auto()
	}
	if c.cfg.IsFlex() {
		c.d.FlexTarget, c.d.FlexGlobal = c.flexTarget(), c.global()
		c.d.FlexUp = make([]string, 0, c.upCount)
		for i, n := range c.nodes {
			if c.alive[i] && c.insts[i].Avail == dataset.StatusUp {
				c.d.FlexUp = append(c.d.FlexUp, n)
			}
		}
	}
	c.d.Changed = c.d.Action != ActionNone || c.d.Monitor != c.cur
	c.why = c.d.Reason
	if !c.d.Changed {
		c.d.Reason = ""
	}
}

// to moves the next state to st with a reason.
func (c *svcCtx) to(st dataset.MonitorState, reason string) {
	if c.d.Monitor.State != st {
		c.d.Monitor.State = st
		c.d.Monitor.StateSince = c.s.Now
	}
	c.note(reason)
}

// act sets the action and the state it runs in.
func (c *svcCtx) act(a Action, st dataset.MonitorState, reason string) {
	c.to(st, reason)
	c.d.Action = a
}

func (c *svcCtx) note(reason string) {
	if reason == "" {
		return
	}
	if c.d.Reason == "" {
		c.d.Reason = reason
	} else {
		c.d.Reason += "; " + reason
	}
}

// settle leaves the waiting states (ready, wait parents, wait children)
// for idle when the current logic does not want them.
func (c *svcCtx) settle(reason string) {
	switch c.d.Monitor.State {
	case dataset.Ready, dataset.WaitParents, dataset.WaitChildren, dataset.WaitFence:
		c.to(dataset.Idle, reason)
	}
}

func (c *svcCtx) flags() string {
	var bits int
	local := c.s.Local
	if affinity.HasHard(c.cfg) {
		if ok, _ := affinity.Hard(c.cfg, local, c.aff); !ok {
			bits |= flagA
		}
	}
	if c.cOK != nil && !c.cOK[local] {
		bits |= flagC
	}
	if c.view.Data.Frozen || c.view.Data.SplitFrozen || c.inst.Frozen {
		bits |= flagF
	}
	if c.naturalAvailableLeader() == local {
		bits |= flagL
	}
	return flagStrings[bits]
}

// The letters of Decision.Flags as bits, and every combination spelt in
// order (no string built per service).
const (
	flagA = 1 << iota
	flagC
	flagF
	flagL
)

var flagStrings = func() (t [16]string) {
	for bits := range t {
		for i, l := range "ACFL" {
			if bits&(1<<i) != 0 {
				t[bits] += string(l)
			}
		}
	}
	return t
}()

// naturalAvailableLeader is the first node of the natural order that is
// available (up, with an acceptable node monitor).
func (c *svcCtx) naturalAvailableLeader() string {
	for _, n := range c.rank.Natural {
		if v := c.cluster.View(n); v != nil {
			if ok, _ := v.Available(); ok {
				return n
			}
		}
	}
	return ""
}

func (c *svcCtx) placementLeader() bool { return c.leader() == c.s.Local }

// leader is the node that would start the service now: the first
// candidate; for orchestrate=start without target, the natural leader when
// it is a candidate. "" when none.
func (c *svcCtx) leader() string {
	if c.cfg.Orchestrate == OrchestrateStart && !c.hasTarget() {
		if nl := c.rank.NaturalLeader(); c.rank.Leader() != "" && c.isCandidate(nl) {
			return nl
		}
		return ""
	}
	return c.rank.Leader()
}

// holdLocal counts, in the pass's capacity use, the change of the local
// instance this Step decided: a claim (ready) or a start holds the
// service's requests on the local node, a claim withdrawn releases them,
// so that a service decided later in the same Step sees them (two claims
// on the local node never overbook it).
func (c *svcCtx) holdLocal() {
	if c.p.usage == nil || !c.cfg.HasRequests() || c.cur.State == c.d.Monitor.State {
		return
	}
	was := placement.Holds(placement.InstanceState{Avail: c.inst.Avail, State: c.cur.State})
	now := placement.Holds(placement.InstanceState{Avail: c.inst.Avail, State: c.d.Monitor.State})
	switch {
	case now && !was:
		c.p.usage.Hold(c.s.Local, placement.RequestOf(c.cfg))
	case was && !now:
		c.p.usage.Release(c.s.Local, placement.RequestOf(c.cfg))
	}
}

func (c *svcCtx) isCandidate(node string) bool { return slices.Contains(c.rank.Candidates, node) }

// firstUpish returns the first node where the service is up or warn.
func (c *svcCtx) firstUpish() string {
	if c.firstUp != "" {
		return c.firstUp
	}
	return c.warnNode
}

// parentDown returns the first parent that is not up, or "".
func (c *svcCtx) parentDown() string {
	first := ""
	c.parentsDown(func(p string) bool {
		first = p
		return false
	})
	return first
}

// parentsDown calls f with each parent that is not up, in the order of
// DEFAULT.parents, until f returns false. "svc" needs the aggregate avail
// of svc up over the alive nodes; "svc@node" needs the instance of svc on
// node up.
func (c *svcCtx) parentsDown(f func(parent string) (more bool)) {
	for _, p := range c.cfg.Parents {
		svc, node, pinned := strings.Cut(p, "@")
		down := false
		if pinned {
			v := c.cluster.View(node)
			down = v == nil || !v.Alive() || EffectiveAvail(v.Data.Services[svc]) != dataset.StatusUp
		} else if cfg := c.s.Services[svc]; cfg.IsFlex() {
			// a flex parent: at least flex_min instances up
			down = c.p.flexUp(svc) < max(cfg.FlexMin, 1)
		} else {
			down = c.p.aggregate(svc) != dataset.StatusUp
		}
		if down && !f(p) {
			return
		}
	}
}

// childNotDown returns the first child that is not down, or "".
func (c *svcCtx) childNotDown() string {
	first := ""
	c.childrenNotDown(func(ch string) bool {
		first = ch
		return false
	})
	return first
}

// childrenNotDown calls f with each child that is not down (up, warn or
// unknown on an alive node; "svc@node": on that node), in the order of
// DEFAULT.children, until f returns false.
func (c *svcCtx) childrenNotDown(f func(child string) (more bool)) {
	for _, ch := range c.cfg.Children {
		svc, node, pinned := strings.Cut(ch, "@")
		for name, v := range c.s.Nodes {
			if pinned && name != node || !v.Alive() {
				continue
			}
			if upish(EffectiveAvail(v.Data.Services[svc])) {
				if !f(ch) {
					return
				}
				break
			}
		}
	}
}

// aggregate is the failover aggregate avail of svc over the alive nodes:
// exactly one up: up; more than one up, or any warn: warn; otherwise down.
func aggregate(nodes map[string]placement.NodeView, svc string) dataset.Status {
	var a failoverAggregate
	for _, v := range nodes {
		if !v.Alive() {
			continue
		}
		inst, ok := v.Data.Services[svc]
		if !ok {
			continue
		}
		if a.add(EffectiveAvail(inst)) {
			return dataset.StatusWarn
		}
	}
	return a.result()
}

// failoverAggregate counts the instances of a failover service for its
// aggregate: exactly one up: up; more than one up, or any warn or
// unknown: warn; otherwise down.
type failoverAggregate struct{ up int }

// add counts one instance's avail; true when the aggregate is warn
// whatever follows.
func (a *failoverAggregate) add(s dataset.Status) bool {
	switch s {
	case dataset.StatusUp:
		a.up++
	case dataset.StatusWarn, dataset.StatusUnknown:
		return true
	}
	return false
}

func (a failoverAggregate) result() dataset.Status {
	switch {
	case a.up == 1:
		return dataset.StatusUp
	case a.up > 1:
		return dataset.StatusWarn
	}
	return dataset.StatusDown
}

func upish(s dataset.Status) bool {
	return s == dataset.StatusUp || s == dataset.StatusWarn || s == dataset.StatusUnknown
}
