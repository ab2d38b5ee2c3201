package node

import "time"

// The acknowledgement of state writes. Every Ready that carries Persist
// numbers it (Ready.PersistSeq); the driver writes it (the daemon off its
// loop, the simulation at once) and reports the outcome with persistDone.
// The core, not the driver, keeps the promise "an answer promises what is
// durable": while a state it handed out is not known to be on disk, the
// answers and the actions of the Readies are held back; persistDone
// releases them (in a later Ready) once the state they rest on is written,
// or, when the write failed, rolls the durable state back to what the file
// holds, fails the held answers, aborts the held actions (actionAborted)
// and fails the --wait callers whose target was undone (restore).
//
// Group commit: one state write at a time. While a state handed out is
// being written, the changes that follow are not handed out each (a node
// installing the N configs of a peer's full copy would encode and write
// its whole state N times, and the core would keep N clones of it to roll
// back): they share the number of the next state (Ready.PersistSeq, with
// Persist nil), which the core hands out, as it is then, once the write in
// flight ends. Its persistDone releases everything held up to it. The core
// keeps two copies of its state at most: what the file holds (onDisk, to
// roll back) and the one being written.

// persistence is the core's bookkeeping of state writes.
type persistence struct {
	// seq numbers the newest state: handed out, or, above handed, the
	// changes waiting for the write in flight to end.
	seq    uint64
	handed uint64 // of the last Persist handed out
	acked  uint64 // the fate of every state up to it is known
	// onDisk is what the file holds: the state of the last Persist
	// written (Durable for what the driver wrote itself).
	onDisk State
	// states is the copy of the state handed out and not acked (one at
	// most: the write in flight).
	states []seqState
	// held are the answers and actions waiting for a write.
	held []heldOut
	// undoneTo is the last seq handed out when the last roll back
	// happened (undoneErr its cause): a request that began before it
	// may have lost its change (afterPersist).
	undoneTo  uint64
	undoneErr error
	// failing is the error of the last write, nil once one succeeds.
	failing error
	// from is the seq a barrier (afterPersist) began at, by ticket.
	from map[Ticket]uint64
	// outAnswers and outRuns are released by a write: the next Ready
	// hands them over without holding them again.
	outAnswers []Answer
	outRuns    []Action
	outNode    []NodeAction
}

type seqState struct {
	seq uint64
	st  State
}

// heldOut is an answer or an action of a Ready whose state (seq) is not
// on disk yet.
type heldOut struct {
	seq    uint64
	answer *Answer
	run    *Action
	node   *NodeAction
}

// PersistSeq returns the seq of the newest state (0: none yet), handed
// out or waiting for the write in flight. A request that begins now
// passes it to afterPersist when it ends.
func (c *Core) PersistSeq() uint64 { return c.ps.seq }

// Settled reports whether every state handed out is known to be written
// (or was rolled back): nothing the core holds is ahead of the disk. The
// driver publishes, and runs the decision pass, only then.
func (c *Core) Settled() bool { return c.ps.acked >= c.ps.seq }

// PersistFailing returns the error of the last state write, nil when it
// succeeded (the node writes its state again on every tick meanwhile:
// retryPersist).
func (c *Core) PersistFailing() error { return c.ps.failing }

// markDurable records that the state, as it is now, is what the file
// holds: the driver wrote it itself (the daemon at start-up, its cluster
// identity and incarnation) or read it back.
func (c *Core) markDurable() {
	c.ps.onDisk = c.state.Clone()
}

// afterPersist answers a new ticket (Err nil) once every state handed out
// so far is on disk; with the write's error if it was rolled back, or at
// once if a roll back happened since the state numbered from (the seq of
// PersistSeq when the request began: a change it made may have been
// undone).
func (c *Core) afterPersist(from uint64) Ticket {
	tk := c.newTicket()
	if c.ps.from == nil {
		c.ps.from = map[Ticket]uint64{}
	}
	c.ps.from[tk] = from
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
		c.persistFailed(err, now)
		return
	}
	if seq > c.ps.handed {
		seq = c.ps.handed // a state not handed out is not on disk
	}
	if seq <= c.ps.acked {
		return
	}
	c.ps.acked = seq
	recovered := c.ps.failing != nil
	c.ps.failing = nil
	keep := c.ps.states[:0]
	for _, s := range c.ps.states {
		if s.seq == seq {
			c.ps.onDisk = s.st
		}
		if s.seq > seq {
			keep = append(keep, s)
		}
	}
	c.ps.states = keep
	c.release(seq, nil, now)
	if recovered {
		// what was adopted from the peers while writes failed was
		// undone: adopt it again now that the disk takes writes
		c.remergePeers(now)
	}
	if c.ps.seq > c.ps.handed && c.ps.acked == c.ps.handed {
		c.persist() // the changes made during the write, in one state
	}
}

