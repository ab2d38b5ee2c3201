// Package persist is the acknowledgement of the core's state writes: the
// numbering of the states handed out, the answers and actions held until
// the state they rest on is on disk, group commit, and the roll back of a
// failed write. It knows no service, peer or instance: package node feeds
// it each Ready it hands out (Hold), the barriers (Barrier) and the ends
// of the writes (Written, RollBack, Release), and acts on what it hands
// back.
package persist

import (
	"haven/internal/planted"
	"haven/node/vocab"
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

// Book is the core's bookkeeping of state writes.
type Book struct {
	// seq numbers the newest state: handed out, or, above handed, the
	// changes waiting for the write in flight to end.
	seq    uint64
	handed uint64 // of the last Persist handed out
	acked  uint64 // the fate of every state up to it is known
	// onDisk is what the file holds: the state of the last Persist
	// written (Durable for what the driver wrote itself).
	onDisk vocab.State
	// states is the copy of the state handed out and not acked (one at
	// most: the write in flight).
	states []seqState
	// held are the answers and actions waiting for a write.
	held []Held
	// undoneTo is the last seq handed out when the last roll back
	// happened (undoneErr its cause): a request that began before it
	// may have lost its change (afterPersist).
	undoneTo  uint64
	undoneErr error
	// failing is the error of the last write, nil once one succeeds.
	failing error
	// from is the seq a barrier (afterPersist) began at, by ticket.
	from map[vocab.Ticket]uint64
	// outAnswers and outRuns are released by a write: the next Ready
	// hands them over without holding them again.
	outAnswers []vocab.Answer
	outRuns    []vocab.Action
	outNode    []vocab.NodeAction
}

type seqState struct {
	seq uint64
	st  vocab.State
}

// Held is an answer or an action of a Ready whose state (seq) is not on
// disk yet: one of Answer, Run and Node is set.
type Held struct {
	seq    uint64
	Answer *vocab.Answer
	Run    *vocab.Action
	Node   *vocab.NodeAction
}

// The persistence sub-machine: its inputs are the Readies it numbers and
// holds (Hold), the barriers (Barrier), and the ends of the writes
// (Written, RollBack, Release); it knows no service, peer or instance.
// What a release leaves to the rest of the core (the actions it aborts,
// the node actions it does not run) it hands back.

// Settled reports whether the fate of every state numbered is known.
func (p *Book) Settled() bool { return p.acked >= p.seq }

// Barrier makes the answer of tk (to come in a Ready) fail if a roll back
// happens after from, the seq when its request began.
func (p *Book) Barrier(tk vocab.Ticket, from uint64) {
	if p.from == nil {
		p.from = map[vocab.Ticket]uint64{}
	}
	p.from[tk] = from
}

// Written records that the state numbered seq is on disk: fresh is false
// when that was known already; recovered when writes failed until now.
func (p *Book) Written(seq uint64) (fresh, recovered bool) {
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

// GroupDue reports whether changes waited for the write that ended: the
// next state is to be handed out now, as one.
func (p *Book) GroupDue() bool { return p.seq > p.handed && p.acked == p.handed }

// RollBack records a failed write: every state handed out or waiting was
// built on the undone one. It returns a copy of what the file holds, the
// durable state to go back to.
func (p *Book) RollBack(werr error) vocab.State {
	p.failing = werr
	p.states = nil
	p.handed, p.acked = p.seq, p.seq
	p.undoneTo, p.undoneErr = p.seq, werr
	return p.onDisk.Clone()
}

// Release hands over the answers and actions held for a state up to seq,
// to come in the next Ready: with err (a roll back) an answer that
// reported a success fails, and the actions and node actions are returned
// instead, for the core to abort.
func (p *Book) Release(seq uint64, err error) (undone []Held) {
	keep := p.held[:0]
	var due []Held
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
		case h.Answer != nil:
			a := *h.Answer
			if err != nil && a.Err == nil && !planted.On(planted.AckFailedWrite) {
				a.Err, a.Result = err, ""
			}
			p.outAnswers = append(p.outAnswers, a)
		case err != nil:
			undone = append(undone, h)
		case h.Node != nil:
			p.outNode = append(p.outNode, *h.Node)
		default:
			p.outRuns = append(p.outRuns, *h.Run)
		}
	}
	return undone
}

// Hold numbers the Persist of r, and keeps back its answers and actions
// while a state handed out is not on disk. While a write is in flight,
// Persist is not handed out: the changes wait for its end (group commit,
// Written and GroupDue), numbered with the state that will hold them. A
// barrier whose request began before a roll back fails at once. With
// writeThrough (the driver's promise that it writes Persist first and
// never fails) a state counts as written as soon as it is handed out.
func (p *Book) Hold(r *vocab.Ready, writeThrough bool) {
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
				a.Err = vocab.Failedf("state not saved: %v (a change made during this call was undone)", p.undoneErr)
			}
		}
	}
	if p.Settled() {
		return
	}
	for i := range r.Answers {
		a := r.Answers[i]
		p.held = append(p.held, Held{seq: p.seq, Answer: &a})
	}
	for i := range r.Run {
		a := r.Run[i]
		p.held = append(p.held, Held{seq: p.seq, Run: &a})
	}
	for i := range r.NodeActions {
		a := r.NodeActions[i]
		p.held = append(p.held, Held{seq: p.seq, Node: &a})
	}
	r.Ordered = r.Run
	r.Answers, r.Run, r.NodeActions = nil, nil, nil
}

// Drain adds to r what the writes released since the last Ready.
func (p *Book) Drain(r *vocab.Ready) {
	r.Answers = append(r.Answers, p.outAnswers...)
	r.Run = append(r.Run, p.outRuns...)
	r.NodeActions = append(r.NodeActions, p.outNode...)
	p.outAnswers, p.outRuns, p.outNode = nil, nil, nil
}

// Released reports whether writes released anything not handed over yet.
func (p *Book) Released() bool {
	return len(p.outAnswers) > 0 || len(p.outRuns) > 0 || len(p.outNode) > 0
}

// Seq returns the seq of the newest state (0: none yet), handed out or
// waiting for the write in flight.
func (p *Book) Seq() uint64 { return p.seq }

// Acked returns the seq up to which the fate of every state is known.
func (p *Book) Acked() uint64 { return p.acked }

// Failing returns the error of the last write, nil once one succeeded.
func (p *Book) Failing() error { return p.failing }

// Durable records that st is what the file holds: the driver wrote it
// itself, or read it back.
func (p *Book) Durable(st vocab.State) { p.onDisk = st }

// Copies returns how many copies of the state the book keeps for the
// writes in flight (one at most).
func (p *Book) Copies() int { return len(p.states) }
