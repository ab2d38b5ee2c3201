package render

import (
	"strings"
	"testing"

	"haven/dataset"
)

// TestOldConfigShown: an instance up on a config other than the one its
// node holds says "(old config)" in svcmon and in the status tree; one
// on the installed config, or whose digests are not known, says nothing.
func TestOldConfigShown(t *testing.T) {
	old := inst(dataset.StatusUp, dataset.Idle, "started", true)
	old.RunDigest, old.ConfigDigest = "aaaa", "bbbb"
	cur := inst(dataset.StatusUp, dataset.Idle, "started", false)
	cur.RunDigest, cur.ConfigDigest = "bbbb", "bbbb"
	unknown := inst(dataset.StatusUp, dataset.Idle, "started", false)
	unknown.ConfigDigest = "bbbb"
	st := &dataset.ClusterStatus{
		Cluster:  dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:    threeNodes(),
		Services: map[string]dataset.ServiceStatus{"web": svc(dataset.StatusUp, n123, map[string]dataset.Instance{"n1": old, "n2": cur, "n3": unknown})},
		Local:    "n1",
	}
	out := Svcmon(st, SvcmonOptions{})
	if strings.Count(out, "(old config)") != 1 {
		t.Fatalf("svcmon: want one (old config), n1's:\n%s", out)
	}
	if l := instanceLine("n1", old); !strings.Contains(l.notes, "old config") {
		t.Errorf("tree n1: %q", l.notes)
	}
	for _, i := range []dataset.Instance{cur, unknown} {
		if l := instanceLine("n2", i); strings.Contains(l.notes, "old config") {
			t.Errorf("tree: %q", l.notes)
		}
	}
}

// TestRolloutShown: a rollout in progress is a short note in svcmon's row
// and a line below the grid saying where it stands; in the status tree,
// the long note. A rollout done says nothing; a paused one is said until
// a newer one replaces it.
func TestRolloutShown(t *testing.T) {
	s := svc(dataset.StatusUp, n123, map[string]dataset.Instance{
		"n1": inst(dataset.StatusUp, dataset.Idle, "started", false),
		"n2": inst(dataset.StatusUp, dataset.Restarting, "started", false),
		"n3": inst(dataset.StatusUp, dataset.Idle, "started", false),
	})
	s.Rollout = &dataset.RolloutStatus{ID: "n1-12", Digest: "8d04e7a1c2f3aa", Parallelism: 1, Batches: 3, State: dataset.RolloutInProgress,
		Summary: "batch 2/3: n2 pending; ok n1", OK: 1, Pending: 2,
		Turns: []dataset.RolloutTurnStatus{{Node: "n1", Batch: 1, State: "ok"}, {Node: "n2", Batch: 2, State: "restarting"}, {Node: "n3", Batch: 3}}}
	st := &dataset.ClusterStatus{
		Cluster:  dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:    threeNodes(),
		Services: map[string]dataset.ServiceStatus{"web": s},
		Local:    "n1",
	}
	out := Svcmon(st, SvcmonOptions{})
	if !strings.Contains(out, "rolling out 1/3") || !strings.Contains(out, "web: rollout n1-12 of config 8d04e7a1c2f3: batch 2/3: n2 pending; ok n1") {
		t.Fatalf("svcmon of a rollout in progress:\n%s", out)
	}
	if n := strings.Join(serviceNotes(s, true), ", "); !strings.Contains(n, "rollout n1-12 in progress: batch 2/3: n2 pending; ok n1") {
		t.Errorf("tree: %q", n)
	}
	s.Rollout.State, s.Rollout.Summary = dataset.RolloutPaused, "paused: n2: restart failed: exit status 1"
	st.Services["web"] = s
	if out := Svcmon(st, SvcmonOptions{}); !strings.Contains(out, "rollout paused") || !strings.Contains(out, "web: rollout n1-12 of config 8d04e7a1c2f3: paused: n2: restart failed") {
		t.Errorf("svcmon of a paused rollout:\n%s", out)
	}
	s.Rollout.State, s.Rollout.Summary = dataset.RolloutDone, "done"
	st.Services["web"] = s
	if out := Svcmon(st, SvcmonOptions{}); strings.Contains(out, "rollout") || strings.Contains(out, "rolling") {
		t.Errorf("svcmon of a rollout done:\n%s", out)
	}
}
