package daemon

import (
	"bytes"
	"fmt"
	"time"

	"go.uber.org/zap"

	"haven/node"
)

// persistLoop is the loop's side of the persister. The node core numbers
// every state it hands out (node.Ready.PersistSeq), holds the answers and
// actions that rest on it, and hears the outcome of each write
// (the input node.Persisted): it releases them, or rolls back and fails them
// (node/persist.go). It hands out one state at a time (group commit: the
// changes made during a write come in one state when it ends), so the
// state is encoded once per write, not once per change. The loop keeps
// the IO: the bytes last handed over (a state equal to them is not
// written again) and the log of failures.
type persistLoop struct {
	last    []byte // the last state handed over
	handed  uint64 // the core's seq of the last state handed over
	written uint64 // seq of the last state written
	encodes int    // states encoded (a full encoding each)

	err       error     // the last write failed (nil once a write succeeds)
	failSince time.Time // first failure of the current run of failures
	failures  int       // failed writes since failSince
	loggedAt  time.Time // last log line about the failures
}

// failLogPeriod rate-limits the log lines of a persistent write failure.
const failLogPeriod = time.Minute

// SaveState hands the state numbered seq to the persister (written off
// the loop; its report comes back with onPersisted). A state equal to the
// one on disk is not written again, unless writes fail (each is a retry).
func (e effects) SaveState(seq uint64, _ *node.State) bool {
	d := e.d
	d.ps.encodes++
	b, err := encodeDurable(*d.dur)
	if err != nil {
		d.log.Error("encode state", zap.Error(err))
		d.drv.Input(node.Persisted{Seq: seq, Err: fmt.Errorf("encode state: %w", err), Now: d.clk.Now()})
		return false
	}
	if d.core.PersistFailing() == nil && d.ps.written >= d.ps.handed && bytes.Equal(b, d.ps.last) {
		d.drv.Input(node.Persisted{Seq: seq, Now: d.clk.Now()})
		return false
	}
	d.ps.last = b
	d.ps.handed = seq
	d.persist.submit(seq, b)
	return false
}

// onPersisted is the persister's report (from its goroutine): the loop
// handles it in order with the API calls posted after it.
func (d *Daemon) onPersisted(seq uint64, err error, good []byte) {
	d.post(func() { d.persisted(seq, err, good) })
}

// persisted gives the core the outcome of a write.
func (d *Daemon) persisted(seq uint64, err error, good []byte) {
	if err != nil {
		d.rollback(seq, err, good)
		return
	}
	d.ps.written = seq
	if d.ps.err != nil {
		d.log.Info("state saved again", zap.String("path", d.p.State()), zap.Int("failed_writes", d.ps.failures),
			zap.Duration("after", d.clk.Now().Sub(d.ps.failSince)))
		d.ps.err, d.ps.failures = nil, 0
	}
	d.drv.Persisted(seq, nil)
}

// rollback: the core undoes every change not written (the durable state
// goes back to the one the file holds, the answers waiting on the changes
// fail, the actions resting on them are not run, the --wait callers whose
// target was undone get the error), and the dataset is marked changed so
// that the peers see the truth.
//
// What the instance monitors observed (local expect, start failed) is
// recorded again by the retries (retryState) once the disk takes writes.
func (d *Daemon) rollback(seq uint64, werr error, good []byte) {
	d.drv.Input(node.Persisted{Seq: seq, Err: werr, Now: d.clk.Now()})
	d.ps.last = good
	d.ps.written = d.ps.handed
	d.ordered = nil // every action held was aborted
	d.persist.resume()
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

// settled reports whether every state handed over has been written (or
// rolled back): nothing the loop holds is ahead of the disk.
func (d *Daemon) settled() bool { return d.core.Settled() }

// flushState runs once the loop has ended: the changes that waited for the
// write in flight (the core's group commit) are handed to the persister,
// which writes them after it when it closes. Nobody was answered about
// them; they are kept as the daemon kept every state handed out before.
func (d *Daemon) flushState() {
	seq := d.core.PersistSeq()
	if seq <= d.ps.handed {
		return
	}
	b, err := encodeDurable(*d.dur)
	if err != nil || bytes.Equal(b, d.ps.last) {
		return
	}
	d.ps.last, d.ps.handed = b, seq
	d.persist.submit(seq, b)
}
