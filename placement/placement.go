package placement

import (
	"slices"

	"haven/affinity"
	"haven/config"
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
	ReasonNodeSplitFrozen = "node frozen by its split_action (quorum lost)" // ends by itself (docs/behaviour.md 3)
	ReasonConstraints     = "constraints violation"
	ReasonConstraintError = "constraints error" // + ": " + the error, in verdicts only
	ReasonInstanceFrozen  = "instance frozen"
	ReasonStartFailed     = "start failed"
	ReasonStopFailed      = "stop failed"
	ReasonExcluded        = "excluded"               // + ": " + why, in verdicts only
	ReasonGaveUp          = "restart ladder gave up" // + ": " + why, in verdicts only
	reasonNodeStatusPref  = "node "                  // + status: "node maintenance"
	reasonNodeMonitorPref = "node monitor "          // + monitor: "node monitor rejoin"
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
	// Services are the installed configs by name, read by the default
	// affinity environment (the claim tie-break, affinity.Yields). Unused
	// when Affinity is set.
	Services map[string]*config.ServiceConfig
	// Affinity, when its Presence is non-nil, replaces
	// AffinityFrom(Views, Services) for the affinities.
	Affinity affinity.Env
	// Cluster, when non-nil, replaces Views: an index built once by
	// NewCluster for ranking many services (a speed-up).
	Cluster *Cluster
	// Instances, when non-nil, are the states of the service's instances
	// aligned with Nodes (the zero value for a node without one), so that
	// Rank need not look them up in Views (a speed-up for callers that have
	// them).
	Instances []InstanceState
	// Explain asks Rank for Ranking.Verdicts: every filter each node fails,
	// its sort key, the soft-affinity effect. The ranking itself is the
	// same with or without it.
	Explain bool
	// Members, when it resolves Nodes (Cluster.Members of the very same
	// slice), replaces the lookups of Cluster (a speed-up).
	Members *Members
	// Buf, when its capacity holds twice the service's nodes, is used for
	// Ranking.Natural and Ranking.Placeable instead of a new allocation (a
	// speed-up for callers that rank many services one after the other):
	// the Ranking then shares its memory.
	Buf []string
	// NoExcluded leaves Ranking.Excluded nil (no map per service): the
	// caller reads the reasons with Ranking.Reason (a speed-up for callers
	// that rank many services and read few reasons). It needs Buf.
	NoExcluded bool
	// Usage, when non-nil, is the capacity use of the nodes (NewUsage):
	// the capacity filter holds a service with requests out of the nodes
	// where it does not fit. Nil: no capacity filter.
	Usage *Usage
	// ConstraintErr, read only with Explain, gives the nodes where the
	// constraints could not be evaluated and why (ConstraintResults): their
	// verdict shows the error rather than a plain violation.
	ConstraintErr map[string]string
}

// InstanceState is the part of an instance the orchestration reads.
type InstanceState struct {
	Avail  dataset.Status
	Frozen bool
	State  dataset.MonitorState
	// Excluded is dataset.Instance.Excluded (a monitor_action switch).
	Excluded string
	// GaveUp is dataset.Instance.GaveUp (the restart ladder gave up
	// there) while it holds the instance out of the candidates: always but
	// under an admin start (StateOf).
	GaveUp string
	// Leaving is dataset.Instance.Leaving (the instance left its slot to
	// a replacement in a start-first rollout and stops once replaced).
	Leaving bool
}

// StateOf extracts the InstanceState of an instance. A give-up of its
// restart ladder counts (the instance is no candidate, docs/behaviour.md
// 1.1) unless the instance's node drives it toward an admin start target
// (its global expect "started"): a start is one of the things that end a
// give-up (behaviour.md 4.3), so the admin's start may pick that node.
func StateOf(inst dataset.Instance) InstanceState {
	st := InstanceState{Avail: inst.Avail, Frozen: inst.Frozen, State: inst.Monitor.State, Excluded: inst.Excluded, Leaving: inst.Leaving()}
	if inst.Monitor.GlobalExpect != dataset.ExpectStarted {
		st.GaveUp = inst.GaveUp
	}
	return st
}

// Cluster indexes node views to rank many services in one pass: it holds
// once what does not depend on the service. Build it with NewCluster; it is
// read-only afterwards.
type Cluster struct {
	nodes map[string]*clusterNode
}

type clusterNode struct {
	view   *NodeView
	avail  string // why it cannot take work (Available), "" when it can
	frozen string // why the node is frozen (a Reason), "" when it is not
	load   float64
	score  float64
}

func makeClusterNode(v NodeView) clusterNode {
	cn := clusterNode{load: v.Data.Load15, score: Score(v.Data)}
	switch {
	case v.Data.Frozen:
		cn.frozen = ReasonNodeFrozen
	case v.Data.SplitFrozen:
		cn.frozen = ReasonNodeSplitFrozen
	}
	_, cn.avail = v.Available()
	return cn
}

