package monitor

import (
	"testing"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// LeaderWithout forecasts where a service running on a node would go if
// that node were declared down, without touching the snapshot: the next
// node of the order, or the one after when that one cannot take it.
func TestLeaderWithout(t *testing.T) {
	w := newWorld(t, "n1", "n2", "n3")
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}})
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	if got := LeaderWithout(w.snap("n2"), "web", "n1"); got != "n2" {
		t.Fatalf("web up on n1, n1 lost: leader %q, want n2", got)
	}
	if v := w.nodes["n1"]; v.Status != dataset.NodeUp {
		t.Fatalf("the snapshot's view of n1 changed: %s", v.Status)
	}
	if got := LeaderWithout(w.snap("n2"), "web", "n3"); got != "n1" {
		t.Fatalf("n3 lost: leader %q, want n1 (it runs web)", got)
	}
	w.setInst("n2", "web", func(i *dataset.Instance) { i.Frozen = true })
	if got := LeaderWithout(w.snap("n3"), "web", "n1"); got != "n3" {
		t.Fatalf("web frozen on n2, n1 lost: leader %q, want n3", got)
	}
	w.setNode("n3", func(v *placement.NodeView) { v.Data.Frozen = true })
	if got := LeaderWithout(w.snap("n3"), "web", "n1"); got != "" {
		t.Fatalf("no node to take web when n1 is lost: leader %q, want none", got)
	}
	if got := LeaderWithout(w.snap("n3"), "nope", "n1"); got != "" {
		t.Fatalf("a service not configured: leader %q", got)
	}
}
