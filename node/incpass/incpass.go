// Package incpass is what the core's decision passes keep from one pass
// to the next (State): the services and peers changed since the last
// pass, the last snapshot and its relations, the cache of the nodes'
// data, and the table of where each service runs (RunTable). The passes
// themselves are package node's (node/orchestrate.go,
// node/incremental.go, node/runtable.go).
package incpass

import (
	"reflect"
	"time"

	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/placement"
)

// State is what the core keeps to decide again only the services a heartbeat
// changed (node/orchestrate.go: passView): a peer's new data is compared with
// its previous copy; when only instances differ, their services are dirty, and
// the next pass decides them and the services related to them
// (monitor.Relations) over the previous pass's snapshot with those peers' views
// replaced. Any other change (the peer's node-level data, a status, compat,
// fencing, a wake-up due, the local dataset) runs the full pass, which stays
// the safety net (node/orchestrate.go: fullPassPeriod).
type State struct {
	// Dirty are the services whose instances changed on a peer since the
	// last pass; Peers the peers whose data changed since then.
	Dirty map[string]bool
	Peers map[string]bool
	// Last is the snapshot of the last pass; Rel its relations (built on
	// the first incremental pass over it); LoadUsed whether a service of
	// it reads the nodes' load (placement load avg or score, constraints).
	Last     *monitor.Snapshot
	Rel      *monitor.Relations
	LoadUsed bool
	// Due is the earliest wake-up asked since the last full pass: once it
	// is passed, the pass is full (the end of a ready window, a restart
	// delay, a settle time... of a service that may not be dirty).
	Due time.Time
	// Cache keeps what a full pass read of each node's data for the next
	// (monitor.Cache: a peer's data is a copy no one modifies, the local
	// data is built anew for each pass).
	Cache monitor.Cache
	// Runs is where each service runs, for the snapshot of the full pass
	// under way (RunTable).
	Runs RunTable
	// Full and Partial count the passes (tests, benchmarks); Off turns
	// the incremental passes off (tests: the reference node).
	Full, Partial uint64
	Off           bool
	// Only, during an incremental pass, are the instances of the services
	// it covers, in name order: the per-service work of the pass (ladders,
	// multiple active, failover notes) skips the others
	// (node/incremental.go: passInstances).
	Only []*instsm.Instance
}

// NoteWake records a wake-up asked (node/orchestrate.go: wakeAt).
func (in *State) NoteWake(t time.Time) {
	if in.Due.IsZero() || t.Before(in.Due) {
		in.Due = t
	}
}

// RunTable says, for the snapshot of a full pass, on which alive nodes each
// service runs (effective avail up or warn), in the snapshot's ClusterNodes
// order: watchLadders, resolveMultipleActive and watchRanElsewhere (package
// node) read it instead of looking every service up in every node's map (3 x
// services x nodes lookups per pass). It is built once per snapshot of a full
// pass (Build); the answers come from it only for that very snapshot (its Nodes
// map), and an incremental pass, whose snapshot is another, keeps the
// per-service lookups (one service: a few lookups).
//
// A node's list of running services is kept from one build to the next
// while its Services map is the very same map (a peer not heard from
// since): the node core never modifies a map it put in a snapshot (the
// heartbeat delivers copies, the local data is built anew for each pass),
// the promise monitor.Cache relies on too. A node's liveness is read anew
// at each Build.
type RunTable struct {
	// Nodes is the Nodes map of the snapshot the table was built for.
	Nodes map[string]placement.NodeView
	// Cols are the services running on each node, by node name.
	Cols map[string]RunCol
	// Head is, per service, 1 + the index in Ents of its first node (0:
	// it runs nowhere); Ents chain the nodes of a service in ClusterNodes
	// order.
	Head map[string]int32
	Ents []RunEnt
}

type RunCol struct {
	Svcs map[string]dataset.Instance // kept: its address identifies it
	Runs []RunSvc
}

type RunSvc struct {
	Svc   string
	Avail dataset.Status // up or warn
}

type RunEnt struct {
	Node  string
	Avail dataset.Status // up or warn
	Next  int32          // 1 + the index of the service's next node, 0: the last
}

// Build makes the table of s (a full pass's snapshot).
func (t *RunTable) Build(s monitor.Snapshot) {
	if t.Cols == nil {
		t.Cols = map[string]RunCol{}
		t.Head = map[string]int32{}
	}
	clear(t.Head)
	t.Ents = t.Ents[:0]
	// backwards: each node is put at the head of its services' chains
	for i := len(s.ClusterNodes) - 1; i >= 0; i-- {
		n := s.ClusterNodes[i]
		v, ok := s.Nodes[n]
		if !ok || !v.Alive() {
			continue
		}
		for _, r := range t.Column(n, v.Data.Services) {
			t.Ents = append(t.Ents, RunEnt{Node: n, Avail: r.Avail, Next: t.Head[r.Svc]})
			t.Head[r.Svc] = int32(len(t.Ents))
		}
	}
	if len(t.Cols) > len(s.ClusterNodes) { // forget the nodes gone
		in := make(map[string]bool, len(s.ClusterNodes))
		for _, n := range s.ClusterNodes {
			in[n] = true
		}
		for n := range t.Cols {
			if !in[n] {
				delete(t.Cols, n)
			}
		}
	}
	t.Nodes = s.Nodes
}

// Column returns the services running in svcs (node's map), from the
// table when it read that very map.
func (t *RunTable) Column(node string, svcs map[string]dataset.Instance) []RunSvc {
	e, ok := t.Cols[node]
	if ok && svcs != nil && reflect.ValueOf(e.Svcs).UnsafePointer() == reflect.ValueOf(svcs).UnsafePointer() {
		return e.Runs
	}
	runs := e.Runs[:0]
	for svc, i := range svcs {
		if a := monitor.EffectiveAvail(i); a == dataset.StatusUp || a == dataset.StatusWarn {
			runs = append(runs, RunSvc{Svc: svc, Avail: a})
		}
	}
	t.Cols[node] = RunCol{Svcs: svcs, Runs: runs}
	return runs
}

// Of returns the table when it was built for s, nil otherwise (the
// caller looks the service up in each node's map).
func (t *RunTable) Of(s monitor.Snapshot) *RunTable {
	if t.Nodes == nil || s.Nodes == nil ||
		reflect.ValueOf(t.Nodes).UnsafePointer() != reflect.ValueOf(s.Nodes).UnsafePointer() {
		return nil
	}
	return t
}

// First is the index + 1 of the first node where svc runs (0: none);
// Ent(i) is that entry, whose Next is the following one.
func (t *RunTable) First(svc string) int32 { return t.Head[svc] }
func (t *RunTable) Ent(i int32) *RunEnt    { return &t.Ents[i-1] }
