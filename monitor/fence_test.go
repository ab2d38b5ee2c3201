package monitor

import (
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// A lost peer of the service that has not certainly stopped it holds the
// start on the survivor that would take it over: state "wait fence", no
// action, the reason in explain; once the gate clears, the usual ready
// window.
func TestFenceGateHoldsTheTakeover(t *testing.T) {
	w := newWorld(t, "n1", "n2", "n3")
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}})
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	s := w.snap("n2")
	s.Fencing = map[string]string{"n1": "waiting for n1's self-stop deadline at 00:00:10.000"}
	d := Step(s)[0]
	if d.Monitor.State != dataset.WaitFence || d.Action != ActionNone || !strings.Contains(d.Reason, "wait fence: n1: waiting for n1's self-stop deadline") {
		t.Fatalf("got %s %q %q, want wait fence without action", d.Monitor.State, d.Action, d.Reason)
	}
	ex, _ := Explain(s, "web", false)
	if !strings.Contains(ex.Monitor.Blocked, "wait fence: n1") {
		t.Fatalf("explain blocked %q, want the gate", ex.Monitor.Blocked)
	}
	// n3 is not the leader: idle, not wait fence
	if d := Step(w.snap("n3"))[0]; d.Monitor.State == dataset.WaitFence {
		t.Fatal("a node that would not start the service waits for the fence")
	}
	// a split during the ready window: ready is cancelled into wait fence
	w.setInst("n2", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Ready })
	s = w.snap("n2")
	s.Fencing = map[string]string{"n1": "fencing n1"}
	if d := Step(s)[0]; d.Monitor.State != dataset.WaitFence || d.Action != ActionNone {
		t.Fatalf("ready during a split: got %s %q, want wait fence", d.Monitor.State, d.Action)
	}
	// cleared: ready again
	w.setInst("n2", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.WaitFence })
	if d := Step(w.snap("n2"))[0]; d.Monitor.State != dataset.Ready {
		t.Fatalf("gate cleared: got %s, want ready", d.Monitor.State)
	}
	// an admin start waits too
	w.setTarget("web", dataset.Target{Expect: dataset.ExpectStarted, ID: "x"})
	w.setInst("n2", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Idle })
	s = w.snap("n2")
	s.Fencing = map[string]string{"n1": "fencing n1"}
	if d := Step(s)[0]; d.Monitor.State != dataset.WaitFence || d.Action != ActionNone {
		t.Fatalf("admin start during a split: got %s %q, want wait fence", d.Monitor.State, d.Action)
	}
}
