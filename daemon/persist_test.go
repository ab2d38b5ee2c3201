package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
