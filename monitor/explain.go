package monitor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// Explanation says why a service runs, or does not, where it does, as the
// local node sees it: what `svcmgr explain` prints. Explain builds it from
// the very Step pass the daemon runs, with the ranking's verdicts turned on
// for the one service.
type Explanation struct {
	Service string    `json:"service"`
	Local   string    `json:"local"`
	Now     time.Time `json:"now"`
	// Hypothetical is set for Explain's start: the service taken as down
	// everywhere.
	Hypothetical bool   `json:"hypothetical,omitempty"`
	Orchestrate  string `json:"orchestrate"`
	Policy       string `json:"placement"`
	// Constraint is the DEFAULT.constraints source, "" when none.
	Constraint string `json:"constraints,omitempty"`
	// Verdicts are the service's nodes in the resulting order: the
	// candidates best first, then the excluded nodes, each with every
	// filter it fails.
	Verdicts []placement.Verdict `json:"verdicts"`
	// Leader is the node that would start the service now (the first
	// candidate; for orchestrate=start the natural leader when it is a
	// candidate), "" when none; NaturalLeader the first node of the policy
	// order, filters and soft affinities ignored.
	Leader        string `json:"leader"`
	NaturalLeader string `json:"natural_leader"`
	// Running are the nodes whose instance is up or warn (an n/a instance
	// started counts as up), in the service's node order.
	Running []string `json:"running,omitempty"`
	// Monitor is the local instance's monitor, nil when the local node is
	// not a node of the service.
	Monitor *LocalMonitor `json:"monitor,omitempty"`
	// Links are the service's nodes heard on fewer than all of their
	// heartbeat links ("n2: links 1/2, net2 down") and the disk
	// heartbeat's notes (the disk lost here, a slot that stands still, a
	// node heard on the disk only), set by the daemon: alarms, never part
	// of the decision.
	Links []string `json:"links,omitempty"`
	// SelfStop is the takeover gate's timing (cluster.quorum on, a
	// failover service), set by the daemon from the node core's own
	// computation (node.Core.SelfStop).
	SelfStop *dataset.SelfStopInfo `json:"self_stop,omitempty"`
	// Guard says what the answering node's guard does for the service
	// (set by the daemon): whether its instance there is in the guard's
	// kill set, the lease; and which lost nodes' guards the takeover
	// counts on.
	Guard []string `json:"guard,omitempty"`
	// Requests are the service's requests ("cpu 1, mem 512MiB"), "" when
	// it has none; CapacityShort the live nodes of the service where one
	// more instance of it does not fit now, with what is short ("n2: cpu
	// 3.5 of 4 requested, needs 1"), its own instance counted once.
	Requests      string   `json:"requests,omitempty"`
	CapacityShort []string `json:"capacity_short,omitempty"`
	// Flex, for a flex service: its counts, why each node has or has not
	// an instance, and why the count is below the target.
	Flex *FlexExplain `json:"flex,omitempty"`
	// Rollout is where the service's newest rollout stands and why each
	// node's turn not ended waits (RolloutView), absent when it never had
	// one.
	Rollout *dataset.RolloutStatus `json:"rollout,omitempty"`
}

// FlexExplain is the flex part of an Explanation.
type FlexExplain struct {
	Target int `json:"target"`
	Min    int `json:"min"`
	Max    int `json:"max"`
	// Running counts the instances running (up, warn, or in an action)
	// on the live nodes.
	Running int `json:"running"`
	// Nodes says, for each node of the service in placement order, why
	// it has an instance or not.
	Nodes []string `json:"nodes"`
	// Short says why fewer than the target run, "" when they do.
	Short string `json:"short,omitempty"`
	// Global is true in the global mode (flex_target = "all"): Target is
	// then the number of nodes where an instance belongs.
	Global bool `json:"global,omitempty"`
}

