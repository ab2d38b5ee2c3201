package node

import (
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/view"
	"haven/placement"
)

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
	if in.Off || in.Last == nil || prev.Data == nil || !prev.Up || prev.Stale || !nodeLevelEqual(prev.Data, data, in.LoadUsed) {
		return false
	}
	old := prev.Data.Services
	mark := func(svc string) {
		if in.Dirty == nil {
			in.Dirty = map[string]bool{}
		}
		in.Dirty[svc] = true
	}
	if in.Peers == nil {
		in.Peers = map[string]bool{}
	}
	in.Peers[name] = true
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
// frozen, compat, labels (constraints), capacity (requests), the load and memory when a
// service reads them, split action. Targets, clears and configs are
// merged into the local data (a change there is a change of the local
// dataset: a full pass); Gen changes with everything.
// TestNodeLevelFieldsKnown keeps this list in step with dataset.Node.
func nodeLevelEqual(a, b *dataset.Node, load bool) bool {
	if a.Name != b.Name || a.Monitor != b.Monitor || a.Frozen != b.Frozen || a.Compat != b.Compat || a.Format != b.Format ||
		a.FrozenReason != b.FrozenReason || a.SplitAction != b.SplitAction ||
		a.SplitFrozen != b.SplitFrozen || a.SplitFrozenReason != b.SplitFrozenReason || len(a.Labels) != len(b.Labels) ||
		(a.Guard == nil) != (b.Guard == nil) || a.Guard != nil && *a.Guard != *b.Guard ||
		(a.Capacity == nil) != (b.Capacity == nil) || a.Capacity != nil && *a.Capacity != *b.Capacity {
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
	s = *in.Last
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
		if in.Peers[name] {
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
	if in.Last == nil || len(in.Dirty) == 0 || c.pv.ViewChanged || (!in.Due.IsZero() && !now.Before(in.Due)) {
		return false
	}
	snap, ok := c.viewSnapshot(now)
	if !ok {
		return false
	}
	if in.Rel == nil {
		in.Rel = monitor.NewRelations(snap.Services)
	}
	dirty := make([]string, 0, len(in.Dirty))
	for svc := range in.Dirty {
		dirty = append(dirty, svc)
	}
	only := in.Rel.Closure(dirty)
	in.Dirty, in.Peers = nil, nil
	in.Partial++
	c.decide(snap, now, only)
	return true
}
