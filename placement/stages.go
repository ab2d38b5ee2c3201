package placement

import "haven/affinity"

// Rank's stages, in order:
//
//  1. records: one record per node of the service, with what the other
//     stages read of it (has it a view, its availability, its frozen
//     flag, the policies' keys);
//  2. feasibility: the filters, which nodes may run the service and, for
//     every other one, why not (the first filter failed; every one with
//     Input.Explain);
//  3. ordering: the policy's order over every node (Ranking.Natural);
//  4. soft affinity: the placeable nodes moved by their soft-affinity
//     score (stable);
//  5. the lists of the Ranking, then, with Input.Explain, the verdicts,
//     built from what the stages kept.
//
// The fast paths sit behind the stages and change nothing of the result
// (equiv_test.go compares Rank with rank(in, false), the same stages
// without any of them): the node list resolved once (Input.Members) or
// indexed (Input.Cluster), the policy's order known before the records
// (Members for load avg and score, a permutation of the spread keys),
// the node filters skipped when none can fail, the soft affinities
// skipped when the service has none, the instance states given
// (Input.Instances), the caller's buffer and no Excluded map (Input.Buf,
// Input.NoExcluded).

// ranker is what the stages of one ranking share.
type ranker struct {
	in    *Input
	fast  bool // take the fast paths
	nodes []string
	env   affinity.Env
	kind  policyKind
	mem   *Members // nil: not resolved in advance
}

// rank is Rank; fast false leaves every fast path out (the reference of
// the equivalence tests).
func rank(in *Input, fast bool) Ranking {
	rk := ranker{in: in, fast: fast, nodes: in.Nodes, kind: kindOf(in.Config.Placement), env: in.Affinity}
	if rk.nodes == nil {
		rk.nodes = NodeList(in.Config, in.ClusterNodes)
	}
	if rk.env.Presence == nil && (!fast || affinity.HasHard(in.Config) || affinity.HasSoft(in.Config)) {
		rk.env = AffinityFrom(in.Views, in.Services)
	}
	if fast {
		rk.mem = in.Members.of(rk.nodes)
	}
	n := len(rk.nodes)
	var arr [32]record
	recs := arr[:0]
	if n > len(arr) {
		recs = make([]record, 0, n)
	}
	var perm [32]int
	var keys [32]uint64 // spread: the keys, by position in nodes
	order := rk.knownOrder(perm[:0], &keys)
	recs = rk.records(recs, order, &keys)
	if in.Explain {
		ex := make([]explained, n)
		for k := range recs {
			recs[k].x = &ex[k]
		}
	}
	rk.feasibility(recs)
	rk.ordering(recs, order != nil)
	var pArr [32]int
	pidx := pArr[:0]
	if n > len(pArr) {
		pidx = make([]int, 0, n)
	}
	pidx = placeable(recs, pidx)
	rk.softAffinity(recs, pidx)
	r := rk.lists(recs, pidx)
	if in.Explain {
		r.Verdicts = verdicts(*in, &r, recs, pidx)
	}
	return r
}

// knownOrder is the ordering's fast path: the policy's order over the
// node list known before the records, nil when the ordering stage sorts
// them. For load avg and score, the order of Members; for spread with at
// most 32 nodes, a permutation of perm sorted by key (ints moved, not
// records), the keys in keys by position in the node list.
func (rk *ranker) knownOrder(perm []int, keys *[32]uint64) []int {
	if !rk.fast {
		return nil
	}
	if rk.mem != nil && rk.kind < bySpread {
		return rk.mem.order[rk.kind] // nil for nodes order
	}
	nodes := rk.nodes
	if rk.kind != bySpread || len(nodes) > len(keys) {
		return nil
	}
	perm = perm[:len(nodes)]
	for i, n := range nodes {
		keys[i], perm[i] = SpreadKey(rk.in.Service, n), i
	}
	for i := 1; i < len(nodes); i++ {
		x := perm[i]
		j := i
		for ; j > 0 && (keys[x] < keys[perm[j-1]] || keys[x] == keys[perm[j-1]] && nodes[x] < nodes[perm[j-1]]); j-- {
			perm[j] = perm[j-1]
		}
		perm[j] = x
	}
	return perm
}

// node returns the service-independent data of the i-th node of the
// list, false when it has no view.
func (rk *ranker) node(i int) (clusterNode, bool) {
	switch {
	case rk.mem != nil:
		if cn := rk.mem.cn[i]; cn != nil {
			return *cn, true
		}
		return clusterNode{}, false
	case rk.fast:
		return rk.in.node(rk.nodes[i])
	}
	v, ok := rk.in.Views[rk.nodes[i]]
	if !ok {
		return clusterNode{}, false
	}
	return makeClusterNode(v), true
}

// records is the first stage: a record per node, in the policy's order
// when it is known already (order, with the spread keys in keys), else
// in the node list's.
func (rk *ranker) records(recs []record, order []int, keys *[32]uint64) []record {
	for k := range rk.nodes {
		i := k
		if order != nil {
			i = order[k]
		}
		rec := record{name: rk.nodes[i], index: i, load: noData}
		if rk.kind == bySpread && order != nil {
			rec.spread = keys[i]
		}
		if cn, ok := rk.node(i); ok {
			rec.known, rec.avail, rec.frozen = true, cn.avail, cn.frozen
			rec.load, rec.score = cn.load, cn.score
		}
		recs = append(recs, rec)
	}
	return recs
}

