package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"haven/dataset"
	"haven/node/instsm"
)

// A node receiving N configs in one full copy installs
// them one by one (each reported with configDone changes the state). A
// driver whose state write takes as long as 25 config writes must not be
// handed a state per config (each encoded in full: O(N) encodings of O(N)
// bytes), and the core must not keep a clone of each of them until its
// write ends: a group commit hands out one state at a time, the newest
// once the write in flight ends, and holds at most the one being written
// (besides what the file holds, to roll back). Nothing is answered before
// the state that holds it is on disk.
func TestManyConfigsGroupCommit(t *testing.T) {
	const n, slow = 500, 25
	c, d := cfgCore("n1", "n2")
	c.cfg.WriteThrough = false // the driver writes off its loop
	es := map[string]dataset.ConfigEntry{}
	for i := 0; i < n; i++ {
		es[fmt.Sprintf("s%04d", i)] = entry(ver(uint64(i+1), "n2"), fmt.Sprintf("svc %d", i), map[string]uint64{"n2": uint64(i + 1)})
	}
	announce(c, es, t0)

	var (
		ops      []ConfigOp // handed out, not written yet
		writing  []uint64   // states handed out, not written yet
		pending  *State     // the newest of them
		disk     State      // what the file holds
		handed   int
		maxWrite int
		maxClone int
		freeze   Ticket
		frozen   bool // the freeze answered
	)
	take := func() {
		for c.HasReady() {
			rd := c.Ready()
			if rd.Persist != nil {
				handed++
				writing = append(writing, rd.PersistSeq)
				st := rd.Persist.Clone()
				pending = &st
			}
			ops = append(ops, rd.Configs...)
			for _, a := range rd.Answers {
				if a.Ticket == freeze && freeze != 0 {
					if a.Err != nil || !disk.Services["s0000"].Frozen {
						t.Fatalf("the freeze answered (%v) before a state holding it is on disk", a.Err)
					}
					frozen = true
				}
			}
			maxWrite = max(maxWrite, len(writing))
			maxClone = max(maxClone, c.ps.Copies())
		}
	}
	// the write in flight ends: the driver reports the newest state it
	// holds (as the daemon's persister, which writes only the newest)
	flush := func() {
		if len(writing) == 0 {
			return
		}
		seq := writing[len(writing)-1]
		writing, disk = nil, *pending
		c.persistDone(seq, nil, t0)
	}
	take()
	for done := 0; len(ops) > 0 || len(writing) > 0 || c.HasReady(); {
		if len(ops) > 0 {
			op := ops[0]
			ops = ops[1:]
			d.svcs[op.Service] = op.Config
			c.addInstance(op.Service, instsm.Spec{Local: true, Runnable: true}, t0)
			c.configDone(op.Service, nil, t0)
			done++
			if done == n/2 {
				freeze = c.adminLocal(LocalRequest{Service: "s0000", Action: "freeze", Now: t0})
			}
		}
		if done%slow == 0 || len(ops) == 0 {
			flush()
		}
		take()
	}
	if maxWrite > 1 || maxClone > 1 {
		t.Errorf("states handed out and not written at once: up to %d, clones held: up to %d; want 1 and 1", maxWrite, maxClone)
	}
	if handed > n/slow+4 {
		t.Errorf("%d states handed out for %d configs whose writes end every %d configs: want at most one per write (%d)", handed, n, slow, n/slow+4)
	}
	if !frozen || !c.Settled() {
		t.Fatalf("freeze answered %v, settled %v", frozen, c.Settled())
	}
	for name, e := range es {
		if disk.Services[name].ConfigVersion != e.Version {
			t.Fatalf("%s: on disk at %+v, want %+v", name, disk.Services[name].ConfigVersion, e.Version)
		}
	}
}

// A change made during a write waits for its end; when that write fails,
// the change is undone with it (it was built on the undone state), its
// answer fails with the roll back's message, and it is never handed out.
func TestGroupCommitFailureUndoesTheWaitingChanges(t *testing.T) {
	c := asyncCore("n1")
	c.install("api")
	written(c)
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.addInstance("api", instsm.Spec{Local: true, Runnable: true}, t0)
	t1 := c.adminLocal(LocalRequest{Service: "web", Action: "freeze", Now: t0})
	rd := c.Ready()
	if rd.Persist == nil {
		t.Fatal("the freeze is not handed out")
	}
	first := rd.PersistSeq
	t2 := c.adminLocal(LocalRequest{Service: "api", Action: "freeze", Now: t0})
	rd = c.Ready()
	if rd.Persist != nil || rd.PersistSeq <= first || len(rd.Answers) != 0 {
		t.Fatalf("a change during a write: persist %v seq %d (first %d) answers %+v", rd.Persist != nil, rd.PersistSeq, first, rd.Answers)
	}
	c.persistDone(first, errors.New("write R/var/state.json: no space left on device"), t0)
	rd = c.Ready()
	if rd.Persist != nil {
		t.Fatal("the undone change was handed out")
	}
	got := map[Ticket]Answer{}
	for _, a := range rd.Answers {
		got[a.Ticket] = a
	}
	for _, tk := range []Ticket{t1, t2} {
		if a := got[tk]; a.Err == nil || !strings.Contains(a.Err.Error(), "state not saved: write R/var/state.json: no space left on device (the change was undone)") {
			t.Fatalf("answer %d: %+v", tk, a)
		}
	}
	if c.Frozen("web") || c.Frozen("api") || !c.Settled() {
		t.Fatalf("not undone: web %v api %v settled %v", c.Frozen("web"), c.Frozen("api"), c.Settled())
	}
}