// NewCluster indexes views.
func NewCluster(views map[string]NodeView) *Cluster {
	c := &Cluster{nodes: make(map[string]*clusterNode, len(views))}
	for name, v := range views {
		cn := makeClusterNode(v)
		cn.view = &v
		c.nodes[name] = &cn
	}
	return c
}

// View returns the view of node, nil when there is none. Do not modify it.
func (c *Cluster) View(node string) *NodeView {
	if cn := c.nodes[node]; cn != nil {
		return cn.view
	}
	return nil
}

// Members is a node list shared by many services (ClusterNodes, which
// "*" expands to) resolved once in a Cluster: Rank reads its nodes' data
// by position rather than by name, and starts from its order for the
// policies whose key is the node's alone (load avg, score), so that its
// sort has nothing left to move. Build it with Cluster.Members.
type Members struct {
	nodes []string
	cn    []*clusterNode  // nil where the node has no view
	order [bySpread][]int // by policyKind: load avg and score only
}

// Members resolves nodes; pass it as Input.Members with Input.Nodes the
// very same slice (placement.NodeList of a "*" service returns it).
func (c *Cluster) Members(nodes []string) *Members {
	m := &Members{nodes: nodes, cn: make([]*clusterNode, len(nodes))}
	recs := make([]record, len(nodes))
	for i, n := range nodes {
		m.cn[i] = c.nodes[n]
		recs[i] = record{name: n, index: i, load: noData}
		if cn := m.cn[i]; cn != nil {
			recs[i].load, recs[i].score = cn.load, cn.score
		}
	}
	for _, policy := range []string{PolicyLoadAvg, PolicyScore} {
		sorted := append([]record(nil), recs...)
		sortRecords(policy, "", sorted)
		order := make([]int, len(sorted))
		for k := range sorted {
			order[k] = sorted[k].index
		}
		m.order[kindOf(policy)] = order
	}
	return m
}

// Changes tells, for m and prev resolving the same node list, what
// differs between their nodes for Rank: nodes when a node's view, its
// availability or its frozen flag differ (every ranking may change);
// load and score when a node's key of the load avg or score policy
// differs (the rankings of that policy may change). Every one is true
// when the node lists differ or prev is nil.
func (m *Members) Changes(prev *Members) (nodes, load, score bool) {
	if prev == nil || !slices.Equal(m.nodes, prev.nodes) {
		return true, true, true
	}
	for i, a := range m.cn {
		b := prev.cn[i]
		if a == nil || b == nil {
			if a != b {
				return true, true, true
			}
			continue
		}
		if a.avail != b.avail || a.frozen != b.frozen {
			return true, true, true
		}
		load = load || a.load != b.load
		score = score || a.score != b.score
	}
	return false, load, score
}

// of returns m when it resolves nodes, else nil.
func (m *Members) of(nodes []string) *Members {
	if m == nil || len(m.nodes) != len(nodes) || len(nodes) == 0 || &m.nodes[0] != &nodes[0] {
		return nil
	}
	return m
}

// node returns the service-independent data of node.
func (in *Input) node(n string) (clusterNode, bool) {
	if in.Cluster != nil {
		if cn := in.Cluster.nodes[n]; cn != nil {
			return *cn, true
		}
		return clusterNode{}, false
	}
	v, ok := in.Views[n]
	if !ok {
		return clusterNode{}, false
	}
	return makeClusterNode(v), true
}

// Ranking is the result of Rank. Its slices may share memory with each
// other: treat them as read-only.
type Ranking struct {
	// Candidates are the nodes passing every filter, best first. The first
	// one is the placement leader.
	Candidates []string
	// Placeable are the nodes passing the node filters (availability, node
	// frozen, constraints, hard affinities), best first. Candidates is a
	// subsequence of it.
	Placeable []string
	// Excluded gives, for each node of the service that is not a candidate,
	// the first filter it failed. Nil when every node is a candidate, or
	// with Input.NoExcluded (Reason tells then).
	Excluded map[string]string
	// why, with Input.NoExcluded, is Excluded aligned with Natural ("" for
	// a candidate).
	why []string
	// Natural is the policy order over every node of the service, ignoring
	// the filters and the soft affinities.
	Natural []string
	// Verdicts, with Input.Explain only, say why each node of the service
	// stands where it does, in the order of Position (candidates first).
	Verdicts []Verdict
}

// Leader returns the first candidate, or "" when there is none.
func (r Ranking) Leader() string {
	if len(r.Candidates) == 0 {
		return ""
	}
	return r.Candidates[0]
}

