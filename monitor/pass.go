package monitor

import (
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
	// col gives the column of a cluster member; views and alive are by
	// column (views[i] nil when the member has no view).
	col   map[string]int
	views []*placement.NodeView
	alive []bool
	// row gives the row of a service decided in this pass; table holds
	// the rows, len(ClusterNodes) wide; local the local instance of each
	// (as announced, with EffectiveAvail), found whether it has one.
	row   map[string]int
	names []string
	table []placement.InstanceState
	local []dataset.Instance
}

// scanRows is the number of services from which a pass reads every
// node's instances in one scan of its map rather than by lookups.
const scanRows = 64

func newPass(s *Snapshot, names []string) *pass {
	p := &pass{s: s, cluster: placement.NewCluster(s.Nodes)}
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
	p.names = names
	p.row = make(map[string]int, len(names))
	for i, n := range names {
		p.row[n] = i
	}
	p.table = make([]placement.InstanceState, len(names)*nc)
	p.local = make([]dataset.Instance, len(names))
	lv := p.cluster.View(s.Local)
	if len(names) >= scanRows {
		for c, v := range p.views {
			if v == nil || !p.alive[c] {
				continue
			}
			for svc, inst := range v.Data.Services {
				if r, ok := p.row[svc]; ok {
					p.table[r*nc+c] = stateOf(inst)
				}
			}
		}
		if lv != nil {
			for svc, inst := range lv.Data.Services {
				if r, ok := p.row[svc]; ok {
					inst.Avail = EffectiveAvail(inst)
					p.local[r] = inst
				}
			}
		}
		return p
	}
	for r, name := range names {
		for c, v := range p.views {
			if v != nil && p.alive[c] {
				p.table[r*nc+c] = stateOf(v.Data.Services[name])
			}
		}
		if lv != nil {
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
	nc := len(p.s.ClusterNodes)
	rowData := p.table[r*nc : (r+1)*nc]
	for i, n := range nodes {
		c, ok := p.col[n]
		if !ok {
			// not a member: looked up
			if v := p.cluster.View(n); v != nil && v.Alive() {
				alive[i] = true
				insts[i] = stateOf(v.Data.Services[p.names[r]])
			}
			continue
		}
		alive[i] = p.alive[c]
		insts[i] = rowData[c]
	}
}

// instance returns the state of svc on node (EffectiveAvail applied) and
// whether the node's data is alive, from the table when it holds them.
func (p *pass) instance(node, svc string) (placement.InstanceState, bool) {
	if r, ok := p.row[svc]; ok {
		if c, ok := p.col[node]; ok {
			return p.table[r*len(p.s.ClusterNodes)+c], p.alive[c]
		}
	}
	v := p.cluster.View(node)
	if v == nil || !v.Alive() {
		return placement.InstanceState{}, false
	}
	return stateOf(v.Data.Services[svc]), true
}
