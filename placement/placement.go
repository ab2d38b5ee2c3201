package placement

import (
	"haven/affinity"
	"haven/config"
	"haven/constraints"
	"haven/dataset"
)

// Placement policies (DEFAULT.placement).
const (
	PolicyNodesOrder = "nodes order"
	PolicyLoadAvg    = "load avg"
	PolicySpread     = "spread"
	PolicyScore      = "score"
	PolicyNone       = "none"
)

// Exclusion reasons of Ranking.Excluded that are not built from a name.
const (
	ReasonNodeDown        = "node down"
	ReasonNodeFrozen      = "node frozen"
	ReasonConstraints     = "constraints violation"
	ReasonInstanceFrozen  = "instance frozen"
	ReasonStartFailed     = "start failed"
	ReasonStopFailed      = "stop failed"
	reasonNodeStatusPref  = "node "         // + status: "node maintenance"
	reasonNodeMonitorPref = "node monitor " // + monitor: "node monitor rejoin"
)

// NodeView is one node as the observer sees it: its status as concluded by
// the observer (up, down, maintenance, shutting) and the data it last
// announced.
type NodeView struct {
	Name   string
	Status dataset.NodeStatus
	Data   dataset.Node
}

// Alive reports whether the node's data describes running instances: the node
// is up, or in maintenance (its last data is kept for the grace period), or
// shutting (stopping its instances). A down or unknown node's instances count
// as down.
func (v NodeView) Alive() bool {
	switch v.Status {
	case dataset.NodeUp, dataset.NodeStMaint, dataset.NodeStShutting:
		return true
	}
	return false
}

// Available reports whether the node may take new work: up in the observer's
// view and announcing no init, rejoin, maintenance, shutting or draining
// monitor state. reason is empty when it may.
func (v NodeView) Available() (ok bool, reason string) {
	if v.Status != dataset.NodeUp {
		if v.Status == "" || v.Status == dataset.NodeDown || v.Status == dataset.NodeStUnknown {
			return false, ReasonNodeDown
		}
		return false, reasonNodeStatusPref + string(v.Status)
	}
	switch v.Data.Monitor {
	case dataset.NodeInit, dataset.NodeRejoin, dataset.NodeMaintenance, dataset.NodeShutting, dataset.NodeDraining:
		return false, reasonNodeMonitorPref + string(v.Data.Monitor)
	}
	return true, ""
}

// Input is what Rank needs.
type Input struct {
	Service      string
	Config       *config.ServiceConfig
	ClusterNodes []string
	// Nodes, when non-nil, is Config.NodeList(ClusterNodes) already computed.
	Nodes []string
	// Views are the nodes by name; a missing node is treated as down.
	Views map[string]NodeView
	// ConstraintOK tells, per node, whether the constraints hold there. Nil
	// means true everywhere; a node missing from a non-nil map is false.
	ConstraintOK map[string]bool
	// Running, when non-nil, replaces RunningFrom(Views) for the affinities.
	Running affinity.RunningFunc
	// Instances, when non-nil, are the states of the service's instances
	// aligned with Nodes (the zero value for a node without one), so that
	// Rank need not look them up in Views (a speed-up for callers that have
	// them).
	Instances []InstanceState
}

// InstanceState is the part of an instance the orchestration reads.
type InstanceState struct {
	Avail  dataset.Status
	Frozen bool
	State  dataset.MonitorState
}

// StateOf extracts the InstanceState of an instance.
func StateOf(inst dataset.Instance) InstanceState {
	return InstanceState{Avail: inst.Avail, Frozen: inst.Frozen, State: inst.Monitor.State}
}

// Ranking is the result of Rank.
type Ranking struct {
	// Candidates are the nodes passing every filter, best first. The first
	// one is the placement leader.
	Candidates []string
	// Placeable are the nodes passing the node filters (availability, node
	// frozen, constraints, hard affinities), best first. Candidates is a
	// subsequence of it.
	Placeable []string
	// Excluded gives, for each node of the service that is not a candidate,
	// the first filter it failed. Nil when every node is a candidate.
	Excluded map[string]string
	// Natural is the policy order over every node of the service, ignoring
	// the filters and the soft affinities.
	Natural []string
}

// Leader returns the first candidate, or "" when there is none.
func (r Ranking) Leader() string {
	if len(r.Candidates) == 0 {
		return ""
	}
	return r.Candidates[0]
}

