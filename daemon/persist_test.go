package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/dataset"
	"haven/driver"
	"haven/internal/clock"
	"haven/internal/paths"
	"haven/node"
)

type result struct {
	seq  uint64
	err  error
	good []byte
}

func collect(p **persister, path string, good []byte) chan result {
	ch := make(chan result, 100)
	*p = newPersister(path, good, func(seq uint64, err error, good []byte) { ch <- result{seq, err, good} })
	return ch
}

func next(t *testing.T, ch chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no persist result within 10s")
	}
	return result{}
}

// The persister writes the newest state and reports each write in order;
// close flushes what is pending.
func TestPersisterWritesNewest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var p *persister
	ch := collect(&p, path, nil)
	for i := uint64(1); i <= 50; i++ {
		p.submit(i, []byte{byte('0' + i%10)})
	}
	last := uint64(0)
	for last < 50 {
		r := next(t, ch)
		if r.err != nil || r.seq <= last {
			t.Fatalf("result %+v after seq %d", r, last)
		}
		last = r.seq
	}
	if b, _ := os.ReadFile(path); string(b) != "0" {
		t.Fatalf("the file holds %q, want state 50 (\"0\")", b)
	}
	p.submit(51, []byte("last"))
	if seq, err := p.close(); seq != 51 || err != nil {
		t.Fatalf("close: written %d, %v; want 51, nil", seq, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "last" {
		t.Fatalf("close did not flush the pending state: file holds %q", b)
	}
}

// A failed write reports the cause and the last state written, and the
// persister refuses every state until resumed (the loop rolls back first).
func TestPersisterFailureBlocksUntilResumed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "var", "state.json")
	var p *persister
	ch := collect(&p, path, []byte("good"))
	os.WriteFile(filepath.Join(dir, "var"), []byte("a file where the directory should be"), 0o600)
	p.submit(1, []byte("one"))
	r := next(t, ch)
	if r.err == nil || r.seq != 1 || string(r.good) != "good" || !strings.HasPrefix(r.err.Error(), "write "+path+": ") {
		t.Fatalf("failed write reported as %+v (%v)", r, r.err)
	}
	p.submit(2, []byte("two: built on the state that failed"))
	os.Remove(filepath.Join(dir, "var"))
	p.resume()
	p.submit(3, []byte("three"))
	// results come in order: the next is 3, so 2 was never written
	if r := next(t, ch); r.err != nil || r.seq != 3 || string(r.good) != "three" {
		t.Fatalf("after resume: %+v (a state submitted before the roll back must be dropped)", r)
	}
	if seq, err := p.close(); seq != 3 || err != nil {
		t.Fatalf("close: %d, %v", seq, err)
	}
}

// loopDaemon is the loop's side of a daemon, driven by hand: the test
// plays the persister's reports (persisted) on the loop.
func loopDaemon(t *testing.T) *Daemon {
	dir := t.TempDir()
	d := &Daemon{
		p:        paths.Paths{Var: dir},
		node:     &config.NodeConfig{Name: "n1"},
		clk:      clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		log:      zap.NewNop(),
		bus:      newBus(),
		services: map[string]*instance{},
	}
	d.core = node.New(node.Config{Name: "n1"}, durable{Lamport: 3, Services: map[string]durableService{"web": {ConfigVersion: dataset.Version{Counter: 1, Origin: "n1"}}}})
	d.drv = driver.New(d.core, effects{d}, d.clk)
	d.dur = d.core.State()
	good, err := encodeDurable(*d.dur)
	if err != nil {
		t.Fatal(err)
	}
	// the reports are played by hand: the real ones are dropped
	d.persist = newPersister(filepath.Join(dir, "state.json"), good, func(uint64, error, []byte) {})
	t.Cleanup(func() { d.persist.close() })
	return d
}

