package node

import (
	"reflect"

	"haven/dataset"
	"haven/monitor"
	"haven/placement"
)

// runTable says, for the snapshot of a full pass, on which alive nodes each
// service runs (effective avail up or warn), in the snapshot's ClusterNodes
// order: watchLadders, resolveMultipleActive and watchRanElsewhere read it
// instead of looking every service up in every node's map (3 x services x
// nodes lookups per pass). It is built once per snapshot of a full pass
// (build); the answers come from it only for that very snapshot (its Nodes
// map), and an incremental pass, whose snapshot is another, keeps the
// per-service lookups (one service: a few lookups).
//
// A node's list of running services is kept from one build to the next
// while its Services map is the very same map (a peer not heard from
// since): the node core never modifies a map it put in a snapshot (the
// heartbeat delivers copies, the local data is built anew for each pass),
// the promise monitor.Cache relies on too. A node's liveness is read anew
// at each build.
type runTable struct {
	// nodes is the Nodes map of the snapshot the table was built for.
	nodes map[string]placement.NodeView
	// cols are the services running on each node, by node name.
	cols map[string]runCol
	// head is, per service, 1 + the index in ents of its first node (0:
	// it runs nowhere); ents chain the nodes of a service in ClusterNodes
	// order.
	head map[string]int32
	ents []runEnt
}

type runCol struct {
	svcs map[string]dataset.Instance // kept: its address identifies it
	runs []runSvc
}

type runSvc struct {
	svc   string
	avail dataset.Status // up or warn
}

type runEnt struct {
	node  string
	avail dataset.Status // up or warn
	next  int32          // 1 + the index of the service's next node, 0: the last
}

// build makes the table of s (a full pass's snapshot).
func (t *runTable) build(s monitor.Snapshot) {
	if t.cols == nil {
		t.cols = map[string]runCol{}
		t.head = map[string]int32{}
	}
	clear(t.head)
	t.ents = t.ents[:0]
	// backwards: each node is put at the head of its services' chains
	for i := len(s.ClusterNodes) - 1; i >= 0; i-- {
		n := s.ClusterNodes[i]
		v, ok := s.Nodes[n]
		if !ok || !v.Alive() {
			continue
		}
		for _, r := range t.column(n, v.Data.Services) {
			t.ents = append(t.ents, runEnt{node: n, avail: r.avail, next: t.head[r.svc]})
			t.head[r.svc] = int32(len(t.ents))
		}
	}
	if len(t.cols) > len(s.ClusterNodes) { // forget the nodes gone
		in := make(map[string]bool, len(s.ClusterNodes))
		for _, n := range s.ClusterNodes {
			in[n] = true
		}
		for n := range t.cols {
			if !in[n] {
				delete(t.cols, n)
			}
		}
	}
	t.nodes = s.Nodes
}

// column returns the services running in svcs (node's map), from the
// table when it read that very map.
func (t *runTable) column(node string, svcs map[string]dataset.Instance) []runSvc {
	e, ok := t.cols[node]
	if ok && svcs != nil && reflect.ValueOf(e.svcs).UnsafePointer() == reflect.ValueOf(svcs).UnsafePointer() {
		return e.runs
	}
	runs := e.runs[:0]
	for svc, i := range svcs {
		if a := monitor.EffectiveAvail(i); a == dataset.StatusUp || a == dataset.StatusWarn {
			runs = append(runs, runSvc{svc: svc, avail: a})
		}
	}
	t.cols[node] = runCol{svcs: svcs, runs: runs}
	return runs
}

// of returns the table when it was built for s, nil otherwise (the
// caller looks the service up in each node's map).
func (t *runTable) of(s monitor.Snapshot) *runTable {
	if t.nodes == nil || s.Nodes == nil ||
		reflect.ValueOf(t.nodes).UnsafePointer() != reflect.ValueOf(s.Nodes).UnsafePointer() {
		return nil
	}
	return t
}

// first is the index + 1 of the first node where svc runs (0: none);
// ent(i) is that entry, whose next is the following one.
func (t *runTable) first(svc string) int32 { return t.head[svc] }
func (t *runTable) ent(i int32) *runEnt    { return &t.ents[i-1] }

// upElsewhere is monitor.UpElsewhere(s, svc), from the table when it is
// s's.
func (c *Core) upElsewhere(s monitor.Snapshot, svc string) string {
	t := c.inc.runs.of(s)
	if t == nil {
		return monitor.UpElsewhere(s, svc)
	}
	for i := t.first(svc); i != 0; i = t.ent(i).next {
		if e := t.ent(i); e.node != s.Local && e.avail == dataset.StatusUp {
			return e.node
		}
	}
	return ""
}

// runningOn returns the nodes of s where svc runs (runningNodes), from
// the table when it is s's. With few it returns nil when svc runs on
// fewer than 2 nodes (the caller has nothing to do then).
func (c *Core) runningOn(s monitor.Snapshot, svc string, few bool) []string {
	t := c.inc.runs.of(s)
	if t == nil {
		up := runningNodes(s, svc)
		if few && len(up) < 2 {
			return nil
		}
		return up
	}
	i := t.first(svc)
	if few && (i == 0 || t.ent(i).next == 0) {
		return nil
	}
	var up []string
	for ; i != 0; i = t.ent(i).next {
		up = append(up, t.ent(i).node)
	}
	return up
}

// ranElsewhere returns the first alive node but this one where svc runs,
// "" when none; from the table when it is s's.
func (c *Core) ranElsewhere(s monitor.Snapshot, svc string) string {
	t := c.inc.runs.of(s)
	if t == nil {
		for _, node := range s.ClusterNodes {
			v, ok := s.Nodes[node]
			if node == c.cfg.Name || !ok || !v.Alive() {
				continue
			}
			if i, ok := v.Data.Services[svc]; ok && runs(i) {
				return node
			}
		}
		return ""
	}
	for i := t.first(svc); i != 0; i = t.ent(i).next {
		if e := t.ent(i); e.node != c.cfg.Name {
			return e.node
		}
	}
	return ""
}