// Reason returns the first filter node failed, "" when it is a candidate
// or not a node of the service: Excluded[node], with or without
// Input.NoExcluded.
func (r Ranking) Reason(node string) string {
	if r.why == nil {
		return r.Excluded[node]
	}
	for i, n := range r.Natural {
		if n == node {
			return r.why[i]
		}
	}
	return ""
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

// PresenceOf is the presence placement gives service svc on the node of
// view v: none when the node's data is not alive; running when the
// instance's avail is up or warn; claimed when its monitor is ready or
// starting (the node intends to start it).
func PresenceOf(v *NodeView, svc string) affinity.Presence {
	if v == nil || !v.Alive() {
		return affinity.Absent
	}
	inst, ok := v.Data.Services[svc]
	if !ok {
		return affinity.Absent
	}
	return presence(inst.Avail, inst.Monitor.State)
}

// PresenceWith is PresenceOf for an instance whose avail and monitor state
// are known, on an alive node.
func PresenceWith(avail dataset.Status, state dataset.MonitorState) affinity.Presence {
	return presence(avail, state)
}

func presence(avail dataset.Status, state dataset.MonitorState) affinity.Presence {
	switch {
	case avail == dataset.StatusUp || avail == dataset.StatusWarn:
		return affinity.Running
	case state == dataset.Ready || state == dataset.Starting:
		return affinity.Claimed
	}
	return affinity.Absent
}

// AffinityFrom returns the affinity environment placement uses by default:
// presences by PresenceOf over views, configs from services (nil: unknown).
func AffinityFrom(views map[string]NodeView, services map[string]*config.ServiceConfig) affinity.Env {
	env := affinity.Env{
		Presence: func(node, svc string) affinity.Presence {
			v, ok := views[node]
			if !ok {
				return affinity.Absent
			}
			return PresenceOf(&v, svc)
		},
	}
	if services != nil {
		env.Config = func(svc string) *config.ServiceConfig { return services[svc] }
	}
	return env
}

// Rank computes the ranking of one service, in stages (stages.go):
// feasibility, ordering, soft affinity, then the lists and the verdicts.
func Rank(in Input) Ranking { return rank(&in, true) }

// noData sorts a node without data last under "load avg".
const noData = 1e300

// record is one node of the service while ranking.
type record struct {
	name  string
	index int // position in the node list
	// known: the node has a view; avail and frozen are then its
	// clusterNode's (why it cannot take work, its frozen flag).
	known      bool
	frozen     string
	avail      string
	load       float64
	score      float64
	spread     uint64
	soft       int // soft affinity score
	nodeReason string
	instReason string
	x          *explained // with Input.Explain only
}

// explained is what Rank keeps of a node for its verdict (Input.Explain).
type explained struct {
	reasons   []string // every filter failed
	softNotes []string // every soft rule broken
	placeIdx  int      // position among the placeable nodes before the soft affinities
}

func (r *Ranking) exclude(node, reason string) {
	if r.Excluded == nil {
		r.Excluded = make(map[string]string)
	}
	r.Excluded[node] = reason
}

// sortRecords orders the records by the policy, ties by node name.
func sortRecords(policy, service string, recs []record) {
	kind := kindOf(policy)
	if kind == bySpread {
		for i := range recs {
			recs[i].spread = SpreadKey(service, recs[i].name)
		}
	}
	insertionSort(kind, recs)
}

// policyKind is a policy as its sort key.
type policyKind uint8

const (
	byIndex policyKind = iota // nodes order, and any other policy
	byLoad
	byScore
	bySpread
)

func kindOf(policy string) policyKind {
	switch policy {
	case PolicyLoadAvg:
		return byLoad
	case PolicyScore:
		return byScore
	case PolicySpread:
		return bySpread
	}
	return byIndex
}

// insertionSort sorts recs by kind, stable: node lists are short, and it
// allocates nothing.
func insertionSort(kind policyKind, recs []record) {
	for i := 1; i < len(recs); i++ {
		if !lessRecord(kind, &recs[i], &recs[i-1]) {
			continue
		}
		x := recs[i]
		j := i
		for ; j > 0 && lessRecord(kind, &x, &recs[j-1]); j-- {
			recs[j] = recs[j-1]
		}
		recs[j] = x
	}
}

func lessRecord(kind policyKind, a, b *record) bool {
	c := 0
	switch kind {
	case byLoad:
		c = cmpFloat(a.load, b.load)
	case byScore:
		c = cmpFloat(b.score, a.score)
	case bySpread:
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
// For nodes = ["*"] it returns clusterNodes itself (capacity capped, so an
// append copies): treat the result as read-only.
func NodeList(cfg *config.ServiceConfig, clusterNodes []string) []string {
	if len(cfg.Nodes) == 1 && cfg.Nodes[0] == "*" {
		return clusterNodes[:len(clusterNodes):len(clusterNodes)]
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