// LocalMonitor is the local instance's monitor and what it waits for.
type LocalMonitor struct {
	State        dataset.MonitorState `json:"state"`
	Since        time.Time            `json:"since"`
	GlobalExpect string               `json:"global_expect"`
	Avail        dataset.Status       `json:"avail"`
	Frozen       bool                 `json:"frozen"`
	Flags        string               `json:"flags,omitempty"`
	// Next, Action and Changed are Step's decision now, as the node core
	// takes it (a ready or a start held back by the ladder's give-up,
	// GaveUpHolds, is dropped: the state stays); Reason is its reasoning,
	// told even when nothing changes.
	Next    dataset.MonitorState `json:"next"`
	Action  Action               `json:"action,omitempty"`
	Changed bool                 `json:"changed"`
	Reason  string               `json:"reason,omitempty"`
	// Blocked, without admin target, is why the local node does not start
	// the service by itself, "" when nothing holds it back.
	Blocked string `json:"blocked,omitempty"`
	// ReadyUntil is the end of the ready window while the next state is
	// ready; Deadline when Step must run again (Decision.Deadline).
	ReadyUntil time.Time `json:"ready_until,omitzero"`
	Deadline   time.Time `json:"deadline,omitzero"`
	// WaitParents are the parents not up; WaitChildren the children not
	// down (what a start, resp. a stop, waits for).
	WaitParents  []string `json:"wait_parents,omitempty"`
	WaitChildren []string `json:"wait_children,omitempty"`
	// ParentCycle is a cycle of parents through this service (web, db,
	// web): none of them is ever started by the daemon.
	ParentCycle []string `json:"parent_cycle,omitempty"`
	// Target is the effective admin target in progress ("" none), with its
	// orchestration id, and where it stands (Decision.TargetReached,
	// TargetUnknown, TargetPending, TargetFailed).
	Target        string   `json:"target,omitempty"`
	TargetID      string   `json:"target_id,omitempty"`
	TargetReached bool     `json:"target_reached,omitempty"`
	TargetUnknown []string `json:"target_unknown,omitempty"`
	TargetPending []string `json:"target_pending,omitempty"`
	TargetFailed  string   `json:"target_failed,omitempty"`
	// Ladder is the restart ladder of the local instance, one line per
	// monitored resource (restarts remaining, last failure); GaveUp and
	// Excluded are dataset.Instance's: why the daemon restarts nothing
	// more here, why this node is out of the candidates.
	Ladder   []string `json:"ladder,omitempty"`
	GaveUp   string   `json:"gave_up,omitempty"`
	Excluded string   `json:"excluded,omitempty"`
}

// Explain explains service svc as Step sees it in s. With start, it
// explains a start now instead: the snapshot with the service down on every
// node (no instance up, ready or in an action; frozen and failed instances
// stay so). ok is false when svc has no config in s.
func Explain(s Snapshot, svc string, start bool) (e Explanation, ok bool) {
	if s.Services[svc] == nil {
		return Explanation{}, false
	}
	if start {
		s.Nodes = downEverywhere(s.Nodes, svc)
	}
	_, ex := step(s, nil, svc)
	ex.Hypothetical = start
	if !start {
		insts := map[string]dataset.Instance{}
		for n, v := range s.Nodes {
			if i, ok := v.Data.Services[svc]; ok {
				insts[n] = i
			}
		}
		ex.Rollout = RolloutView(insts, func(n string) bool { v, ok := s.Nodes[n]; return ok && v.Alive() },
			func(n string) bool { d := s.Nodes[n].Data; return d.Frozen || d.SplitFrozen })
	}
	return *ex, true
}

// downEverywhere returns a copy of nodes where svc's instances are down and
// at rest: avail down, local expect none, monitor idle unless failed.
func downEverywhere(nodes map[string]placement.NodeView, svc string) map[string]placement.NodeView {
	out := make(map[string]placement.NodeView, len(nodes))
	for name, v := range nodes {
		if inst, ok := v.Data.Services[svc]; ok {
			svcs := make(map[string]dataset.Instance, len(v.Data.Services))
			for k, i := range v.Data.Services {
				svcs[k] = i
			}
			inst.Avail, inst.Overall = dataset.StatusDown, dataset.StatusDown
			inst.Monitor.LocalExpect = dataset.ExpectNone
			if !inst.Monitor.State.Failed() {
				inst.Monitor.State = dataset.Idle
			}
			svcs[svc] = inst
			v.Data.Services = svcs
		}
		out[name] = v
	}
	return out
}