// persistFailed rolls back every change not written.
func (c *Core) persistFailed(werr error, now time.Time) {
	c.ps.failing = werr
	c.ps.states = nil
	// every state handed out or waiting was built on the undone one
	c.ps.handed, c.ps.acked = c.ps.seq, c.ps.seq
	c.ps.undoneTo, c.ps.undoneErr = c.ps.seq, werr
	c.restore(c.ps.onDisk.Clone(), werr)
	c.release(c.ps.seq, failedf("state not saved: %v (the change was undone)", werr), now)
}

// release hands over the answers and actions held for a state up to seq:
// with err (a roll back) an answer that reported a success fails and an
// action is aborted.
func (c *Core) release(seq uint64, err error, now time.Time) {
	var due []heldOut
	keep := c.ps.held[:0]
	for _, h := range c.ps.held {
		if h.seq <= seq {
			due = append(due, h)
			continue
		}
		keep = append(keep, h)
	}
	c.ps.held = keep
	for _, h := range due {
		switch {
		case h.answer != nil:
			a := *h.answer
			if err != nil && a.Err == nil {
				a.Err, a.Result = err, ""
			}
			c.ps.outAnswers = append(c.ps.outAnswers, a)
		case h.node != nil && err != nil:
			c.emit(NodeActionEnd{Action: h.node.Kind, Err: "not run: " + err.Error()})
		case h.node != nil:
			c.ps.outNode = append(c.ps.outNode, *h.node)
		case err != nil:
			c.actionAborted(h.run.Service, h.run.Kind, err, now)
		default:
			c.ps.outRuns = append(c.ps.outRuns, *h.run)
		}
	}
}

// retryPersist runs on every tick while writes fail: what the instance
// monitors observed is recorded again, and the state is handed out even
// if unchanged, so that the node recovers as soon as the disk does.
func (c *Core) retryPersist() {
	if c.ps.failing == nil || !c.Settled() {
		return
	}
	c.persistMonitors()
	c.persist()
}

// hold numbers the Persist of r, and keeps back its answers and actions
// while a state handed out is not on disk. While a write is in flight,
// Persist is not handed out: the changes wait for its end (group commit,
// persistDone), numbered with the state that will hold them. A barrier
// whose request began before a roll back fails at once.
func (c *Core) hold(r *Ready) {
	if r.Persist != nil {
		if c.ps.seq == c.ps.handed {
			c.ps.seq++ // a new state: not yet numbered
		}
		r.PersistSeq = c.ps.seq
		switch {
		case c.cfg.WriteThrough:
			c.ps.handed, c.ps.acked, c.ps.onDisk = c.ps.seq, c.ps.seq, r.Persist.Clone()
		case c.ps.handed > c.ps.acked:
			r.Persist = nil // handed out when the write in flight ends
		default:
			c.ps.handed = c.ps.seq
			c.ps.states = append(c.ps.states[:0], seqState{seq: c.ps.seq, st: r.Persist.Clone()})
		}
	}
	for i := range r.Answers {
		a := &r.Answers[i]
		if from, ok := c.ps.from[a.Ticket]; ok {
			delete(c.ps.from, a.Ticket)
			if c.ps.undoneTo > from && a.Err == nil {
				a.Err = failedf("state not saved: %v (a change made during this call was undone)", c.ps.undoneErr)
			}
		}
	}
	if c.Settled() {
		return
	}
	for i := range r.Answers {
		a := r.Answers[i]
		c.ps.held = append(c.ps.held, heldOut{seq: c.ps.seq, answer: &a})
	}
	for i := range r.Run {
		a := r.Run[i]
		c.ps.held = append(c.ps.held, heldOut{seq: c.ps.seq, run: &a})
	}
	for i := range r.NodeActions {
		a := r.NodeActions[i]
		c.ps.held = append(c.ps.held, heldOut{seq: c.ps.seq, node: &a})
	}
	r.Ordered = r.Run
	r.Answers, r.Run, r.NodeActions = nil, nil, nil
}
