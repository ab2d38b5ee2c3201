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
