package monitor

import (
	"strings"
	"testing"

	"haven/dataset"
)

// TestRolloutViewSaysWhyEachTurnWaits: the view of a rollout over n1..n6
// (2 at a time, a delay) names, for each node whose turn is not under way,
// the first thing that holds it, as the node's own rule checks them.
func TestRolloutViewSaysWhyEachTurnWaits(t *testing.T) {
	r := &dataset.Rollout{ID: "n1-7", Digest: "new", Nodes: []string{"n1", "n2", "n3", "n4", "n5", "n6"}, Parallelism: 2,
		DelayMs: 5000, MonitorMs: 3000, FailureAction: "pause", MaxFailureRatio: 0.34}
	inst := func(run, cfg string, m *dataset.RolloutMark) dataset.Instance {
		return dataset.Instance{Avail: dataset.StatusUp, RunDigest: run, ConfigDigest: cfg, Rollout: r, RolloutMark: m}
	}
	insts := map[string]dataset.Instance{
		"n1": inst("new", "new", mark("n1-7", dataset.TurnOK, "")),
		"n2": inst("new", "new", mark("n1-7", dataset.TurnMonitoring, "")),
		"n3": inst("old", "new", nil),
		"n4": inst("old", "old", nil),
		"n5": inst("old", "new", nil),
		"n6": inst("old", "new", nil),
	}
	live := func(n string) bool { return n != "n6" }
	frozen := func(string) bool { return false }
	v := RolloutView(insts, live, frozen)
	if v == nil || v.State != dataset.RolloutInProgress || v.OK != 1 || v.Pending != 5 || v.Batches != 3 {
		t.Fatalf("view: %+v", v)
	}
	want := map[string]string{
		"n1": "",
		"n2": "restarted, watched for update_monitor (3s)",
		"n3": "batch 1/3 first (n2)",
		"n4": "batch 1/3 first (n2)",
		"n6": "node down",
	}
	for _, tu := range v.Turns {
		if w, ok := want[tu.Node]; ok && (w == "" && tu.Why != "" || !strings.HasPrefix(tu.Why, w)) {
			t.Errorf("%s: why %q, want %q", tu.Node, tu.Why, w)
		}
	}
	// batch 1 ends: n3's delay runs, n4's config has not arrived, n5 is
	// frozen (batch 3 waits for batch 2 first)
	insts["n2"] = inst("new", "new", mark("n1-7", dataset.TurnOK, ""))
	insts["n3"] = inst("old", "new", mark("n1-7", dataset.TurnDelay, ""))
	v = RolloutView(insts, live, frozen)
	if w := "update_delay (5s) after the batch before"; !strings.HasPrefix(v.Turns[2].Why, w) {
		t.Errorf("n3: %q, want %q", v.Turns[2].Why, w)
	}
	if w := "config new not received yet (it holds old)"; v.Turns[3].Why != w {
		t.Errorf("n4: %q, want %q", v.Turns[3].Why, w)
	}
	if w := "batch 2/3 first (n3 n4)"; v.Turns[4].Why != w {
		t.Errorf("n5: %q, want %q", v.Turns[4].Why, w)
	}
	insts["n4"] = inst("old", "new", nil)
	frozen = func(n string) bool { return n == "n4" }
	v = RolloutView(insts, live, frozen)
	if w := "node frozen: its turn waits for a thaw"; v.Turns[3].Why != w {
		t.Errorf("n4 frozen: %q, want %q", v.Turns[3].Why, w)
	}
	i4 := insts["n4"]
	i4.Frozen = true
	insts["n4"] = i4
	if v = RolloutView(insts, live, func(string) bool { return false }); v.Turns[3].Why != "instance frozen: its turn waits for a thaw" {
		t.Errorf("n4's instance frozen: %q", v.Turns[3].Why)
	}
	if c := CountConfigs(insts, live, "new"); c.Current != 2 || c.Old != 3 {
		t.Errorf("configs: %+v, want 2 current, 3 old (n6 down not counted)", c)
	}
	// too many failures: paused, every waiting turn says so
	insts["n3"] = inst("new", "new", mark("n1-7", dataset.TurnFailed, "restart failed: boom"))
	insts["n4"] = inst("new", "new", mark("n1-7", dataset.TurnFailed, "down within update_monitor"))
	insts["n2"] = inst("new", "new", mark("n1-7", dataset.TurnFailed, "restart failed: boom"))
	live = func(string) bool { return true }
	v = RolloutView(insts, live, frozen)
	if v.State != dataset.RolloutPaused || !v.Ended() || !strings.HasPrefix(v.Turns[4].Why, "rollout paused: n2: restart failed") {
		t.Errorf("paused: %+v", v)
	}
	if RolloutView(map[string]dataset.Instance{"n1": {}}, live, frozen) != nil {
		t.Errorf("no record: want no view")
	}
}
