package node

import (
	"time"

	"haven/internal/planted"
)

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

// The persistence sub-machine: its inputs are the Readies it numbers and
// holds (hold), the barriers (barrier), and the ends of the writes
// (written, rollBack, release); it knows no service, peer or instance.
// What a release leaves to the rest of the core (the actions it aborts,
// the node actions it does not run) it hands back.

// settled reports whether the fate of every state numbered is known.
func (p *persistence) settled() bool { return p.acked >= p.seq }

// barrier makes the answer of tk (to come in a Ready) fail if a roll back
// happens after from, the seq when its request began.
func (p *persistence) barrier(tk Ticket, from uint64) {
	if p.from == nil {
		p.from = map[Ticket]uint64{}
	}
	p.from[tk] = from
}

// written records that the state numbered seq is on disk: fresh is false
// when that was known already; recovered when writes failed until now.
func (p *persistence) written(seq uint64) (fresh, recovered bool) {
	if seq > p.handed {
		seq = p.handed // a state not handed out is not on disk
	}
	if seq <= p.acked {
		return false, false
	}
	p.acked = seq
	recovered = p.failing != nil
	p.failing = nil
	keep := p.states[:0]
	for _, s := range p.states {
		if s.seq == seq {
			p.onDisk = s.st
		}
		if s.seq > seq {
			keep = append(keep, s)
		}
	}
	p.states = keep
	return true, recovered
}

// groupDue reports whether changes waited for the write that ended: the
// next state is to be handed out now, as one.
func (p *persistence) groupDue() bool { return p.seq > p.handed && p.acked == p.handed }

// rollBack records a failed write: every state handed out or waiting was
// built on the undone one. It returns a copy of what the file holds, the
// durable state to go back to.
func (p *persistence) rollBack(werr error) State {
	p.failing = werr
	p.states = nil
	p.handed, p.acked = p.seq, p.seq
	p.undoneTo, p.undoneErr = p.seq, werr
	return p.onDisk.Clone()
}

// release hands over the answers and actions held for a state up to seq,
// to come in the next Ready: with err (a roll back) an answer that
// reported a success fails, and the actions and node actions are returned
// instead, for the core to abort.
func (p *persistence) release(seq uint64, err error) (undone []heldOut) {
	keep := p.held[:0]
	var due []heldOut
	for _, h := range p.held {
		if h.seq <= seq {
			due = append(due, h)
			continue
		}
		keep = append(keep, h)
	}
	p.held = keep
	for _, h := range due {
		switch {
		case h.answer != nil:
			a := *h.answer
			if err != nil && a.Err == nil && !planted.On(planted.AckFailedWrite) {
				a.Err, a.Result = err, ""
			}
			p.outAnswers = append(p.outAnswers, a)
		case err != nil:
			undone = append(undone, h)
		case h.node != nil:
			p.outNode = append(p.outNode, *h.node)
		default:
			p.outRuns = append(p.outRuns, *h.run)
		}
	}
	return undone
}

// hold numbers the Persist of r, and keeps back its answers and actions
// while a state handed out is not on disk. While a write is in flight,
// Persist is not handed out: the changes wait for its end (group commit,
// written and groupDue), numbered with the state that will hold them. A
// barrier whose request began before a roll back fails at once. With
// writeThrough (the driver's promise that it writes Persist first and
// never fails) a state counts as written as soon as it is handed out.
func (p *persistence) hold(r *Ready, writeThrough bool) {
	if r.Persist != nil {
		if p.seq == p.handed {
			p.seq++ // a new state: not yet numbered
		}
		r.PersistSeq = p.seq
		switch {
		case writeThrough:
			p.handed, p.acked, p.onDisk = p.seq, p.seq, r.Persist.Clone()
		case p.handed > p.acked:
			r.Persist = nil // handed out when the write in flight ends
		default:
			p.handed = p.seq
			p.states = append(p.states[:0], seqState{seq: p.seq, st: r.Persist.Clone()})
		}
	}
	for i := range r.Answers {
		a := &r.Answers[i]
		if from, ok := p.from[a.Ticket]; ok {
			delete(p.from, a.Ticket)
			if p.undoneTo > from && a.Err == nil {
				a.Err = failedf("state not saved: %v (a change made during this call was undone)", p.undoneErr)
			}
		}
	}
	if p.settled() {
		return
	}
	for i := range r.Answers {
		a := r.Answers[i]
		p.held = append(p.held, heldOut{seq: p.seq, answer: &a})
	}
	for i := range r.Run {
		a := r.Run[i]
		p.held = append(p.held, heldOut{seq: p.seq, run: &a})
	}
	for i := range r.NodeActions {
		a := r.NodeActions[i]
		p.held = append(p.held, heldOut{seq: p.seq, node: &a})
	}
	r.Ordered = r.Run
	r.Answers, r.Run, r.NodeActions = nil, nil, nil
}

// drain adds to r what the writes released since the last Ready.
func (p *persistence) drain(r *Ready) {
	r.Answers = append(r.Answers, p.outAnswers...)
	r.Run = append(r.Run, p.outRuns...)
	r.NodeActions = append(r.NodeActions, p.outNode...)
	p.outAnswers, p.outRuns, p.outNode = nil, nil, nil
}

// released reports whether writes released anything not handed over yet.
func (p *persistence) released() bool {
	return len(p.outAnswers) > 0 || len(p.outRuns) > 0 || len(p.outNode) > 0
}

// The core's side of persistence: its inputs (persistDone), its queries,
// and what a write's end asks of the rest of the core.

// PersistSeq returns the seq of the newest state (0: none yet), handed
// out or waiting for the write in flight. A request that begins now
// passes it to afterPersist when it ends.
func (c *Core) PersistSeq() uint64 { return c.ps.seq }

// Settled reports whether every state handed out is known to be written
// (or was rolled back): nothing the core holds is ahead of the disk. The
// driver publishes, and runs the decision pass, only then.
func (c *Core) Settled() bool { return c.ps.settled() }

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
	c.ps.barrier(tk, from)
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
		c.restore(c.ps.rollBack(err), err)
		c.release(c.ps.seq, failedf("state not saved: %v (the change was undone)", err), now)
		return
	}
	fresh, recovered := c.ps.written(seq)
	if !fresh {
		return
	}
	c.release(c.ps.acked, nil, now)
	if recovered {
		// what was adopted from the peers while writes failed was
		// undone: adopt it again now that the disk takes writes
		c.remergePeers(now)
	}
	if c.ps.groupDue() {
		c.persist() // the changes made during the write, in one state
	}
}

// release hands over what waited for a state up to seq; with err (a roll
// back) the actions held are aborted and the node actions not run.
func (c *Core) release(seq uint64, err error, now time.Time) {
	for _, h := range c.ps.release(seq, err) {
		if h.node != nil {
			c.emit(NodeActionEnd{Action: h.node.Kind, Err: "not run: " + err.Error()})
			continue
		}
		c.actionAborted(h.run.Service, h.run.Kind, err, now)
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