// A failed write rolls the durable state back to the last one
// written, fails the answers and the --wait callers that relied on it, and
// keeps the Lamport counter going forward. The node core does it
// (Persisted), the daemon hands it the persister's report.
func TestRollbackAfterFailedWrite(t *testing.T) {
	d := loopDaemon(t)
	good, _ := encodeDurable(*d.dur)
	d.setFrozen("web", true, "test")
	var waitErr error
	waited := false
	tk := d.drv.Input(node.TargetRequest{Service: "web", Action: "stop", Wait: true})
	d.drv.Await(tk, func(a node.Answer) { waited, waitErr = true, a.Err })
	tgt := d.dur.Services["web"].Target
	var saved error = errors.New("not answered")
	d.drv.Await(d.drv.Input(node.Barrier{From: 0}), func(a node.Answer) { saved = a.Err })
	if saved == nil || saved.Error() != "not answered" || d.settled() {
		t.Fatal("a change handed to the persister counts as saved")
	}
	gen := d.drv.Gen()

	werr := errors.New("write R/var/state.json: read-only file system")
	d.persisted(d.ps.handed, werr, good)

	if d.dur.Services["web"].Frozen || d.dur.Services["web"].Target.ID != "" {
		t.Fatalf("not rolled back: %+v", d.dur.Services["web"])
	}
	if d.dur.Lamport < tgt.Version.Counter {
		t.Fatalf("the Lamport counter went back to %d (a version %d was handed out)", d.dur.Lamport, tgt.Version.Counter)
	}
	if saved == nil || !strings.Contains(saved.Error(), "read-only file system") {
		t.Fatalf("the answer waiting on the undone change got %v", saved)
	}
	if !waited || waitErr == nil || d.core.Waiters() != 0 {
		t.Fatalf("the --wait caller of the undone target: answered %v with %v, %d left", waited, waitErr, d.core.Waiters())
	}
	if d.drv.Gen() == gen || !d.settled() || d.ps.err == nil {
		t.Fatalf("after the roll back: gen %d (was %d), settled %v, failing %v", d.drv.Gen(), gen, d.settled(), d.ps.err)
	}
	var since error
	d.drv.Await(d.drv.Input(node.Barrier{From: 0}), func(a node.Answer) { since = a.Err })
	if since == nil {
		t.Fatal("an answer whose work began before the roll back reports success")
	}
	since = errors.New("not answered")
	d.drv.Await(d.drv.Input(node.Barrier{From: d.core.PersistSeq()}), func(a node.Answer) { since = a.Err })
	if since != nil {
		t.Fatalf("an answer that began after the roll back: %v", since)
	}

	// the next change is written: the node recovers
	d.setFrozen("web", true, "again")
	saved = errors.New("not answered")
	d.drv.Await(d.drv.Input(node.Barrier{From: d.core.PersistSeq()}), func(a node.Answer) { saved = a.Err })
	d.persisted(d.ps.handed, nil, nil)
	if saved != nil || d.ps.err != nil || !d.dur.Services["web"].Frozen {
		t.Fatalf("after a good write: %v, failing %v, frozen %v", saved, d.ps.err, d.dur.Services["web"].Frozen)
	}
}

// A state equal to the last one handed over is not written again (a
// heartbeat that changes nothing costs no fsync); it is on disk when the
// one handed over is.
func TestSaveStateSkipsUnchanged(t *testing.T) {
	d := loopDaemon(t)
	// an input that hands out the state without changing it: the same
	// incarnation recorded again
	same := node.IncarnationRecorded{Incarnation: d.dur.Incarnation}
	d.drv.Step(same)
	handed := d.ps.handed
	d.drv.Step(same)
	d.drv.Step(same)
	if d.ps.handed != handed || d.settled() {
		t.Fatalf("an unchanged state was handed over again: seq %d -> %d (settled %v)", handed, d.ps.handed, d.settled())
	}
	d.persisted(handed, nil, nil)
	if !d.settled() {
		t.Fatal("the unchanged states are not on disk once the one handed over is")
	}
}
