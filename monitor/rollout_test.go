package monitor

import (
	"testing"
	"time"

	"haven/config"

	"haven/dataset"
)

func mark(id, state, cause string) *dataset.RolloutMark {
	return &dataset.RolloutMark{ID: id, State: state, Cause: cause}
}

// TestRolloutBatchesInOrder: with parallelism 2 over n1..n5, only the
// first batch goes; the second goes once both of the first ended ok; a
// mark of an older rollout counts as none.
func TestRolloutBatchesInOrder(t *testing.T) {
	r := &dataset.Rollout{ID: "r1", Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, Parallelism: 2, FailureAction: "pause"}
	marks := map[string]*dataset.RolloutMark{"n3": mark("r0", dataset.TurnOK, "")}
	for n, want := range map[string]bool{"n1": true, "n2": true, "n3": false, "n5": false, "n9": false} {
		if got := Turn(r, marks, n); got.Go != want {
			t.Errorf("%s: Go %v (%s), want %v", n, got.Go, got.Why, want)
		}
	}
	marks["n1"] = mark("r1", dataset.TurnOK, "")
	marks["n2"] = mark("r1", dataset.TurnMonitoring, "")
	if got := Turn(r, marks, "n3"); got.Go || got.Why != "batch 1/3 first (n2)" {
		t.Errorf("n3 while n2 monitors: %+v", got)
	}
	if got := Turn(r, marks, "n1"); got.Go || got.Why != "" {
		t.Errorf("n1 took its turn already: %+v", got)
	}
	marks["n2"] = mark("r1", dataset.TurnOK, "")
	if got := Turn(r, marks, "n3"); !got.Go {
		t.Errorf("n3 after batch 1: %+v", got)
	}
	if got := Turn(r, marks, "n5"); got.Go {
		t.Errorf("n5 before batch 2 ended: %+v", got)
	}
	marks["n3"], marks["n4"], marks["n5"] = mark("r1", dataset.TurnOK, ""), mark("r1", dataset.TurnOK, ""), mark("r1", dataset.TurnOK, "")
	if p := RolloutState(r, marks); !p.Succeeded() || p.String() != "done" {
		t.Errorf("all ok: %+v %q", p, p)
	}
}

// TestRolloutFailureRatio: a failed turn within the ratio goes on; one
// beyond it pauses every later turn (pause), or goes on (continue).
func TestRolloutFailureRatio(t *testing.T) {
	r := &dataset.Rollout{ID: "r1", Nodes: []string{"n1", "n2", "n3", "n4"}, Parallelism: 1, MaxFailureRatio: 0.25, FailureAction: "pause"}
	marks := map[string]*dataset.RolloutMark{"n1": mark("r1", dataset.TurnFailed, "restart failed: boom")}
	if got := Turn(r, marks, "n2"); !got.Go {
		t.Errorf("1 of 4 failed, ratio 0.25: n2 %+v", got)
	}
	marks["n2"] = mark("r1", dataset.TurnFailed, "down within update_monitor")
	got := Turn(r, marks, "n3")
	if got.Go || got.Why != "rollout paused: n1: restart failed: boom; n2: down within update_monitor" {
		t.Errorf("2 of 4 failed: n3 %+v", got)
	}
	if p := RolloutState(r, marks); !p.Paused || p.Done {
		t.Errorf("paused: %+v", p)
	}
	r.FailureAction = "continue"
	if got := Turn(r, marks, "n3"); !got.Go {
		t.Errorf("continue: n3 %+v", got)
	}
	marks["n3"], marks["n4"] = mark("r1", dataset.TurnOK, ""), mark("r1", dataset.TurnOK, "")
	if p := RolloutState(r, marks); !p.Done || p.Succeeded() {
		t.Errorf("continue, ended with failures: %+v", p)
	}
	// ratio 0: the first failure pauses
	r.FailureAction, r.MaxFailureRatio = "pause", 0
	if p := RolloutState(r, map[string]*dataset.RolloutMark{"n1": mark("r1", dataset.TurnFailed, "x")}); !p.Paused {
		t.Errorf("ratio 0, one failure: %+v", p)
	}
}

