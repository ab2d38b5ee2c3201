package node

import (
	"time"
)

// The core's side of persistence: its inputs (persistDone), its queries,
// and what a write's end asks of the rest of the core.

// PersistSeq returns the seq of the newest state (0: none yet), handed
// out or waiting for the write in flight. A request that begins now
// passes it to afterPersist when it ends.
func (c *Core) PersistSeq() uint64 { return c.ps.Seq() }

// Settled reports whether every state handed out is known to be written
// (or was rolled back): nothing the core holds is ahead of the disk. The
// driver publishes, and runs the decision pass, only then.
func (c *Core) Settled() bool { return c.ps.Settled() }

// PersistFailing returns the error of the last state write, nil when it
// succeeded (the node writes its state again on every tick meanwhile:
// retryPersist).
func (c *Core) PersistFailing() error { return c.ps.Failing() }

// markDurable records that the state, as it is now, is what the file
// holds: the driver wrote it itself (the daemon at start-up, its cluster
// identity and incarnation) or read it back.
func (c *Core) markDurable() {
	c.ps.Durable(c.state.Clone())
}

// afterPersist answers a new ticket (Err nil) once every state handed out
// so far is on disk; with the write's error if it was rolled back, or at
// once if a roll back happened since the state numbered from (the seq of
// PersistSeq when the request began: a change it made may have been
// undone).
func (c *Core) afterPersist(from uint64) Ticket {
	tk := c.newTicket()
	c.ps.Barrier(tk, from)
	c.answer(Answer{Ticket: tk})
	return tk
}

// persistDone is the outcome of writing the state numbered seq (the one
// handed out last). On success, the answers and actions that waited for
// it come in the next Ready, with the newest state to write if changes
// waited for this write. On failure (err), the durable state goes back to
// what the file holds; every change not written (handed out or waiting)
// is undone; the answers waiting for them fail, their actions are aborted.
func (c *Core) persistDone(seq uint64, err error, now time.Time) {
	if err != nil {
		c.restore(c.ps.RollBack(err), err)
		c.release(c.ps.Seq(), failedf("state not saved: %v (the change was undone)", err), now)
		return
	}
	fresh, recovered := c.ps.Written(seq)
	if !fresh {
		return
	}
	c.release(c.ps.Acked(), nil, now)
	if recovered {
		// what was adopted from the peers while writes failed was
		// undone: adopt it again now that the disk takes writes
		c.remergePeers(now)
	}
	if c.ps.GroupDue() {
		c.persist() // the changes made during the write, in one state
	}
}

// release hands over what waited for a state up to seq; with err (a roll
// back) the actions held are aborted and the node actions not run.
func (c *Core) release(seq uint64, err error, now time.Time) {
	for _, h := range c.ps.Release(seq, err) {
		if h.Node != nil {
			c.emit(NodeActionEnd{Action: h.Node.Kind, Err: "not run: " + err.Error()})
			continue
		}
		c.actionAborted(h.Run.Service, h.Run.Kind, err, now)
	}
}

// retryPersist runs on every tick while writes fail: what the instance
// monitors observed is recorded again, and the state is handed out even
// if unchanged, so that the node recovers as soon as the disk does.
func (c *Core) retryPersist() {
	if c.ps.Failing() == nil || !c.Settled() {
		return
	}
	c.persistMonitors()
	c.persist()
}

// restore is the roll back of a failed write: the durable state goes back
// to st (what the file holds), the Lamport clock never goes back (versions
// handed out stay unique), and the --wait callers whose target was undone
// get err.
func (c *Core) restore(st State, err error) {
	if st.Services == nil {
		st.Services = map[string]ServiceState{}
	}
	lamport := c.state.Lamport
	c.state = st
	c.bumpMergeEra()
	if lamport > c.state.Lamport {
		c.state.Lamport = lamport
	}
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		t := c.state.Services[w.svc].Target
		if t.ID == w.id && activeTarget(t) {
			keep = append(keep, w)
			continue
		}
		c.answer(Answer{Ticket: w.ticket, ID: w.id, Err: failedf("state not saved: %v (target id %s undone)", err, w.id)})
	}
	c.waiters = keep
	c.publish()
}