// explanation builds the Explanation of the service c just ranked (and
// decided, when local).
func (c *svcCtx) explanation(local bool) *Explanation {
	e := &Explanation{
		Service: c.name, Local: c.s.Local, Now: c.s.Now,
		Orchestrate: c.cfg.Orchestrate, Policy: c.cfg.Placement,
		Verdicts: c.rank.Verdicts, Leader: c.leader(), NaturalLeader: c.rank.NaturalLeader(),
	}
	if c.cfg.Constraint != nil {
		e.Constraint = c.cfg.Constraint.Source
	}
	if c.cfg.IsFlex() {
		e.Flex = c.flexExplain()
	}
	if c.cfg.HasRequests() {
		e.Requests = RequestText(c.cfg)
		e.CapacityShort = c.capacityShort()
	}
	for i, n := range c.nodes {
		if c.alive[i] && upish(c.insts[i].Avail) && c.insts[i].Avail != dataset.StatusUnknown {
			e.Running = append(e.Running, n)
		}
	}
	if !local {
		return e
	}
	m := &LocalMonitor{
		State: c.cur.State, Since: c.cur.StateSince, GlobalExpect: c.d.Monitor.GlobalExpect,
		Avail: c.inst.Avail, Frozen: c.inst.Frozen, Flags: c.d.Flags,
		Next: c.d.Monitor.State, Action: c.d.Action, Changed: c.d.Changed, Reason: c.why,
		Deadline:      c.d.Deadline,
		TargetReached: c.d.TargetReached, TargetUnknown: c.d.TargetUnknown, TargetPending: c.d.TargetPending, TargetFailed: c.d.TargetFailed,
	}
	if c.d.Monitor.State == dataset.Ready {
		m.ReadyUntil = c.d.Monitor.StateSince.Add(c.s.ReadyPeriod)
	}
	if c.hasTarget() {
		m.Target, m.TargetID = c.target.String(), c.target.ID
	} else if c.global() {
		if blk, _ := c.globalBlock(); !blk.none() {
			m.Blocked = blk.String()
		}
	} else if c.cfg.IsFlex() {
		if blk, _ := c.flexBlock(c.flexCount()); !blk.none() {
			m.Blocked = blk.String()
		}
	} else if blk, _ := c.autoBlock(); !blk.none() {
		m.Blocked = blk.String()
	}
	if c.inst.Avail != dataset.StatusUp && c.inst.Avail != dataset.StatusWarn {
		// the parents gate a start: an instance already up waits for none
		c.parentsDown(func(p string) bool {
			m.WaitParents = append(m.WaitParents, p)
			return true
		})
	}
	m.ParentCycle = parentCycle(c.name, c.s.Services)
	c.childrenNotDown(func(ch string) bool {
		m.WaitChildren = append(m.WaitChildren, ch)
		return true
	})
	m.GaveUp, m.Excluded = c.inst.GaveUp, c.inst.Excluded
	if GaveUpHolds(c.inst.GaveUp, c.d) {
		// the node core drops this decision (no ready window, no start):
		// the monitor stays as it is
		m.Next, m.Action, m.Changed = c.cur.State, "", false
		m.ReadyUntil, m.Deadline = time.Time{}, time.Time{}
		m.Blocked = "the restart ladder gave up here"
		m.Reason = m.Blocked + ": the orchestrator starts nothing here by itself (svcmgr -s " + c.name + " clear)"
	}
	for _, rid := range slices.Sorted(maps.Keys(c.inst.Resources)) {
		r := c.inst.Resources[rid]
		if !r.Monitor {
			continue
		}
		l := fmt.Sprintf("%s: %s, %d restart(s) remaining", rid, r.Status, r.RestartRemaining)
		if w := restartWindow(c.cfg, rid); w > 0 {
			l += " (restarts count over a restart_window of " + w.String() + ")"
		}
		if r.LastFailure != "" {
			l += ", last failure at " + r.LastFailureAt.UTC().Format(time.RFC3339) + ": " + r.LastFailure
		}
		m.Ladder = append(m.Ladder, l)
	}
	e.Monitor = m
	return e
}

// restartWindow is the restart_window of the resource rid of cfg (0: none).
func restartWindow(cfg *config.ServiceConfig, rid string) time.Duration {
	for _, r := range cfg.Resources {
		if r.RID == rid {
			return r.RestartWindow
		}
	}
	return 0
}

// parentCycle returns a cycle of DEFAULT.parents that leads from svc back
// to itself (svc, p1, ..., svc), or nil: each waits for the next to be up,
// so none is ever started by the daemon. An instance parent ("db@n1")
// counts as its service.
func parentCycle(svc string, cfgs map[string]*config.ServiceConfig) []string {
	seen := map[string]bool{}
	var path []string
	var walk func(s string) []string
	walk = func(s string) []string {
		cfg := cfgs[s]
		if cfg == nil || seen[s] {
			return nil
		}
		seen[s] = true
		path = append(path, s)
		for _, p := range cfg.Parents {
			p, _, _ = strings.Cut(p, "@")
			if p == svc {
				return append(append([]string(nil), path...), svc)
			}
			if cyc := walk(p); cyc != nil {
				return cyc
			}
		}
		path = path[:len(path)-1]
		return nil
	}
	return walk(svc)
}

// RequestText says what one instance of the service requests: "cpu 1,
// mem 512MiB", "" without requests.
func RequestText(cfg *config.ServiceConfig) string {
	var parts []string
	if cfg.RequestCPU > 0 {
		parts = append(parts, "cpu "+cfg.RequestCPU.String())
	}
	if cfg.RequestMem > 0 {
		parts = append(parts, "mem "+cfg.RequestMem.Short())
	}
	return strings.Join(parts, ", ")
}

// capacityShort lists the live nodes of the service where one more
// instance does not fit now (placement.Usage.Short), "node: what".
func (c *svcCtx) capacityShort() []string {
	var out []string
	for i, n := range c.nodes {
		if !c.alive[i] {
			continue
		}
		if why := c.p.usage.Short(n, placement.RequestOf(c.cfg), placement.Holds(c.insts[i])); why != "" {
			out = append(out, n+": "+strings.TrimPrefix(why, placement.ReasonCapacityPrefix))
		}
	}
	return out
}
