package daemon

import (
	"bytes"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// persistLoop is the loop's side of the persister: what it handed over,
// what it knows is on disk, and who waits for it.
//
// A change of the durable state takes effect outside the loop only once it
// is on disk: API answers wait for it (whenSaved), the dataset is not
// published and the decision core does not run while a state is pending
// (settled). When a write fails, the loop rolls the durable state back to
// the last one written (rollback), fails the answers that waited on it and
// retries on every tick until the disk takes it again.
type persistLoop struct {
	seq   uint64 // of the last state handed to the persister
	acked uint64 // the loop knows the fate of every state up to this one
	last  []byte // the last state handed over (a state equal to it is not written again)
	acks  []stateAck
	// undoneTo is the last state handed over when the last roll back
	// happened (undoneErr its cause): a call that began before it and
	// changed the state after may have lost its change.
	undoneTo  uint64
	undoneErr error

	err       error     // the last write failed (nil once a write succeeds)
	failSince time.Time // first failure of the current run of failures
	failures  int       // failed writes since failSince
	loggedAt  time.Time // last log line about the failures
}

type stateAck struct {
	seq uint64
	ch  chan error  // an API answer waits on it, or
	fn  func(error) // the loop runs it
}

// failLogPeriod rate-limits the log lines of a persistent write failure.
const failLogPeriod = time.Minute

// saveState hands the durable state to the persister (written off the
// loop). A state equal to the last one handed over is not written again.
func (d *Daemon) saveState() { d.submitState(false) }

func (d *Daemon) submitState(force bool) {
	b, err := encodeDurable(*d.dur)
	if err != nil {
		d.log.Error("encode state", zap.Error(err))
		return
	}
	if !force && bytes.Equal(b, d.ps.last) {
		return
	}
	d.ps.last = b
	d.ps.seq++
	d.persist.submit(d.ps.seq, b)
}

// settled reports whether every state handed over has been written (or
// rolled back): nothing the loop holds is ahead of the disk.
func (d *Daemon) settled() bool { return d.ps.acked >= d.ps.seq }

// whenSaved returns nil when nothing is pending, or a channel that gets
// nil once what the loop holds now is on disk, or the error that undid it.
// Called on the loop, by API answers that report a success.
func (d *Daemon) whenSaved() <-chan error {
	if d.settled() {
		return nil
	}
	ch := make(chan error, 1)
	d.ps.acks = append(d.ps.acks, stateAck{seq: d.ps.seq, ch: ch})
	return ch
}

// afterSaved runs fn on the loop once what the loop holds now is on disk
// (fn(nil), at once if nothing is pending) or was undone (fn(err)): an
// action that follows a durable change (drain after its freeze) starts
// only once the change cannot be undone.
func (d *Daemon) afterSaved(fn func(error)) {
	if d.settled() {
		fn(nil)
		return
	}
	d.ps.acks = append(d.ps.acks, stateAck{seq: d.ps.seq, fn: fn})
}

// whenSavedSince is whenSaved for an answer whose work began when state
// number from was the last handed over (an action that runs for a while):
// if a state handed over since was undone, the answer fails at once.
func (d *Daemon) whenSavedSince(from uint64) <-chan error {
	if d.ps.undoneTo > from {
		ch := make(chan error, 1)
		ch <- failed("state not saved: %v (a change made during this call was undone)", d.ps.undoneErr)
		return ch
	}
	return d.whenSaved()
}

// waitSaved blocks on a channel of whenSaved (nil: nothing to wait for).
// The loop, or Run once the loop has ended, answers every one.
func waitSaved(ch <-chan error) error {
	if ch == nil {
		return nil
	}
	return <-ch
}

// onPersisted is the persister's report (from its goroutine): the loop
// handles it in order with the API calls posted after it.
func (d *Daemon) onPersisted(seq uint64, err error, good []byte) {
	d.post(func() { d.persisted(seq, err, good) })
}

func (d *Daemon) persisted(seq uint64, err error, good []byte) {
	if err != nil {
		d.rollback(err, good)
		return
	}
	if seq > d.ps.acked {
		d.ps.acked = seq
	}
	d.answerAcks(seq, nil)
	if d.ps.err != nil {
		d.log.Info("state saved again", zap.String("path", d.p.State()), zap.Int("failed_writes", d.ps.failures),
			zap.Duration("after", d.clk.Now().Sub(d.ps.failSince)))
		d.ps.err, d.ps.failures = nil, 0
	}
}

func (d *Daemon) answerAcks(upTo uint64, err error) {
	var due []stateAck
	keep := d.ps.acks[:0]
	for _, a := range d.ps.acks {
		if a.seq <= upTo {
			due = append(due, a)
			continue
		}
		keep = append(keep, a)
	}
	d.ps.acks = keep
	for _, a := range due { // fn may add acks
		a.answer(err)
	}
}

func (a stateAck) answer(err error) {
	if a.fn != nil {
		a.fn(err)
		return
	}
	a.ch <- err
}

// rollback undoes every change not written: the durable state goes back to
// the one the file holds (good), the answers waiting on the changes fail,
// the --wait callers whose target was undone get the error, and the
// dataset is marked changed so that the peers see the truth.
//
// What the instance monitors observed (local expect, start failed) is
// kept: it describes what ran, not what an admin asked. The retries
// (retryState) record it again once the disk takes writes.
func (d *Daemon) rollback(werr error, good []byte) {
	err := failed("state not saved: %v (the change was undone)", werr)
	restored := durable{Services: map[string]durableService{}}
	if good != nil {
		var derr error
		if restored, derr = decodeState(good); derr != nil {
			// cannot happen: good was read strictly or written by us
			d.log.Error("roll back state: the last state written does not decode", zap.Error(derr))
			restored = d.dur.Clone()
		}
	}
	d.core.Restore(restored, werr)
	d.ps.last = good
	d.ps.undoneTo, d.ps.undoneErr = d.ps.seq, werr
	d.ps.acked = d.ps.seq // every state handed over was built on the undone one
	d.answerAcks(d.ps.seq, err)
	d.persist.resume()

	// the --wait callers whose target was undone are answered
	d.applyReady()

	now := d.clk.Now()
	if d.ps.err == nil {
		d.ps.failSince, d.ps.failures = now, 0
		d.log.Error("state not saved: change undone; writes are retried", zap.String("path", d.p.State()), zap.Error(werr))
		d.ps.loggedAt = now
	} else if now.Sub(d.ps.loggedAt) >= failLogPeriod {
		d.log.Warn("state still not saved", zap.String("path", d.p.State()), zap.Error(werr),
			zap.Int("failed_writes", d.ps.failures+1), zap.Duration("since", now.Sub(d.ps.failSince)))
		d.ps.loggedAt = now
	}
	d.ps.err = werr
	d.ps.failures++
	d.changed()
}

// retryState runs on every tick while writes fail: it records again what
// the instance monitors observed, and writes the state even if unchanged,
// so that the node recovers as soon as the disk does.
func (d *Daemon) retryState() {
	if d.ps.err == nil || !d.settled() {
		return
	}
	d.core.PersistMonitors()
	d.applyReady()
	if d.settled() {
		d.submitState(true)
	}
}

// mayStep reports whether the decision core may run now: not while a
// state is pending (its decisions would rest on what may be undone), and
// at most once a tick while writes fail (each pass could retry a write).
func (d *Daemon) mayStep() bool {
	if !d.settled() {
		return false
	}
	return d.ps.err == nil || d.clk.Now().Sub(d.lastStep) >= tickPeriod
}

// settleAcks answers, once the loop has ended and the persister has
// flushed, the calls still waiting: written is the last state on disk.
func (d *Daemon) settleAcks(written uint64, werr error) {
	acks := d.ps.acks
	d.ps.acks = nil
	for _, a := range acks {
		if a.fn != nil {
			// the loop has ended: what fn would start cannot run
			a.fn(failed("the daemon stopped before the change was saved"))
			continue
		}
		if a.seq <= written {
			a.ch <- nil
			continue
		}
		if werr == nil {
			werr = fmt.Errorf("the daemon stopped first")
		}
		a.ch <- failed("state not saved: %v", werr)
	}
}
