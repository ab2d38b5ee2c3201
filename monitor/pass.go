package monitor

import (
	"reflect"
	"slices"

	"haven/dataset"
	"haven/placement"
)

// pass is what one Step computes once and reads for every service it
// decides: the node views indexed by cluster member, and the instances of
// the services it decides, one row per service, one column per member
// (with EffectiveAvail applied). Without it, each service looked its
// instance up in every node's map (16 lookups in maps of 2,000 large
// values: most of the time of a full pass, in cache misses), and the
// whole dataset was copied or scanned for EffectiveAvail first.
type pass struct {
	s       *Snapshot
	cluster *placement.Cluster
	// members resolves ClusterNodes for the rankings ("*" services).
	members *placement.Members
	// col gives the column of a cluster member; views and alive are by
	// column (views[i] nil when the member has no view).
	col   map[string]int
	views []*placement.NodeView
	alive []bool
	// row gives the row of a service decided in this pass; cols holds,
	// per column, the instances of the rows (nil when the member's data
	// is not alive); local the local instance of each row (as announced,
	// with EffectiveAvail).
	row   map[string]int
	names []string
	cols  [][]placement.InstanceState
	local []dataset.Instance
	// members says every view of the snapshot is a cluster member's: the
	// columns are every node (aggregate reads them).
	allMembers bool
	// usage is the capacity use of the nodes for the services with
	// requests (nil when none has any), updated with the local decisions
	// of the pass (step).
	usage *placement.Usage
	// bufInsts and bufAlive are the buffers of svcCtx (buffers).
	bufInsts []placement.InstanceState
	bufAlive []bool
}

// buffers returns the buffers for the instances of a service of n nodes:
// the pass's own, reused from one service to the next (every entry is
// written by instances).
func (p *pass) buffers(n int) ([]placement.InstanceState, []bool) {
	if cap(p.bufInsts) < n {
		p.bufInsts, p.bufAlive = make([]placement.InstanceState, n), make([]bool, n)
	}
	return p.bufInsts[:n], p.bufAlive[:n]
}

// Cache keeps, from one Step to the next, the instances a full pass read
// from each node's data (Snapshot.Cache): a node whose Services map is the
// very map of the previous pass (a peer not heard from since) is not read
// again. The caller promises that a map it hands to Step is never
// modified afterwards (the node core's are: the heartbeat delivers copies,
// the local data is built anew for each pass). Not safe for concurrent
// use.
type Cache struct {
	names []string
	cols  map[string]cachedCol
	// local is the buffer of pass.local, reused from one pass to the next.
	local []dataset.Instance
	// sorted are the configured services of the last full pass, sorted,
	// and set the same as a set: the next pass need not sort them again
	// when they are the same.
	sorted []string
	set    map[string]struct{}
	// rc keeps the rankings (rankcache.go).
	rc rankCache
}

type cachedCol struct {
	svcs   map[string]dataset.Instance // kept: its address identifies it
	states []placement.InstanceState
}

// column returns the instances of the rows in svcs, from the cache when
// it read that very map for the same rows. When it reads the map and
// local is not nil, it also fills local with the instances of the rows
// (with EffectiveAvail; the zero instance for a row not in svcs) and
// reports it.
func (k *Cache) column(node string, svcs map[string]dataset.Instance, p *pass, local []dataset.Instance) ([]placement.InstanceState, bool) {
	var col []placement.InstanceState
	if k != nil {
		e, ok := k.cols[node]
		if ok && sameMap(e.svcs, svcs) {
			return e.states, false
		}
		// another map: its column is read anew into the same memory
		// (the pass that read it is over)
		col = e.states
		k.rc.before(col)
	}
	if len(col) != len(p.names) {
		col = make([]placement.InstanceState, len(p.names))
	} else {
		clear(col)
	}
	if local != nil {
		clear(local)
	}
	for svc, inst := range svcs {
		if r, ok := p.row[svc]; ok {
			st := stateOf(inst)
			col[r] = st
			if local != nil {
				inst.Avail = st.Avail
				local[r] = inst
			}
		}
	}
	if k != nil {
		k.cols[node] = cachedCol{svcs: svcs, states: col}
		k.rc.after(col)
	}
	return col, local != nil
}