// TestRolloutRollBack: with update_failure_action rollback, the failure
// that crosses the ratio stops every later turn and asks for a rollback
// (not a pause, not done); RollbackBy picks the rollout's maker if alive,
// else the first of its nodes alive; a rollback record says so.
func TestRolloutRollBack(t *testing.T) {
	r := &dataset.Rollout{ID: "n9-4", Version: dataset.Version{Counter: 4, Origin: "n9"}, Nodes: []string{"n1", "n2", "n3"}, Parallelism: 1, FailureAction: "rollback"}
	marks := map[string]*dataset.RolloutMark{"n1": mark("n9-4", dataset.TurnOK, ""), "n2": mark("n9-4", dataset.TurnFailed, "restart failed: x")}
	p := RolloutState(r, marks)
	if !p.RollBack || p.Paused || p.Done || !p.Halted() || p.String() != "failed, rolling back: n2: restart failed: x; ok n1" {
		t.Fatalf("after n2 failed: %+v %q", p, p)
	}
	if got := Turn(r, marks, "n3"); got.Go || got.Why != "rollout failed, rolled back: n2: restart failed: x" {
		t.Fatalf("n3 after the failure: %+v", got)
	}
	r.MaxFailureRatio = 0.5 // 1 failure of 3 is within it
	if p := RolloutState(r, marks); p.RollBack || !Turn(r, marks, "n3").Go {
		t.Fatalf("within the ratio: %+v", p)
	}
	alive := map[string]bool{"n9": true, "n1": true, "n2": true}
	by := func() string { return RollbackBy(r, func(n string) bool { return alive[n] }) }
	if got := by(); got != "n9" {
		t.Fatalf("RollbackBy with its maker alive: %q", got)
	}
	alive["n9"], alive["n1"] = false, false
	if got := by(); got != "n2" {
		t.Fatalf("RollbackBy without n9 and n1: %q", got)
	}
	rb := &dataset.Rollout{ID: "n9-6", Nodes: []string{"n1"}, FailureAction: "pause", Rollback: true, Undoes: "n9-4"}
	if p := RolloutState(rb, map[string]*dataset.RolloutMark{"n1": mark("n9-6", dataset.TurnOK, "")}); p.String() != "rollback of n9-4: done" {
		t.Fatalf("a rollback done: %q", p)
	}
	// a rollout paused instead of rolled back says why
	pr := *r
	pr.MaxFailureRatio, pr.FailureAction, pr.Cause = 0, "pause", "not rolled back: the config changed since"
	if p := RolloutState(&pr, marks); !p.Paused || p.String() != "paused: n2: restart failed: x (not rolled back: the config changed since); ok n1" {
		t.Fatalf("paused instead: %q", p)
	}
}

// startFirstWorld: flex app on n1..n5, target 2, max 4, a start-first
// rollout of n1 n2 two at a time, n1 and n2 up and in it.
func startFirstWorld(t *testing.T) (*world, *dataset.Rollout) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	w := newWorld(t, nodes...)
	w.addSvc(&config.ServiceConfig{Name: "app", Nodes: nodes, Topology: config.TopologyFlex, FlexTarget: 2, FlexMax: 4})
	r := &dataset.Rollout{ID: "n1-1", Nodes: []string{"n1", "n2"}, Parallelism: 2, Order: dataset.OrderStartFirst, FailureAction: "pause"}
	for _, n := range nodes {
		w.setInst(n, "app", func(i *dataset.Instance) { i.Rollout = r })
	}
	for _, n := range []string{"n1", "n2"} {
		w.setInst(n, "app", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	}
	return w, r
}

