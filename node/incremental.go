package node

import (
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/node/view"
	"haven/placement"
)

// incremental is what the core keeps to decide again only the services a
// heartbeat changed (passView): a peer's new data is compared with
// its previous copy; when only instances differ, their services are
// dirty, and the next pass decides them and the services related to them
// (monitor.Relations) over the previous pass's snapshot with those peers'
// views replaced. Any other change (the peer's node-level data, a status,
// compat, fencing, a wake-up due, the local dataset) runs the full pass,
// which stays the safety net (fullPassPeriod).
type incremental struct {
	// dirty are the services whose instances changed on a peer since the
	// last pass; peers the peers whose data changed since then.
	dirty map[string]bool
	peers map[string]bool
	// last is the snapshot of the last pass; rel its relations (built on
	// the first incremental pass over it); loadUsed whether a service of
	// it reads the nodes' load (placement load avg or score, constraints).
	last     *monitor.Snapshot
	rel      *monitor.Relations
	loadUsed bool
	// due is the earliest wake-up asked since the last full pass: once it
	// is passed, the pass is full (the end of a ready window, a restart
	// delay, a settle time... of a service that may not be dirty).
	due time.Time
	// cache keeps what a full pass read of each node's data for the next
	// (monitor.Cache: a peer's data is a copy no one modifies, the local
	// data is built anew for each pass).
	cache monitor.Cache
	// runs is where each service runs, for the snapshot of the full pass
	// under way (runtable.go).
	runs runTable
	// full and partial count the passes (tests, benchmarks); off turns
	// the incremental passes off (tests: the reference node).
	full, partial uint64
	off           bool
	// only, during an incremental pass, are the instances of the services
	// it covers, in name order: the per-service work of the pass (ladders,
	// multiple active, failover notes) skips the others (passInstances).
	only []*instsm.Instance
}

// passInstances are the instances the pass under way decides, in name
// order: every one, or those of an incremental pass.
func (c *Core) passInstances() []*instsm.Instance {
	if c.inc.only == nil {
		return c.ilist
	}
	return c.inc.only
}

// noteWake records a wake-up asked (wakeAt).
func (in *incremental) noteWake(t time.Time) {
	if in.due.IsZero() || t.Before(in.due) {
		in.due = t
	}
}

// loadUsed reports whether a service reads the nodes' load or memory.
func loadUsed(svcs map[string]*config.ServiceConfig) bool {
	for _, cfg := range svcs {
		if cfg == nil {
			continue
		}
		if cfg.Constraint != nil || cfg.Placement == placement.PolicyLoadAvg || cfg.Placement == placement.PolicyScore {
			return true
		}
	}
	return false
}

// noteData compares a peer's new data with what was known of it (prev)
// and marks the services whose instances changed dirty: those ch lists
// when it is set (ch.Base is prev.Data), else every one. It reports false
// when the change is not limited to instances (or the previous copy does
// not tell): the view changed as a whole.
func (c *Core) noteData(name string, prev view.Peer, data *dataset.Node, ch *dataset.Changes) bool {
	in := &c.inc
	if in.off || in.last == nil || prev.Data == nil || !prev.Up || prev.Stale || !nodeLevelEqual(prev.Data, data, in.loadUsed) {
		return false
	}
	old := prev.Data.Services
	mark := func(svc string) {
		if in.dirty == nil {
			in.dirty = map[string]bool{}
		}
		in.dirty[svc] = true
	}
	if in.peers == nil {
		in.peers = map[string]bool{}
	}
	in.peers[name] = true
	if ch != nil {
		for svc := range ch.Services {
			o, had := old[svc]
			i, has := data.Services[svc]
			if had != has || !instanceEqual(o, i) {
				mark(svc)
			}
		}
		return true
	}
	kept := 0 // services of old still there
	for svc, i := range data.Services {
		o, ok := old[svc]
		if ok {
			kept++
		}
		if !ok || !instanceEqual(o, i) {
			mark(svc)
		}
	}
	if kept != len(old) {
		for svc := range old {
			if _, ok := data.Services[svc]; !ok {
				mark(svc)
			}
		}
	}
	return true
}