// feasibility is the filter stage: a record's nodeReason is the first
// node filter it fails, its instReason the first instance filter, ""
// when none; with Explain, x.reasons lists every one, node filters first
// (the package doc's order). A node without a view is down, and its
// instance is not looked at.
func (rk *ranker) feasibility(recs []record) {
	in := rk.in
	hard := affinity.HasHard(in.Config)
	insts := rk.fast && in.Instances != nil && in.Nodes != nil
	capacity := in.Usage != nil && in.Config.HasRequests()
	for k := range recs {
		rec := &recs[k]
		f := filter{all: in.Explain}
		if !rec.known {
			f.fail(ReasonNodeDown, "")
			rec.nodeReason = f.first
			if rec.x != nil {
				rec.x.reasons = f.list
			}
			continue
		}
		// fast path: no node filter can fail
		if !rk.fast || rec.avail != "" || rec.frozen != "" || in.ConstraintOK != nil || hard {
			nodeFilter(in, rec, rk.env, &f)
		}
		rec.nodeReason = f.first
		g := filter{all: in.Explain, list: f.list}
		var st *InstanceState
		if insts {
			st = &in.Instances[rec.index]
		} else {
			s := StateOf(in.Views[rec.name].Data.Services[in.Service])
			st = &s
		}
		instanceFilter(st, &g)
		if capacity && (g.first == "" || g.all) {
			capacityFilter(in, rec.name, st, &g)
		}
		rec.instReason = g.first
		if rec.x != nil {
			rec.x.reasons = g.list
		}
	}
}

// ordering is the policy stage: the records in the policy's order, ties
// by name. Records that came in that order (known) stay as they are.
func (rk *ranker) ordering(recs []record, known bool) {
	if rk.kind == bySpread && !known {
		sortRecords(rk.in.Config.Placement, rk.in.Service, recs)
		return
	}
	insertionSort(rk.kind, recs) // nothing to move when in order already
}

// placeable appends to pidx the records passing the node filters, in
// order.
func placeable(recs []record, pidx []int) []int {
	for i := range recs {
		if recs[i].nodeReason == "" {
			pidx = append(pidx, i)
		}
	}
	return pidx
}

// softAffinity is the soft-affinity stage: the placeable records (pidx,
// in the policy's order) sorted by their soft score, best first, stable.
// With Explain, each keeps its place before (placeIdx) and the soft rules
// it breaks.
func (rk *ranker) softAffinity(recs []record, pidx []int) {
	in := rk.in
	if in.Explain {
		for k, i := range pidx {
			recs[i].x.placeIdx = k
		}
	}
	// fast path: no soft rule, nothing moves
	if rk.fast && !affinity.HasSoft(in.Config) {
		return
	}
	for _, i := range pidx {
		if in.Explain {
			x := recs[i].x
			recs[i].soft = affinity.CheckSoft(in.Config, recs[i].name, rk.env, func(why string) {
				x.softNotes = append(x.softNotes, why)
			})
			continue
		}
		recs[i].soft = affinity.SoftScore(in.Config, recs[i].name, rk.env)
	}
	for i := 1; i < len(pidx); i++ { // stable insertion sort, best score first
		for j := i; j > 0 && recs[pidx[j]].soft > recs[pidx[j-1]].soft; j-- {
			pidx[j], pidx[j-1] = pidx[j-1], pidx[j]
		}
	}
}

// lists builds the Ranking's lists from the records in the policy's
// order and the placeable ones (pidx) in their final order: Natural,
// Placeable, Candidates, and why the others are not candidates (Excluded,
// or why with NoExcluded). Natural and Placeable share one buffer
// (Input.Buf when it is large enough), and Candidates shares Placeable's
// memory unless an instance is excluded.
func (rk *ranker) lists(recs []record, pidx []int) Ranking {
	in := rk.in
	n := len(recs)
	var r Ranking
	var buf []string
	lean := rk.fast && in.NoExcluded && !in.Explain
	size := 2 * n
	if lean {
		size = 3 * n
	}
	if rk.fast && cap(in.Buf) >= size {
		buf = in.Buf[:size]
	} else {
		buf = make([]string, size)
	}
	r.Natural = buf[:n:n]
	r.Placeable = buf[n : n : 2*n]
	if lean {
		r.why = buf[2*n : 3*n : 3*n]
	}
	for i := range recs {
		r.Natural[i] = recs[i].name
		if lean {
			r.why[i] = recs[i].nodeReason
		} else if recs[i].nodeReason != "" {
			r.exclude(recs[i].name, recs[i].nodeReason)
		}
	}
	excluded := 0
	for _, i := range pidx {
		r.Placeable = append(r.Placeable, recs[i].name)
		if recs[i].instReason != "" {
			if lean {
				r.why[i] = recs[i].instReason
			} else {
				r.exclude(recs[i].name, recs[i].instReason)
			}
			excluded++
		}
	}
	r.Candidates = r.Placeable
	if excluded > 0 {
		r.Candidates = make([]string, 0, len(pidx)-excluded)
		for _, i := range pidx {
			if recs[i].instReason == "" {
				r.Candidates = append(r.Candidates, recs[i].name)
			}
		}
	}
	return r
}
