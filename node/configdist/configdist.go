// Package configdist keeps what is in flight of config distribution in
// the core: the config writes handed out and not reported (Op), the edits
// made here that the live peers have not all adopted (Edit), the
// deletions waiting for a stop (Deletion), the peers' versions refused,
// and the peers whose configs are left over at the merge budget. The
// rules that decide (node/configs.go, node/configedit.go,
// node/configbudget.go) read and feed it; it knows nothing of them.
package configdist

import (
	"maps"
	"slices"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node/vocab"
)

// Op is a ConfigOp handed out, with what its end decides.
type Op struct {
	Svc   string
	Cfg   *config.ServiceConfig // nil: a removal
	Entry dataset.ConfigEntry   // what the state records once written
	What  string
	From  string  // a peer's config: its name
	Edit  *Edit   // a local edit: waits for the peers once written
	Redo  []*Edit // a rebase: the edits it applies again
	// Ticket answers a deletion (0: a deletion heard from a peer).
	Ticket vocab.Ticket
	// Prev is the text this op replaces (the config installed, or that of
	// the op of the service handed out before it): kept as the previous
	// config once written (nil: none).
	Prev []byte
	// PrevRun is the run digest of that text (config.ServiceConfig's
	// RunDigest; "" when unknown).
	PrevRun string
}

// Edit is an edit made here that the live peers have not all
// adopted yet.
type Edit struct {
	Ticket vocab.Ticket
	// Op is "set", "add" or "unset" with Kws; "" for a whole-file edit.
	Op  string
	Kws []string
	// Counter is this node's counter of the version that last applied it.
	Counter  uint64
	Rebases  int
	Deadline time.Time
}

// Deletion is a deletion waiting for the stop of the local instance.
type Deletion struct {
	Svc    string
	V      dataset.Version
	Ticket vocab.Ticket
	// Sig is the deletion's admin signature ("" for none).
	Sig string
}

// Book is the core's bookkeeping of config distribution.
type Book struct {
	// ops are the ConfigOps handed out and not yet reported, in order.
	ops []*Op
	// pending are the edits made here that the live peers have not all
	// adopted yet, by service, in the order they were accepted.
	pending map[string][]*Edit
	// refused are the versions from peers that did not validate here (not
	// tried again, logged once).
	refused map[string]dataset.Version
	// deletes are the deletions waiting for the stop of the local
	// instance, by the ticket of that stop.
	deletes map[vocab.Ticket]Deletion
	// more are the peers whose configs mergeConfigs left over at its
	// budget, for mergeMore (node/configbudget.go).
	more map[string]bool
	// restore are the services whose file here was refused for its
	// signature: the content of their recorded version is taken back from
	// a peer.
	restore map[string]bool
}

// Restore marks name to be taken back from a peer at its recorded version.
func (cd *Book) Restore(name string) {
	if cd.restore == nil {
		cd.restore = map[string]bool{}
	}
	cd.restore[name] = true
}

// Restoring reports whether name waits to be taken back from a peer.
func (cd *Book) Restoring(name string) bool { return cd.restore[name] }

// Restored forgets that name waited to be taken back.
func (cd *Book) Restored(name string) { delete(cd.restore, name) }

// Order records a ConfigOp handed out.
func (cd *Book) Order(op *Op) { cd.ops = append(cd.ops, op) }

// LastOp returns the newest ConfigOp of name handed out and not reported,
// or nil.
func (cd *Book) LastOp(name string) *Op {
	for i := len(cd.ops) - 1; i >= 0; i-- {
		if op := cd.ops[i]; op.Svc == name {
			return op
		}
	}
	return nil
}

// Done takes the first ConfigOp of svc handed out and not reported (its
// end was reported), or nil.
func (cd *Book) Done(svc string) *Op {
	for i, o := range cd.ops {
		if o.Svc == svc {
			cd.ops = append(cd.ops[:i:i], cd.ops[i+1:]...)
			return o
		}
	}
	return nil
}

// Busy reports whether a ConfigOp of svc is handed out and not reported.
func (cd *Book) Busy(svc string) bool { return cd.LastOp(svc) != nil }

// AwaitStop keeps a deletion until the stop of ticket tk ends.
func (cd *Book) AwaitStop(tk vocab.Ticket, d Deletion) {
	if cd.deletes == nil {
		cd.deletes = map[vocab.Ticket]Deletion{}
	}
	cd.deletes[tk] = d
}

// Stopped takes the deletion that waited for the stop of ticket tk.
func (cd *Book) Stopped(tk vocab.Ticket) (Deletion, bool) {
	d, ok := cd.deletes[tk]
	delete(cd.deletes, tk)
	return d, ok
}

// AwaitPeers keeps an edit of name, written here, until the live peers
// adopt it.
func (cd *Book) AwaitPeers(name string, e *Edit) {
	if cd.pending == nil {
		cd.pending = map[string][]*Edit{}
	}
	cd.pending[name] = append(cd.pending[name], e)
}

// PendingOf returns a copy of the edits of name waiting for the peers, in
// the order they were accepted.
func (cd *Book) PendingOf(name string) []*Edit {
	return append([]*Edit(nil), cd.pending[name]...)
}

// PendingServices returns the services with edits waiting, sorted.
func (cd *Book) PendingServices() []string {
	return slices.Sorted(maps.Keys(cd.pending))
}

// Forget drops an edit of name that was answered.
func (cd *Book) Forget(name string, e *Edit) {
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

// Refuse remembers that version v of name, from a peer, did not validate
// here: it is not tried again.
func (cd *Book) Refuse(name string, v dataset.Version) {
	if cd.refused == nil {
		cd.refused = map[string]dataset.Version{}
	}
	cd.refused[name] = v
}

// RefusedBefore reports whether version v of name was refused already.
func (cd *Book) RefusedBefore(name string, v dataset.Version) bool {
	r, ok := cd.refused[name]
	return ok && r == v
}

// LeaveOver notes that the configs of peer from were left over at the
// merge budget.
func (cd *Book) LeaveOver(from string) {
	if cd.more == nil {
		cd.more = map[string]bool{}
	}
	cd.more[from] = true
}

// TakeLeftOver reports whether the configs of peer pn were left over, and
// forgets it: the caller merges them now.
func (cd *Book) TakeLeftOver(pn string) bool {
	if !cd.more[pn] {
		return false
	}
	delete(cd.more, pn)
	return true
}

// Ops returns the ConfigOps handed out and not yet reported, in order.
func (cd *Book) Ops() []*Op { return cd.ops }

// Waiting reports whether edits made here wait for the peers.
func (cd *Book) Waiting() bool { return len(cd.pending) > 0 }

// LeftOver reports whether the configs of a peer were left over at the
// merge budget.
func (cd *Book) LeftOver() bool { return len(cd.more) > 0 }
