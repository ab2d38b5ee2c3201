package monitor

import (
	"testing"

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
