package node

import (
	"errors"
	"strings"
	"testing"

	"haven/dataset"
	"haven/node/instsm"
)

// written takes a Ready and reports its state written, as a driver with a
// synchronous disk does; it returns the Ready with what the write released.
func written(c *Core) Ready {
	rd := c.Ready()
	if rd.Persist != nil {
		c.persistDone(rd.PersistSeq, nil, t0)
		rel := c.Ready()
		rd.Answers = append(rd.Answers, rel.Answers...)
		rd.Run = append(rd.Run, rel.Run...)
	}
	return rd
}

// asyncCore is newCore for a driver that writes off its loop: every
// state waits for persistDone.
func asyncCore(name string) *Core {
	c := New(Config{Name: name}, State{})
	c.install("web")
	written(c)
	return c
}

// The core, not the driver, holds an answer and an action until
// the state they rest on is on disk, and releases them on persistDone.
func TestAnswersAndActionsWaitForTheWrite(t *testing.T) {
	c := asyncCore("n1")
	c.install("web")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.checkNow("web")
	c.checkDone(c.Ready().Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	written(c)

	tk := c.adminLocal(LocalRequest{Service: "web", Action: "freeze", Now: t0})
	rd := c.Ready()
	if rd.Persist == nil || rd.PersistSeq == 0 || len(rd.Answers) != 0 || c.Settled() {
		t.Fatalf("a freeze not written yet: persist %v seq %d answers %+v settled %v", rd.Persist != nil, rd.PersistSeq, rd.Answers, c.Settled())
	}
	seq := rd.PersistSeq
	// a start --local ordered meanwhile waits for the freeze's write too
	c.setFrozen("web", false, "test")
	if _, err := c.runAction("web", "start", "test", t0); err != nil {
		t.Fatal(err)
	}
	rd = c.Ready()
	if len(rd.Run) != 0 || len(rd.Ordered) != 1 {
		t.Fatalf("an action before its state is on disk: run %+v ordered %+v", rd.Run, rd.Ordered)
	}
	seq2 := rd.PersistSeq
	// the first write does not release what rests on the second
	c.persistDone(seq, nil, t0)
	rd = c.Ready()
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil || len(rd.Run) != 0 {
		t.Fatalf("after the first write: answers %+v run %+v", rd.Answers, rd.Run)
	}
	c.persistDone(seq2, nil, t0)
	rd = c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "start" || !c.Settled() {
		t.Fatalf("after the second write: run %+v settled %v", rd.Run, c.Settled())
	}
}

// A failed write rolls back to what the file holds (the last
// state written), fails the answers and aborts the actions that waited
// for it, fails the barrier of a request that began before, keeps the
// Lamport clock going forward.
func TestFailedWriteRollsBackInTheCore(t *testing.T) {
	c := asyncCore("n1")
	c.install("web")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.checkNow("web")
	c.checkDone(c.Ready().Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	written(c)
	from := c.PersistSeq()

	c.setFrozen("web", true, "test")
	tk := c.adminTarget(TargetRequest{Service: "web", Action: "stop", Wait: true, Now: t0})
	rd := c.Ready()
	tgt := c.Target("web")
	if rd.Persist == nil || tgt.ID == "" {
		t.Fatalf("no target set: %+v", tgt)
	}
	if _, err := c.runAction("web", "start", "test", t0); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	if c.Busy("web") != "start" {
		t.Fatal("the start is not in flight")
	}
	werr := errors.New("write R/var/state.json: read-only file system")
	c.persistDone(rd.PersistSeq, werr, t0)
	if c.Frozen("web") || c.Target("web").ID != "" {
		t.Fatalf("not rolled back: frozen %v target %+v", c.Frozen("web"), c.Target("web"))
	}
	if c.State().Lamport < tgt.Version.Counter {
		t.Fatalf("the Lamport counter went back to %d (a version %d was handed out)", c.State().Lamport, tgt.Version.Counter)
	}
	rd = c.Ready()
	got := map[Ticket]Answer{}
	for _, a := range rd.Answers {
		got[a.Ticket] = a
	}
	if a, ok := got[tk]; !ok || a.Err == nil || !strings.Contains(a.Err.Error(), "read-only") {
		t.Fatalf("the --wait caller of the undone target: %+v", rd.Answers)
	}
	if len(rd.Run) != 0 || c.Busy("web") != "" {
		t.Fatalf("the action resting on the undone state: run %+v busy %q", rd.Run, c.Busy("web"))
	}
	if c.PersistFailing() == nil || !c.Settled() {
		t.Fatalf("failing %v settled %v", c.PersistFailing(), c.Settled())
	}
	// a request that began before the roll back does not report a success
	b := c.afterPersist(from)
	rd = c.Ready()
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != b || rd.Answers[0].Err == nil {
		t.Fatalf("a barrier from before the roll back: %+v", rd.Answers)
	}
	// one that began after waits for nothing
	b = c.afterPersist(c.PersistSeq())
	if rd = c.Ready(); len(rd.Answers) != 1 || rd.Answers[0].Ticket != b || rd.Answers[0].Err != nil {
		t.Fatalf("a barrier from after the roll back: %+v", rd.Answers)
	}
	// the retry hands the state out again; its write ends the failures
	c.retryPersist()
	rd = c.Ready()
	if rd.Persist == nil {
		t.Fatal("no retry of the write while writes fail")
	}
	c.persistDone(rd.PersistSeq, nil, t0)
	if c.PersistFailing() != nil {
		t.Fatal("still failing after a good write")
	}
}