// NaturalLeader returns the first node of the natural order, or "".
func (r Ranking) NaturalLeader() string {
	if len(r.Natural) == 0 {
		return ""
	}
	return r.Natural[0]
}

// Position orders any node of the service for contests: a candidate's index
// in Candidates; a non-candidate ranks after every candidate, by its natural
// order; a node foreign to the service ranks last. Lower is better.
func (r Ranking) Position(node string) int {
	for i, n := range r.Candidates {
		if n == node {
			return i
		}
	}
	for i, n := range r.Natural {
		if n == node {
			return len(r.Candidates) + i
		}
	}
	return len(r.Candidates) + len(r.Natural)
}

// RunningFrom returns the RunningFunc placement uses by default: the
// instance's avail is up or warn, on a node whose data is alive.
func RunningFrom(views map[string]NodeView) affinity.RunningFunc {
	return func(node, svc string) bool {
		v, ok := views[node]
		if !ok || !v.Alive() {
			return false
		}
		inst, ok := v.Data.Services[svc]
		if !ok {
			return false
		}
		return inst.Avail == dataset.StatusUp || inst.Avail == dataset.StatusWarn
	}
}

// Rank computes the ranking of one service.
func Rank(in Input) Ranking {
	nodes := in.Nodes
	if nodes == nil {
		nodes = NodeList(in.Config, in.ClusterNodes)
	}
	running := in.Running
	if running == nil && (affinity.HasHard(in.Config) || affinity.HasSoft(in.Config)) {
		running = RunningFrom(in.Views)
	}
	var arr [32]record
	recs := arr[:0]
	if len(nodes) > len(arr) {
		recs = make([]record, 0, len(nodes))
	}
	for i, n := range nodes {
		recs = append(recs, record{name: n, index: i})
		v, ok := in.Views[n]
		if !ok {
			recs[i].nodeReason = ReasonNodeDown
			recs[i].load = noData
			continue
		}
		recs[i].load = v.Data.Load15
		recs[i].score = Score(v.Data)
		recs[i].nodeReason = nodeFilter(in, n, v, running)
		if in.Instances != nil && in.Nodes != nil {
			recs[i].instReason = instanceFilter(in.Instances[i])
		} else {
			recs[i].instReason = instanceFilter(StateOf(v.Data.Services[in.Service]))
		}
	}
	sortRecords(in.Config.Placement, in.Service, recs)

	var r Ranking
	buf := make([]string, 3*len(recs))
	r.Natural = buf[:len(recs):len(recs)]
	r.Placeable = buf[len(recs) : len(recs) : 2*len(recs)]
	for i, rec := range recs {
		r.Natural[i] = rec.name
		if rec.nodeReason != "" {
			r.exclude(rec.name, rec.nodeReason)
			continue
		}
		r.Placeable = append(r.Placeable, rec.name)
	}
	r.Candidates = buf[2*len(recs) : 2*len(recs)]
	if affinity.HasSoft(in.Config) {
		affinity.SortSoft(in.Config, r.Placeable, running)
		for _, n := range r.Placeable {
			if reason := instReasonOf(recs, n); reason != "" {
				r.exclude(n, reason)
				continue
			}
			r.Candidates = append(r.Candidates, n)
		}
		return r
	}
	for _, rec := range recs {
		switch {
		case rec.nodeReason != "":
		case rec.instReason != "":
			r.exclude(rec.name, rec.instReason)
		default:
			r.Candidates = append(r.Candidates, rec.name)
		}
	}
	return r
}

// noData sorts a node without data last under "load avg".
const noData = 1e300

// record is one node of the service while ranking.
type record struct {
	name       string
	index      int // position in the node list
	load       float64
	score      float64
	spread     uint64
	nodeReason string
	instReason string
}

func instReasonOf(recs []record, node string) string {
	for i := range recs {
		if recs[i].name == node {
			return recs[i].instReason
		}
	}
	return ""
}

func (r *Ranking) exclude(node, reason string) {
	if r.Excluded == nil {
		r.Excluded = make(map[string]string)
	}
	r.Excluded[node] = reason
}

// nodeFilter returns why node cannot host the service, or "".
func nodeFilter(in Input, node string, v NodeView, running affinity.RunningFunc) string {
	if ok, reason := v.Available(); !ok {
		return reason
	}
	if v.Data.Frozen {
		return ReasonNodeFrozen
	}
	if in.ConstraintOK != nil && !in.ConstraintOK[node] {
		return ReasonConstraints
	}
	if affinity.HasHard(in.Config) {
		if ok, reason := affinity.Hard(in.Config, node, running); !ok {
			return reason
		}
	}
	return ""
}

