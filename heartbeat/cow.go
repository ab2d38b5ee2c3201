package heartbeat

import (
	"maps"

	"haven/dataset"
)

// cow is the copy-on-write of the copy held of a peer (peer.data): a Data
// event hands over a copy that shares data's maps and values instead of a
// deep clone (a change of one service among 2,000 cloned all 2,000 for
// every event), so a delta must never write a map a Data event already
// holds. A delta replaces whole entries (an Instance with its Resources
// is never written in place): the maps it writes are copied once
// (shallow) after each event, the others stay shared. The event also says
// which entries changed since the previous Data event of the peer
// (Event.Changes), so that its receiver looks at those only.
type cow struct {
	// svc, tgt, cfg: data's Services, Targets, Configs are its own (not
	// handed over in a Data event yet).
	svc, tgt, cfg bool
	// chg are the changes of data since the last Data event (nil: a full
	// copy came since, or no event was emitted yet).
	chg *dataset.Changes
	// emitted is the copy of the last Data event.
	emitted *dataset.Node
	// res is the number of resources of data's instances (resOK: known),
	// kept by the deltas for their bound (delta.bound).
	res   int
	resOK bool
}

// full notes a full copy taken as data (its maps are its own).
func (w *cow) full() {
	w.svc, w.tgt, w.cfg = true, true, true
	w.chg, w.resOK = nil, false
}

// applyDelta applies m's delta to p's copy, after copying the maps it
// writes that a Data event holds, and notes what it changes.
func (p *peer) applyDelta(m *message) {
	w, d, n := &p.cow, m.Delta, p.data
	if !w.resOK {
		w.res, w.resOK = resources(n.Services), true
	}
	if w.chg != nil {
		w.chg.Head = w.chg.Head || d.Head != nil
		noteKeys(w.chg.Services, d.Set, d.Del)
		noteKeys(w.chg.Targets, d.TSet, d.TDel)
		noteKeys(w.chg.Configs, d.CSet, d.CDel)
	}
	if !w.svc && (len(d.Set) > 0 || len(d.Del) > 0) {
		n.Services, w.svc = maps.Clone(n.Services), true
	}
	if !w.tgt && (len(d.TSet) > 0 || len(d.TDel) > 0) {
		n.Targets, w.tgt = maps.Clone(n.Targets), true
	}
	if !w.cfg && (len(d.CSet) > 0 || len(d.CDel) > 0) {
		n.Configs, w.cfg = maps.Clone(n.Configs), true
	}
	// the resources of the services touched, before and after (those
	// its bound leaves out are unchanged)
	touched := appendKeys(nil, d.Set, d.Del)
	w.res -= resourcesOf(n.Services, touched)
	p.sums.applyDelta(d, n, m.Gen, w.res)
	w.res += resourcesOf(n.Services, touched)
}

// resourcesOf counts the resources of the instances of svcs named by
// keys, each once.
func resourcesOf(svcs map[string]dataset.Instance, keys []string) int {
	n := 0
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			n += len(svcs[k].Resources)
		}
	}
	return n
}

// emitCopy is the copy a Data event hands over, and its changes since the
// previous Data event (nil: take it as a whole). From then on data's maps
// are shared with it: the event's copy is never written again.
func (p *peer) emitCopy() (*dataset.Node, *dataset.Changes) {
	w := &p.cow
	d := *p.data
	d.Format = p.format
	ch := w.chg
	if ch != nil {
		ch.Base = w.emitted
		ch.Head = ch.Head || w.emitted.Format != d.Format
	}
	w.emitted = &d
	w.chg = dataset.NewChanges(nil)
	w.svc, w.tgt, w.cfg = false, false, false
	return &d, ch
}

func noteKeys[V any](into map[string]bool, set map[string]V, del []string) {
	for k := range set {
		into[k] = true
	}
	for _, k := range del {
		into[k] = true
	}
}

// resources counts the resources of the instances of svcs.
func resources(svcs map[string]dataset.Instance) int {
	n := 0
	for _, i := range svcs {
		n += len(i.Resources)
	}
	return n
}