func sameMap(a, b map[string]dataset.Instance) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// use readies the cache for a pass over names: its columns are for other
// rows, it forgets them.
func (k *Cache) use(names []string) (reset bool) {
	if k.cols != nil && slices.Equal(k.names, names) {
		return false
	}
	k.names = append(k.names[:0], names...)
	k.cols = make(map[string]cachedCol)
	return true
}

// sort sorts all (distinct names): the sorted list of the last call when
// all holds the same names, in which case all is left as is.
func (k *Cache) sort(all []string) []string {
	if k == nil {
		slices.Sort(all)
		return all
	}
	if len(all) == len(k.sorted) {
		same := true
		for _, n := range all {
			if _, ok := k.set[n]; !ok {
				same = false
				break
			}
		}
		if same {
			return k.sorted
		}
	}
	slices.Sort(all)
	k.sorted = append(k.sorted[:0], all...)
	k.set = make(map[string]struct{}, len(all))
	for _, n := range all {
		k.set[n] = struct{}{}
	}
	return all
}

// scanRows is the number of services from which a pass reads every
// node's instances in one scan of its map rather than by lookups.
const scanRows = 64

func newPass(s *Snapshot, names []string) *pass {
	p := &pass{s: s, cluster: placement.NewCluster(s.Nodes)}
	if s.Cache != nil {
		s.Cache.rc.active = false // until begin, in this pass
	}
	if len(names) >= 16 { // worth it for many rankings only
		p.members = p.cluster.Members(s.ClusterNodes)
	}
	nc := len(s.ClusterNodes)
	p.col = make(map[string]int, nc)
	p.views = make([]*placement.NodeView, nc)
	p.alive = make([]bool, nc)
	for i, n := range s.ClusterNodes {
		p.col[n] = i
		if v := p.cluster.View(n); v != nil {
			p.views[i] = v
			p.alive[i] = v.Alive()
		}
	}
	found := 0
	for _, v := range p.views {
		if v != nil {
			found++
		}
	}
	p.allMembers = found == len(s.Nodes)
	p.names = names
	p.row = make(map[string]int, len(names))
	for i, n := range names {
		p.row[n] = i
	}
	p.cols = make([][]placement.InstanceState, nc)
	lv := p.cluster.View(s.Local)
	if len(names) >= scanRows {
		k := s.Cache
		if k != nil {
			if p.members != nil {
				k.rc.begin(len(names), k.use(names), s.ClusterNodes)
			} else {
				k.use(names)
			}
			if cap(k.local) < len(names) {
				k.local = make([]dataset.Instance, len(names))
			}
			p.local = k.local[:len(names)]
		} else {
			p.local = make([]dataset.Instance, len(names))
		}
		localDone := false
		for c, v := range p.views {
			if v != nil && p.alive[c] {
				var local []dataset.Instance
				if v == lv {
					local = p.local
				}
				var done bool
				p.cols[c], done = k.column(s.ClusterNodes[c], v.Data.Services, p, local)
				localDone = localDone || done
			}
		}
		if k != nil {
			k.rc.end(p)
		}
		if lv != nil && !localDone {
			clear(p.local)
			for svc, inst := range lv.Data.Services {
				if r, ok := p.row[svc]; ok {
					inst.Avail = EffectiveAvail(inst)
					p.local[r] = inst
				}
			}
		}
		return p
	}
	p.local = make([]dataset.Instance, len(names))
	for c, v := range p.views {
		if v != nil && p.alive[c] {
			col := make([]placement.InstanceState, len(names))
			for r, name := range names {
				col[r] = stateOf(v.Data.Services[name])
			}
			p.cols[c] = col
		}
	}
	if lv != nil {
		for r, name := range names {
			inst := lv.Data.Services[name]
			inst.Avail = EffectiveAvail(inst)
			p.local[r] = inst
		}
	}
	return p
}