// nodeLevelEqual reports whether two copies of a node's data agree on
// everything the decisions read but the instances: the node monitor,
// frozen, compat, labels (constraints), the load and memory when a
// service reads them, split action. Targets, clears and configs are
// merged into the local data (a change there is a change of the local
// dataset: a full pass); Gen changes with everything.
// TestNodeLevelFieldsKnown keeps this list in step with dataset.Node.
func nodeLevelEqual(a, b *dataset.Node, load bool) bool {
	if a.Name != b.Name || a.Monitor != b.Monitor || a.Frozen != b.Frozen || a.Compat != b.Compat || a.Format != b.Format ||
		a.FrozenReason != b.FrozenReason || a.SplitAction != b.SplitAction ||
		a.SplitFrozen != b.SplitFrozen || a.SplitFrozenReason != b.SplitFrozenReason || len(a.Labels) != len(b.Labels) ||
		(a.Guard == nil) != (b.Guard == nil) || a.Guard != nil && *a.Guard != *b.Guard {
		return false
	}
	if load && (a.Load15 != b.Load15 || a.MemAvailPct != b.MemAvailPct) {
		return false
	}
	for k, v := range a.Labels {
		if w, ok := b.Labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// instanceEqual reports whether two copies of an instance are the same
// (every field: TestInstanceFieldsKnown keeps it in step with
// dataset.Instance).
func instanceEqual(a, b dataset.Instance) bool {
	// the measured durations (svcmgr simulate's): no decision reads them
	a.LastStartMs, a.LastStopMs, b.LastStartMs, b.LastStopMs = 0, 0, 0, 0
	return a.Equal(b)
}

// viewSnapshot is the snapshot of an incremental pass at now: the last
// pass's, with the views of the peers whose data changed replaced. ok is
// false when that would not be the snapshot of now (a peer's status,
// compat or fencing changed since): the pass must be full.
func (c *Core) viewSnapshot(now time.Time) (s monitor.Snapshot, ok bool) {
	in := &c.inc
	s = *in.last
	s.Now = now
	if s.Compat != c.pv.Compat || s.ConfDiffers != c.pv.ConfDiffers || !sameFencing(s.Fencing, c.fencing()) || s.FastAck != c.fastAck(now) {
		return s, false
	}
	nodes := make(map[string]placement.NodeView, len(s.Nodes))
	for n, v := range s.Nodes {
		nodes[n] = v
	}
	for _, name := range c.pv.Pnames {
		p := c.pv.Peers[name]
		v, found := nodes[name]
		if !found || v.Status != view.Status(p.Peer, now, c.cfg.MaintenanceGrace) {
			return s, false
		}
		if in.peers[name] {
			if p.Data == nil || view.Unconfirmed(p.Peer) {
				return s, false
			}
			v.Data = *p.Data
			nodes[name] = v
		}
	}
	s.Nodes = nodes
	return s, true
}

func sameFencing(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// incrementalPass decides again the dirty services and those related to
// them, when it can; it reports false when the pass must be full.
func (c *Core) incrementalPass(now time.Time) bool {
	in := &c.inc
	if in.last == nil || len(in.dirty) == 0 || c.pv.ViewChanged || (!in.due.IsZero() && !now.Before(in.due)) {
		return false
	}
	snap, ok := c.viewSnapshot(now)
	if !ok {
		return false
	}
	if in.rel == nil {
		in.rel = monitor.NewRelations(snap.Services)
	}
	dirty := make([]string, 0, len(in.dirty))
	for svc := range in.dirty {
		dirty = append(dirty, svc)
	}
	only := in.rel.Closure(dirty)
	in.dirty, in.peers = nil, nil
	in.partial++
	c.decide(snap, now, only)
	return true
}