// A start-first turn's node stops its old instance once flex_target
// instances are up elsewhere, never counting its batch mates whose turn
// is under way: n2 may leave its slot too, unseen yet by n1 (the
// unlucky sequence: each counts the other, both stop, one instance
// left). Instances leaving theirs never count; spares count as coming.
func TestStartFirstReplacements(t *testing.T) {
	w, r := startFirstWorld(t)
	w.setInst("n1", "app", func(i *dataset.Instance) { i.RolloutMark = mark(r.ID, dataset.TurnReplacing, "") })
	// n2 announces nothing yet (its mark travels), n3 runs a replacement
	w.setInst("n3", "app", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	if up, coming := Replacements(w.snap("n1"), "app", r); up != 1 || coming != 3 {
		t.Fatalf("n1 with its batch mate n2 up: up %d coming %d, want 1 (n3) and 3 (n3, spares n4 n5)", up, coming)
	}
	// n2's turn ended (its instance replaced): n4 up counts now
	w.setInst("n2", "app", func(i *dataset.Instance) {
		i.Avail, i.RolloutMark = dataset.StatusDown, mark(r.ID, dataset.TurnOK, "")
	})
	w.setInst("n4", "app", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	if up, _ := Replacements(w.snap("n1"), "app", r); up != 2 {
		t.Fatalf("n1 once n2's turn ended, n3 n4 up: up %d, want 2", up)
	}
	// a replacement on another config replaces nothing, a spare that
	// would start on another config is no spare (it missed the edit)
	w.setInst("n4", "app", func(i *dataset.Instance) { i.RunDigest = "old" })
	w.setInst("n5", "app", func(i *dataset.Instance) { i.ConfigDigest = "old" })
	if up, coming := Replacements(w.snap("n1"), "app", r); up != 1 || coming != 2 {
		t.Fatalf("n1 with n4 up on another config, n5 holding another: up %d coming %d, want 1 and 2 (n3, the spare n2)", up, coming)
	}
	w.setInst("n4", "app", func(i *dataset.Instance) { i.RunDigest = "" })
	// n3 leaving its slot (another rollout's node would be): not counted
	w.setInst("n3", "app", func(i *dataset.Instance) { i.RolloutMark = mark(r.ID, dataset.TurnReplacing, "") })
	if up, _ := Replacements(w.snap("n1"), "app", r); up != 1 {
		t.Fatalf("n1 with n3 leaving: up %d, want 1 (n4)", up)
	}
}

// A claim starts only when the instances running, those leaving their
// slot (start-first turns), the other claims and itself fit in flex_max,
// whatever flex_target leaves free: n1 and n2 leave theirs, so flex_target
// 2 has both slots free, but n3 and n4 claiming together would make 4
// instances for a flex_max of 3.
func TestStartFirstClaimsFitFlexMax(t *testing.T) {
	w, r := startFirstWorld(t)
	w.svcs["app"].FlexMax = 3
	for _, n := range []string{"n1", "n2"} {
		w.setInst(n, "app", func(i *dataset.Instance) { i.RolloutMark = mark(r.ID, dataset.TurnReplacing, "") })
	}
	for _, n := range []string{"n3", "n4"} {
		w.setInst(n, "app", func(i *dataset.Instance) { i.Monitor.State = dataset.Ready; i.Monitor.StateSince = t0 })
	}
	w.now = t0.Add(10 * time.Second)
	for _, n := range []string{"n3", "n4"} {
		if d := w.step(n)["app"]; d.Action == ActionStart {
			t.Fatalf("%s starts with n1 n2 leaving and the other claiming (4 instances for a flex max of 3): %s", n, d.Reason)
		}
	}
	// n4 backs off: n3 fits (n1 n2 leaving, n3: 3)
	w.setInst("n4", "app", func(i *dataset.Instance) { i.Monitor.State = dataset.Idle })
	if d := w.step("n3")["app"]; d.Action != ActionStart {
		t.Fatalf("n3 alone claiming: %+v, want a start", d)
	}
}

// TestRolloutSkipDown: with update_down_nodes skip, a node down counts
// skipped (no failure: the ratio 0 does not pause) and the next batch
// goes; the rollout is not done until it took its turn; back, it waits
// for the batch under way before its catch-up. With wait (the default),
// or with not more than half of the nodes alive, nothing is skipped.
func TestRolloutSkipDown(t *testing.T) {
	r := &dataset.Rollout{ID: "r1", Nodes: []string{"n1", "n2", "n3", "n4"}, Parallelism: 1, FailureAction: "pause", DownNodes: "skip"}
	down := map[string]bool{"n2": true}
	live := func(n string) bool { return !down[n] }
	view := func() map[string]*dataset.RolloutMark {
		m := map[string]*dataset.RolloutMark{"n1": mark("r1", dataset.TurnOK, "")}
		SkipDown(r, m, live)
		return m
	}
	if got := Turn(r, view(), "n3"); !got.Go {
		t.Fatalf("n3 with n2 down, skip: %+v", got)
	}
	if p := RolloutState(r, view()); p.Paused || p.Done || len(p.Skipped) != 1 || p.String() != "batch 3/4: n3 pending; skipped (node down) n2; ok n1" {
		t.Fatalf("progress with n2 skipped: %+v %q", p, p)
	}
	m := view()
	m["n3"], m["n4"] = mark("r1", dataset.TurnOK, ""), mark("r1", dataset.TurnOK, "")
	if p := RolloutState(r, m); p.Done || p.String() != "every batch ended; skipped (node down): n2: their turn when they return; ok n1 n3 n4" {
		t.Fatalf("every batch ended but n2's: %+v %q", p, p)
	}
	// n2 back while n4 restarts: it waits for n4's turn to end
	m = map[string]*dataset.RolloutMark{"n1": mark("r1", dataset.TurnOK, ""), "n3": mark("r1", dataset.TurnOK, ""), "n4": mark("r1", dataset.TurnMonitoring, "")}
	if got := Turn(r, m, "n2"); got.Go || got.Why != "catching up after n4's turn (monitoring)" {
		t.Fatalf("n2 back while n4 monitors: %+v", got)
	}
	m["n4"] = mark("r1", dataset.TurnOK, "")
	if got := Turn(r, m, "n2"); !got.Go {
		t.Fatalf("n2 back once n4 ended: %+v", got)
	}
	m["n2"] = mark("r1", dataset.TurnOK, "")
	if p := RolloutState(r, m); !p.Succeeded() {
		t.Fatalf("n2 caught up: %q", p)
	}
	// not more than half alive: nothing skipped
	down = map[string]bool{"n2": true, "n3": true}
	if got := Turn(r, view(), "n4"); got.Go {
		t.Fatalf("n4 with half of the nodes down: %+v", got)
	}
	// wait: nothing skipped
	down, r.DownNodes = map[string]bool{"n2": true}, ""
	if got := Turn(r, view(), "n3"); got.Go {
		t.Fatalf("n3 with n2 down, wait: %+v", got)
	}
}
