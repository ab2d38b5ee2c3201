package monitor

import (
	"slices"

	"haven/affinity"
	"haven/placement"
)

// The Cache also keeps the rankings of a full pass for the next one: a
// "*" service without affinity or constraint ranks on nothing but the
// cluster members' nodes (their views, availability, frozen flag, and
// load or score for those policies), its own instances on them and its
// placement policy. When none of these changed since the last pass, its
// ranking is the last pass's. A row's instances changed when a column
// read anew (a node's new Services map) differs from what that node's
// previous map gave at that row; anything else that changed (a member's
// view, alive or availability, the members, the rows) makes every
// ranking again.
type rankCache struct {
	ranks   []cachedRank // by row
	members *placement.Members
	alive   []bool
	cluster []string
	spare   []placement.InstanceState

	// this pass
	dirty       []bool // by row: an instance changed
	all         bool   // every ranking is made again
	load, score bool   // a member's load, score changed
	active      bool

	reused uint64 // rankings taken from the last pass (tests)
}

type cachedRank struct {
	ok        bool
	placement string
	buf       []string
	rank      placement.Ranking
}

// begin readies the rankings for a pass over names (reset: the rows are
// not those of the last pass).
func (rc *rankCache) begin(n int, reset bool, cluster []string) {
	rc.active = true
	rc.all = reset || !slices.Equal(rc.cluster, cluster)
	if rc.all {
		rc.cluster = append(rc.cluster[:0], cluster...)
	}
	if reset || len(rc.ranks) != n {
		rc.ranks = make([]cachedRank, n)
	}
	if cap(rc.dirty) < n {
		rc.dirty = make([]bool, n)
	}
	rc.dirty = rc.dirty[:n]
	clear(rc.dirty)
}

// before is called before a column is read anew into col (the node's
// previous column, nil when there is none): it keeps a copy to compare.
func (rc *rankCache) before(col []placement.InstanceState) {
	if !rc.active {
		return
	}
	if col == nil {
		rc.all = true
		return
	}
	rc.spare = append(rc.spare[:0], col...)
}

// after marks dirty the rows of col read anew that differ from before.
func (rc *rankCache) after(col []placement.InstanceState) {
	if !rc.active || rc.all || len(rc.spare) != len(col) {
		rc.all = true
		return
	}
	for r := range col {
		if col[r] != rc.spare[r] {
			rc.dirty[r] = true
		}
	}
}

// end compares the members and their liveness with the last pass's.
func (rc *rankCache) end(p *pass) {
	if !rc.active {
		return
	}
	nodes, load, score := p.members.Changes(rc.members)
	rc.members = p.members
	rc.all = rc.all || nodes || !slices.Equal(rc.alive, p.alive)
	rc.alive = append(rc.alive[:0], p.alive...)
	rc.load, rc.score = load, score
}

// rank is placement.Rank(*in) for the service of row, from the last pass
// when it may (cacheable: the service ranks on nothing else than the
// cache watches).
func (p *pass) rank(row int, in *placement.Input, cacheable bool) placement.Ranking {
	k := p.s.Cache
	if k == nil || !k.rc.active || row < 0 || row >= len(k.rc.ranks) {
		return placement.Rank(*in)
	}
	rc := &k.rc
	e := &rc.ranks[row]
	if !cacheable {
		e.ok = false
		return placement.Rank(*in)
	}
	policy := in.Config.Placement
	if e.ok && !rc.all && !rc.dirty[row] && e.placement == policy &&
		!(rc.load && policy == placement.PolicyLoadAvg) && !(rc.score && policy == placement.PolicyScore) {
		rc.reused++
		return e.rank
	}
	if n := 3 * len(in.Nodes); cap(e.buf) < n {
		e.buf = make([]string, 0, n)
	}
	in.Buf = e.buf
	e.rank = placement.Rank(*in)
	e.ok, e.placement = true, policy
	return e.rank
}

// cacheable tells whether the ranking of the service of c may come from
// the last pass (rank).
func (c *svcCtx) cacheable(row int, buf []string) bool {
	cn := c.s.ClusterNodes
	return row >= 0 && buf != nil && !c.explain && c.p.members != nil && c.cOK == nil && (c.p.usage == nil || !c.cfg.HasRequests()) &&
		len(c.nodes) == len(cn) && len(cn) > 0 && &c.nodes[0] == &cn[0] &&
		!affinity.HasHard(c.cfg) && !affinity.HasSoft(c.cfg)
}
