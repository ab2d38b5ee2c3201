package node

import (
	"maps"
	"slices"

	"haven/dataset"
)

// The config distribution sub-machine keeps what is in flight of the
// configs: the writes handed out and not reported (ops), the edits made
// here that the live peers have not all adopted (pending), the deletions
// waiting for a stop, the peers' versions refused, and the peers whose
// configs are left over at the merge budget. Its inputs are the methods
// below; the rules that decide (configs.go, configedit.go,
// configbudget.go) read and feed it, and it knows nothing of them.

// configDist is the core's bookkeeping of config distribution.
type configDist struct {
	// ops are the ConfigOps handed out and not yet reported, in order.
	ops []*cfgOp
	// pending are the edits made here that the live peers have not all
	// adopted yet, by service, in the order they were accepted.
	pending map[string][]*pendingEdit
	// refused are the versions from peers that did not validate here (not
	// tried again, logged once).
	refused map[string]dataset.Version
	// deletes are the deletions waiting for the stop of the local
	// instance, by the ticket of that stop.
	deletes map[Ticket]deletion
	// more are the peers whose configs mergeConfigs left over at its
	// budget, for mergeMore (configbudget.go).
	more map[string]bool
}

// order records a ConfigOp handed out.
func (cd *configDist) order(op *cfgOp) { cd.ops = append(cd.ops, op) }

// lastOp returns the newest ConfigOp of name handed out and not reported,
// or nil.
func (cd *configDist) lastOp(name string) *cfgOp {
	for i := len(cd.ops) - 1; i >= 0; i-- {
		if op := cd.ops[i]; op.svc == name {
			return op
		}
	}
	return nil
}

// done takes the first ConfigOp of svc handed out and not reported (its
// end was reported), or nil.
func (cd *configDist) done(svc string) *cfgOp {
	for i, o := range cd.ops {
		if o.svc == svc {
			cd.ops = append(cd.ops[:i:i], cd.ops[i+1:]...)
			return o
		}
	}
	return nil
}

// busy reports whether a ConfigOp of svc is handed out and not reported.
func (cd *configDist) busy(svc string) bool { return cd.lastOp(svc) != nil }

// awaitStop keeps a deletion until the stop of ticket tk ends.
func (cd *configDist) awaitStop(tk Ticket, d deletion) {
	if cd.deletes == nil {
		cd.deletes = map[Ticket]deletion{}
	}
	cd.deletes[tk] = d
}

// stopped takes the deletion that waited for the stop of ticket tk.
func (cd *configDist) stopped(tk Ticket) (deletion, bool) {
	d, ok := cd.deletes[tk]
	delete(cd.deletes, tk)
	return d, ok
}

// awaitPeers keeps an edit of name, written here, until the live peers
// adopt it.
func (cd *configDist) awaitPeers(name string, e *pendingEdit) {
	if cd.pending == nil {
		cd.pending = map[string][]*pendingEdit{}
	}
	cd.pending[name] = append(cd.pending[name], e)
}

// pendingOf returns a copy of the edits of name waiting for the peers, in
// the order they were accepted.
func (cd *configDist) pendingOf(name string) []*pendingEdit {
	return append([]*pendingEdit(nil), cd.pending[name]...)
}

// pendingServices returns the services with edits waiting, sorted.
func (cd *configDist) pendingServices() []string {
	return slices.Sorted(maps.Keys(cd.pending))
}

// forget drops an edit of name that was answered.
func (cd *configDist) forget(name string, e *pendingEdit) {
	ps := cd.pending[name]
	for i, x := range ps {
		if x == e {
			cd.pending[name] = append(ps[:i:i], ps[i+1:]...)
			break
		}
	}
	if len(cd.pending[name]) == 0 {
		delete(cd.pending, name)
	}
}

// refuse remembers that version v of name, from a peer, did not validate
// here: it is not tried again.
func (cd *configDist) refuse(name string, v dataset.Version) {
	if cd.refused == nil {
		cd.refused = map[string]dataset.Version{}
	}
	cd.refused[name] = v
}

// refusedBefore reports whether version v of name was refused already.
func (cd *configDist) refusedBefore(name string, v dataset.Version) bool {
	r, ok := cd.refused[name]
	return ok && r == v
}

// leaveOver notes that the configs of peer from were left over at the
// merge budget.
func (cd *configDist) leaveOver(from string) {
	if cd.more == nil {
		cd.more = map[string]bool{}
	}
	cd.more[from] = true
}

// takeLeftOver reports whether the configs of peer pn were left over, and
// forgets it: the caller merges them now.
func (cd *configDist) takeLeftOver(pn string) bool {
	if !cd.more[pn] {
		return false
	}
	delete(cd.more, pn)
	return true
}
