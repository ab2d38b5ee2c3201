package monitor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// setCapacity gives node a published capacity of cpu cores (milli) and
// mem bytes.
func (w *world) setCapacity(node string, cpu, mem int64) {
	w.setNode(node, func(v *placement.NodeView) { v.Data.Capacity = &dataset.Capacity{CPUMilli: cpu, MemBytes: mem} })
}

// Two failover services whose requests fit only one at a time on n1, both
// preferring n1: in the Step where n1 claims the first (ready), the second
// sees that claim hold the capacity and is no candidate there; it goes to
// n2. n1 is never overbooked, whatever the order of the rounds.
func TestCapacityTwoClaimsOneStep(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.setCapacity("n1", 2000, 4<<30)
	w.setCapacity("n2", 2000, 4<<30)
	for _, name := range []string{"a", "b"} {
		w.addSvc(&config.ServiceConfig{Name: name, Nodes: []string{"n1", "n2"}, RequestCPU: 1500})
	}
	d := w.run("n1")
	if d["a"].Monitor.State != dataset.Ready {
		t.Fatalf("a on n1: %+v", d["a"])
	}
	if d["b"].Monitor.State == dataset.Ready {
		t.Fatalf("b claimed n1 too in the same Step: %+v", d["b"])
	}
	e, _ := Explain(w.snap("n1"), "b", false)
	if e.Monitor == nil || !strings.Contains(e.Monitor.Blocked, "capacity: cpu 1.5 of 2 requested, needs 1.5") {
		t.Fatalf("b blocked on n1: %+v", e.Monitor)
	}
	w.rounds(6, time.Second)
	if got := w.upOn("a"); !slices.Equal(got, []string{"n1"}) {
		w.dumpLog()
		t.Fatalf("a up on %v", got)
	}
	if got := w.upOn("b"); !slices.Equal(got, []string{"n2"}) {
		w.dumpLog()
		t.Fatalf("b up on %v", got)
	}
	// a third one fits nowhere: explain says which resource, where
	w.addSvc(&config.ServiceConfig{Name: "c", Nodes: []string{"n1", "n2"}, RequestCPU: 1000, RequestMem: 1 << 30})
	w.rounds(4, time.Second)
	if got := w.upOn("c"); len(got) != 0 {
		t.Fatalf("c up on %v: overbooked", got)
	}
	e, _ = Explain(w.snap("n2"), "c", false)
	want := []string{"n1: cpu 1.5 of 2 requested, needs 1", "n2: cpu 1.5 of 2 requested, needs 1"}
	if e.Leader != "" || e.Requests != "cpu 1, mem 1GiB" || !slices.Equal(e.CapacityShort, want) {
		t.Fatalf("c: leader %q requests %q short %q, want %q", e.Leader, e.Requests, e.CapacityShort, want)
	}
	// a stops on n1 (the admin): its capacity is free, c starts there
	w.setInst("n1", "a", func(i *dataset.Instance) { i.Avail, i.Frozen = dataset.StatusDown, true })
	w.rounds(4, time.Second)
	if got := w.upOn("c"); !slices.Equal(got, []string{"n1"}) {
		w.dumpLog()
		t.Fatalf("after a stopped, c up on %v, want n1", got)
	}
}

// A running instance counts once: a node whose capacity is all taken by
// the instance itself stays its candidate, and an instance on a node
// found over capacity (capacity lowered) is not stopped for it.
func TestCapacityRunningCountsOnce(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.setCapacity("n1", 1000, 0)
	w.setCapacity("n2", 1000, 0)
	w.addSvc(&config.ServiceConfig{Name: "a", Nodes: []string{"n1", "n2"}, RequestCPU: 1000})
	w.rounds(4, time.Second)
	if got := w.upOn("a"); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("a up on %v", got)
	}
	e, _ := Explain(w.snap("n1"), "a", false)
	if e.Leader != "n1" || len(e.CapacityShort) != 0 {
		t.Fatalf("a: leader %q short %v", e.Leader, e.CapacityShort)
	}
	w.setCapacity("n1", 500, 0)
	w.rounds(4, time.Second)
	if got := w.upOn("a"); !slices.Equal(got, []string{"n1"}) {
		w.dumpLog()
		t.Fatalf("over capacity: a up on %v, want it left on n1", got)
	}
}