// instanceFilter returns why the instance cannot be started, or "".
func instanceFilter(inst InstanceState) string {
	if inst.Frozen {
		return ReasonInstanceFrozen
	}
	switch inst.State {
	case dataset.StartFailed:
		return ReasonStartFailed
	case dataset.StopFailed:
		return ReasonStopFailed
	}
	return ""
}

// sortRecords orders the records by the policy, ties by node name.
func sortRecords(policy, service string, recs []record) {
	if policy == PolicySpread {
		for i := range recs {
			recs[i].spread = SpreadKey(service, recs[i].name)
		}
	}
	// insertion sort: node lists are short, and it allocates nothing
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && lessRecord(policy, &recs[j], &recs[j-1]); j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

func lessRecord(policy string, a, b *record) bool {
	c := 0
	switch policy {
	case PolicyLoadAvg:
		c = cmpFloat(a.load, b.load)
	case PolicyScore:
		c = cmpFloat(b.score, a.score)
	case PolicySpread:
		switch {
		case a.spread < b.spread:
			c = -1
		case a.spread > b.spread:
			c = 1
		}
	default:
		c = a.index - b.index
	}
	if c != 0 {
		return c < 0
	}
	return a.name < b.name
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Order returns nodes sorted by the policy, as a new slice.
func Order(policy, service string, nodes []string, views map[string]NodeView) []string {
	recs := make([]record, len(nodes))
	for i, n := range nodes {
		recs[i] = record{name: n, index: i, load: noData}
		if v, ok := views[n]; ok {
			recs[i].load = v.Data.Load15
			recs[i].score = Score(v.Data)
		}
	}
	sortRecords(policy, service, recs)
	out := make([]string, len(recs))
	for i := range recs {
		out[i] = recs[i].name
	}
	return out
}

// Score is the free-resource score of the "score" policy:
// mem_avail_pct + 100/(1+load15). Higher is better.
func Score(n dataset.Node) float64 {
	l := n.Load15
	if l < 0 {
		l = 0
	}
	return n.MemAvailPct + 100/(1+l)
}

// SpreadKey is the sort key of the "spread" policy for one node: the
// FNV-1a 64 hash of service, a NUL byte, and node (computed inline, the same
// value as hash/fnv's New64a, without allocating).
func SpreadKey(service, node string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(service); i++ {
		h ^= uint64(service[i])
		h *= prime
	}
	h *= prime // the NUL byte: h ^= 0, then multiply
	for i := 0; i < len(node); i++ {
		h ^= uint64(node[i])
		h *= prime
	}
	return h
}

// NodeList is cfg.NodeList(clusterNodes) without a map for short lists.
func NodeList(cfg *config.ServiceConfig, clusterNodes []string) []string {
	if len(cfg.Nodes) == 1 && cfg.Nodes[0] == "*" {
		return append([]string(nil), clusterNodes...)
	}
	if len(cfg.Nodes)+len(clusterNodes) > 64 {
		return cfg.NodeList(clusterNodes)
	}
	out := make([]string, 0, len(cfg.Nodes)+len(clusterNodes))
	has := func(n string) bool {
		for _, o := range out {
			if o == n {
				return true
			}
		}
		return false
	}
	for _, n := range cfg.Nodes {
		if n == "*" {
			for _, c := range clusterNodes {
				if !has(c) {
					out = append(out, c)
				}
			}
			continue
		}
		if !has(n) {
			out = append(out, n)
		}
	}
	return out
}

// EvalConstraints evaluates cfg's constraints on every viewed node, with the
// environment the node announced. It returns nil when the service has no
// constraints (nil means true everywhere). An evaluation error counts as
// false.
func EvalConstraints(cfg *config.ServiceConfig, views map[string]NodeView) map[string]bool {
	if cfg.Constraint == nil {
		return nil
	}
	out := make(map[string]bool, len(views))
	for name, v := range views {
		ok, err := cfg.Constraint.Eval(constraints.Env{
			NodeName:    name,
			Labels:      v.Data.Labels,
			Load15:      v.Data.Load15,
			MemAvailPct: v.Data.MemAvailPct,
		})
		out[name] = err == nil && ok
	}
	return out
}