// stateOf is placement.StateOf with EffectiveAvail.
func stateOf(inst dataset.Instance) placement.InstanceState {
	st := placement.StateOf(inst)
	st.Avail = EffectiveAvail(inst)
	return st
}

// instances fills insts and alive, aligned with nodes, for the service of
// row r: the zero state where the node's data is not alive.
func (p *pass) instances(r int, nodes []string, insts []placement.InstanceState, alive []bool) {
	if cn := p.s.ClusterNodes; len(nodes) == len(cn) && len(cn) > 0 && &nodes[0] == &cn[0] {
		// nodes = "*": the columns themselves
		for c := range nodes {
			alive[c] = p.alive[c]
			if alive[c] {
				insts[c] = p.cols[c][r]
			} else {
				insts[c] = placement.InstanceState{}
			}
		}
		return
	}
	for i, n := range nodes {
		c, ok := p.col[n]
		if !ok {
			// not a member: looked up
			insts[i], alive[i] = placement.InstanceState{}, false
			if v := p.cluster.View(n); v != nil && v.Alive() {
				alive[i] = true
				insts[i] = stateOf(v.Data.Services[p.names[r]])
			}
			continue
		}
		alive[i] = p.alive[c]
		if alive[i] {
			insts[i] = p.cols[c][r]
		} else {
			insts[i] = placement.InstanceState{}
		}
	}
}

// instance returns the state of svc on node (EffectiveAvail applied) and
// whether the node's data is alive, from the table when it holds them.
func (p *pass) instance(node, svc string) (placement.InstanceState, bool) {
	if r, ok := p.row[svc]; ok {
		if c, ok := p.col[node]; ok {
			if !p.alive[c] {
				return placement.InstanceState{}, false
			}
			return p.cols[c][r], true
		}
	}
	v := p.cluster.View(node)
	if v == nil || !v.Alive() {
		return placement.InstanceState{}, false
	}
	return stateOf(v.Data.Services[svc]), true
}

// aggregate is the package's aggregate(s.Nodes, svc), from the columns
// when they hold svc and every node.
func (p *pass) aggregate(svc string) dataset.Status {
	r, ok := p.row[svc]
	if !ok || !p.allMembers {
		return aggregate(p.s.Nodes, svc)
	}
	var a failoverAggregate
	for c, col := range p.cols {
		if !p.alive[c] {
			continue
		}
		if a.add(col[r].Avail) {
			return dataset.StatusWarn
		}
	}
	return a.result()
}

// capacityUse is placement.NewUsage(s.Nodes, s.Services) read from the
// columns: what the instances holding capacity request on every node, nil
// when no service requests anything.
func (p *pass) capacityUse() *placement.Usage {
	var rows []int // the rows with requests
	var reqs []placement.Resources
	for r, name := range p.names {
		if cfg := p.s.Services[name]; cfg.HasRequests() {
			rows = append(rows, r)
			reqs = append(reqs, placement.RequestOf(cfg))
		}
	}
	var others []string // services with requests but no row
	for name, cfg := range p.s.Services {
		if cfg.HasRequests() {
			if _, ok := p.row[name]; !ok {
				others = append(others, name)
			}
		}
	}
	if len(rows) == 0 && len(others) == 0 {
		return nil
	}
	u := placement.CapacityOf(p.s.Nodes)
	for node, v := range p.s.Nodes {
		c, member := p.col[node]
		if !v.Alive() {
			continue
		}
		var sum placement.Resources
		for k, r := range rows {
			var st placement.InstanceState
			if member {
				st = p.cols[c][r]
			} else {
				st, _ = p.instance(node, p.names[r])
			}
			if placement.Holds(st) {
				sum = sum.Add(reqs[k])
			}
		}
		for _, svc := range others {
			if st, _ := p.instance(node, svc); placement.Holds(st) {
				sum = sum.Add(placement.RequestOf(p.s.Services[svc]))
			}
		}
		u.Hold(node, sum)
	}
	return u
}