// A failover service whose preferred node is full goes to the next one.
func TestCapacityFailoverPreferredFull(t *testing.T) {
	w := newWorld(t, "n1", "n2", "n3")
	for _, n := range w.cluster {
		w.setCapacity(n, 4000, 8<<30)
	}
	w.addSvc(&config.ServiceConfig{Name: "hog", Nodes: []string{"n1"}, RequestMem: 7 << 30})
	w.rounds(2, time.Second)
	w.addSvc(&config.ServiceConfig{Name: "db", Nodes: []string{"n1", "n2", "n3"}, RequestMem: 2 << 30})
	w.rounds(4, time.Second)
	if got := w.upOn("db"); !slices.Equal(got, []string{"n2"}) {
		w.dumpLog()
		t.Fatalf("db up on %v, want n2 (n1 full)", got)
	}
}

// A flex service of target 3 whose requests fit on two nodes only: two
// up, explain says cpu is short on the third; once that capacity is freed
// the third starts.
func TestCapacityFlexTarget(t *testing.T) {
	w := flexWorld(t, 3, "n1", "n2", "n3")
	for _, n := range w.cluster {
		w.setCapacity(n, 2000, 4<<30)
	}
	w.svcs["app"].RequestCPU = 1500
	w.addSvc(&config.ServiceConfig{Name: "batch", Nodes: []string{"n3"}, RequestCPU: 1000})
	w.setInst("n3", "batch", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	w.rounds(5, time.Second)
	wantUp(t, w, "n3 half taken", "n1", "n2")
	e, _ := Explain(w.snap("n1"), "app", false)
	if e.Flex == nil || !strings.Contains(e.Flex.Short, "short of capacity: n3: cpu 1 of 2 requested, needs 1.5") {
		t.Fatalf("flex short: %+v", e.Flex)
	}
	if !slices.Contains(e.Flex.Nodes, "n3: no candidate: capacity: cpu 1 of 2 requested, needs 1.5") {
		t.Fatalf("flex nodes: %q", e.Flex.Nodes)
	}
	w.setInst("n3", "batch", func(i *dataset.Instance) { i.Avail, i.Frozen = dataset.StatusDown, true })
	w.rounds(4, time.Second)
	wantUp(t, w, "batch stopped", "n1", "n2", "n3")
}

// An admin start of a service that no node has the capacity for fails
// fast with the cause (the --wait callers are answered), and the target
// stays: the service starts once capacity is freed.
func TestCapacityStartTargetFails(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.setCapacity("n1", 1000, 0)
	w.setCapacity("n2", 1000, 0)
	w.addSvc(&config.ServiceConfig{Name: "a", Nodes: []string{"n1"}, RequestCPU: 1000})
	w.addSvc(&config.ServiceConfig{Name: "b", Nodes: []string{"n2"}, RequestCPU: 1000})
	w.rounds(2, time.Second)
	w.addSvc(&config.ServiceConfig{Name: "c", Nodes: []string{"n1", "n2"}, Orchestrate: OrchestrateNo, RequestCPU: 1000})
	w.setTarget("c", target(dataset.ExpectStarted, ""))
	w.rounds(2, time.Second)
	d := w.step("n1")["c"]
	want := "no node has the capacity for it: n1: cpu 1 of 1 requested, needs 1; n2: cpu 1 of 1 requested, needs 1"
	if d.TargetFailed != want {
		w.dumpLog()
		t.Fatalf("target failed %q, want %q", d.TargetFailed, want)
	}
	w.setInst("n2", "b", func(i *dataset.Instance) { i.Avail, i.Frozen = dataset.StatusDown, true })
	w.rounds(3, time.Second)
	if got := w.upOn("c"); !slices.Equal(got, []string{"n2"}) {
		w.dumpLog()
		t.Fatalf("c up on %v, want n2 once b stopped", got)
	}
}
