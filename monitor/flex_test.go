package monitor

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// flexWorld is n1..n4 with the flex service app (target on n1..n4).
func flexWorld(t *testing.T, target int, nodes ...string) *world {
	w := newWorld(t, nodes...)
	w.addSvc(&config.ServiceConfig{Name: "app", Nodes: nodes, Topology: config.TopologyFlex,
		FlexTarget: target, FlexMin: 1, FlexMax: target})
	return w
}

func wantUp(t *testing.T, w *world, what string, want ...string) {
	t.Helper()
	if got := w.upOn("app"); !slices.Equal(got, want) {
		w.dumpLog()
		t.Fatalf("%s: up on %v, want %v", what, got, want)
	}
}

// The best-ranked candidates start, one window each, until the target is
// up; the others stay idle.
func TestFlexScaleUp(t *testing.T) {
	w := flexWorld(t, 2, "n1", "n2", "n3")
	w.rounds(4, time.Second)
	wantUp(t, w, "target 2", "n1", "n2")
	if st := w.inst("n3", "app").Monitor.State; st != dataset.Idle {
		t.Fatalf("n3: %s, want idle", st)
	}
	d := w.step("n3")["app"]
	if d.Changed {
		t.Fatalf("n3 at the target: %+v", d)
	}
	w.svcs["app"].FlexTarget, w.svcs["app"].FlexMax = 3, 3
	w.rounds(4, time.Second)
	wantUp(t, w, "target 3", "n1", "n2", "n3")
}

// A frozen node is no candidate: the next one takes its slot.
func TestFlexFrozenNodeSkipped(t *testing.T) {
	w := flexWorld(t, 2, "n1", "n2", "n3")
	w.setNode("n2", func(v *placement.NodeView) { v.Data.Frozen = true })
	w.rounds(4, time.Second)
	wantUp(t, w, "n2 frozen", "n1", "n3")
}

// A lost node's instance is replaced on the next candidate, but only once
// the takeover gate says the lost node certainly stopped it.
func TestFlexNodeLossWaitsForTheGate(t *testing.T) {
	w := flexWorld(t, 2, "n1", "n2", "n3")
	w.rounds(4, time.Second)
	wantUp(t, w, "start", "n1", "n2")
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	fencing := map[string]string{"n1": "waiting for n1's self-stop deadline"}
	s := w.snap("n3")
	s.Fencing = fencing
	d := decisionOf(Step(s), "app")
	wantState(t, "n3 while n1 is not certainly stopped", d, dataset.WaitFence, ActionNone)
	if !strings.Contains(d.Reason, "wait fence: n1") {
		t.Fatalf("reason %q", d.Reason)
	}
	// the gate opens: n3 claims and starts after its window
	w.rounds(4, time.Second)
	if w.inst("n3", "app").Avail != dataset.StatusUp {
		w.dumpLog()
		t.Fatalf("after the gate: n3 is %s, want up (n1 is down: its instance does not count)", w.inst("n3", "app").Avail)
	}
}

func decisionOf(ds []Decision, svc string) Decision {
	for _, d := range ds {
		if d.Service == svc {
			return d
		}
	}
	return Decision{}
}

// Scale down: the instances beyond the target stop, the least preferred
// first, an instance not up (warn) before an up one; a frozen one is never
// stopped.
func TestFlexScaleDown(t *testing.T) {
	w := flexWorld(t, 3, "n1", "n2", "n3", "n4")
	w.rounds(4, time.Second)
	wantUp(t, w, "target 3", "n1", "n2", "n3")
	w.svcs["app"].FlexTarget = 1
	w.round(time.Second)
	wantUp(t, w, "target 1", "n1")

	// target 2 of n1..n3 up with n1 warn and n3 frozen: n1 stops first
	w = flexWorld(t, 3, "n1", "n2", "n3", "n4")
	w.rounds(4, time.Second)
	w.setInst("n1", "app", func(i *dataset.Instance) { i.Avail = dataset.StatusWarn })
	w.setInst("n3", "app", func(i *dataset.Instance) { i.Frozen = true })
	w.svcs["app"].FlexTarget = 2
	d := decisionOf(Step(w.snap("n1")), "app")
	wantState(t, "n1 warn, beyond the target", d, dataset.Stopping, ActionStop)
	for _, n := range []string{"n2", "n3"} {
		if d := decisionOf(Step(w.snap(n)), "app"); d.Action != ActionNone {
			t.Fatalf("%s: %s (%s), want nothing", n, d.Action, d.Reason)
		}
	}
	// target 1: n3 is frozen, so n2 and n1 stop
	w.svcs["app"].FlexTarget = 1
	if d := decisionOf(Step(w.snap("n2")), "app"); d.Action != ActionStop {
		t.Fatalf("n2 at target 1 beside frozen n3: %s (%s), want stop", d.Action, d.Reason)
	}
}

// Two claims for the last slot, the worse one made without seeing the
// better one (lagging data): the better waits at its window's end, the
// worse backs off once it sees the better one, then the better starts.
// Never a third instance.
func TestFlexLastSlotContest(t *testing.T) {
	w := flexWorld(t, 2, "n1", "n2", "n3")
	w.setInst("n1", "app", func(i *dataset.Instance) {
		i.Avail, i.Monitor.LocalExpect = dataset.StatusUp, dataset.ExpectStarted
	})
	wantState(t, "n2 claims the last slot", w.run("n2")["app"], dataset.Ready, ActionNone)
	// n3's claim, made on data that did not show n2's
	w.setInst("n3", "app", func(i *dataset.Instance) { i.Monitor.State, i.Monitor.StateSince = dataset.Ready, t0 })
	w.now = t0.Add(w.ready)
	d := decisionOf(Step(w.snap("n2")), "app")
	wantState(t, "n2 at its window's end, n3 claiming", d, dataset.Ready, ActionNone)
	if ex, _ := Explain(w.snap("n2"), "app", false); !strings.Contains(ex.Monitor.Reason, "n3 claim too (3 instances for a flex target of 2): waiting for them to back off") {
		t.Fatalf("explain: %q", ex.Monitor.Reason)
	}
	// n3 sees n2's claim ahead of it: it backs off
	d = w.run("n3")["app"]
	wantState(t, "n3 sees n2's claim", d, dataset.Idle, ActionNone)
	if !strings.Contains(d.Reason, "not among the 1 best candidates without an instance (n2)") {
		t.Fatalf("n3's reason %q", d.Reason)
	}
	wantState(t, "n2 once n3 backed off", w.run("n2")["app"], dataset.Starting, ActionStart)
	wantUp(t, w, "the end", "n1", "n2")
}

// Views that lag: each node decides on the others' data as it was a few
// steps ago (never longer than the window), while instances crash and
// nodes freeze and thaw at random (fixed seeds). The instances up never
// exceed the target, and the target is reached once the faults end.
func TestFlexLaggingViewsNeverExceedTarget(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		lag := int(seed % 4)
		rng := rand.New(rand.NewSource(seed))
		w := flexWorld(t, 2, "n1", "n2", "n3", "n4")
		w.ready = 4 * time.Second
		var hist []map[string]dataset.Instance // the instances of app after each step
		snapshot := func() map[string]dataset.Instance {
			m := map[string]dataset.Instance{}
			for _, n := range w.cluster {
				m[n] = w.inst(n, "app")
			}
			return m
		}
		order := []string{"n4", "n3", "n2", "n1"} // the worst first: their claims come first
		for step := 0; step < 200; step++ {
			if step < 140 {
				switch f := rng.Intn(12); {
				case f == 0: // an instance crashes
					c := w.cluster[rng.Intn(len(w.cluster))]
					w.setInst(c, "app", func(i *dataset.Instance) { i.Avail = dataset.StatusDown })
				case f == 1: // a node's instance frozen or thawed
					c := w.cluster[rng.Intn(len(w.cluster))]
					w.setInst(c, "app", func(i *dataset.Instance) { i.Frozen = !i.Frozen })
				}
			} else if step == 140 {
				for _, c := range w.cluster {
					w.setInst(c, "app", func(i *dataset.Instance) { i.Frozen = false })
				}
			}
			hist = append(hist, snapshot())
			n := order[step%len(order)]
			// n's view: its own instance now, the others' lag steps ago
			old := hist[max(0, len(hist)-1-lag)]
			saved := snapshot()
			for _, p := range w.cluster {
				if p != n {
					w.nodes[p].Data.Services["app"] = old[p]
				}
			}
			ds := w.step(n)
			for _, p := range w.cluster {
				w.nodes[p].Data.Services["app"] = saved[p]
			}
			d := ds["app"]
			i := w.inst(n, "app")
			i.Monitor = d.Monitor
			switch d.Action {
			case ActionStart:
				i.Avail = dataset.StatusUp
				i.Monitor = AfterStart(i.Monitor, true, w.now)
			case ActionStop:
				i.Avail = dataset.StatusDown
				i.Monitor = AfterStop(i.Monitor, true, w.now)
			}
			w.nodes[n].Data.Services["app"] = i
			if up := w.upOn("app"); len(up) > 2 {
				t.Fatalf("seed %d, lag %d, step %d: up on %v", seed, lag, step, up)
			}
			w.now = w.now.Add(time.Second / 2)
		}
		if up := w.upOn("app"); len(up) != 2 {
			t.Fatalf("seed %d, lag %d: up on %v at the end, want 2", seed, lag, up)
		}
	}
}

// A failed start clears only once the target is up without the node.
func TestFlexStartFailed(t *testing.T) {
	w := flexWorld(t, 2, "n1", "n2", "n3")
	w.failStart["n1/app"] = true
	w.rounds(8, time.Second)
	wantUp(t, w, "n1 fails", "n2", "n3")
	if st := w.inst("n1", "app").Monitor.State; st != dataset.Idle {
		t.Fatalf("n1: %s, want idle once the target is up", st)
	}
}

// A flex parent is up for its children at flex_min instances up.
func TestFlexParent(t *testing.T) {
	w := flexWorld(t, 2, "n1", "n2", "n3")
	w.svcs["app"].FlexMin = 1
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}, Parents: []string{"app"}})
	w.setInst("n1", "app", func(i *dataset.Instance) { i.Frozen = true })
	w.setInst("n2", "app", func(i *dataset.Instance) { i.Frozen = true })
	w.setInst("n3", "app", func(i *dataset.Instance) { i.Frozen = true })
	d := decisionOf(Step(w.snap("n1")), "web")
	wantState(t, "web, app down", d, dataset.WaitParents, ActionNone)
	w.setInst("n3", "app", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	d = decisionOf(Step(w.snap("n1")), "web")
	wantState(t, "web, app 1 of 2 up (flex_min 1)", d, dataset.Ready, ActionNone)
}

// svcmgr explain of a flex service: its counts, each node's standing,
// why it is below target.
func TestFlexExplain(t *testing.T) {
	w := flexWorld(t, 3, "n1", "n2", "n3", "n4")
	w.setInst("n1", "app", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	w.setNode("n2", func(v *placement.NodeView) { v.Data.Frozen = true })
	w.setNode("n4", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	ex, ok := Explain(w.snap("n3"), "app", false)
	if !ok || ex.Flex == nil {
		t.Fatalf("no flex explanation: %+v", ex)
	}
	f := ex.Flex
	want := []string{"n1: instance up", "n3: candidate without an instance", "n2: no candidate: node frozen", "n4: not alive here (down or not heard): its instance does not count"}
	if f.Running != 1 || !slices.Equal(f.Nodes, want) {
		t.Fatalf("running %d, nodes %q, want 1, %q", f.Running, f.Nodes, want)
	}
	if f.Short != "1 of 3 running: only 1 candidate(s) without an instance (n3)" {
		t.Fatalf("short %q", f.Short)
	}
	if !strings.Contains(ex.Monitor.Reason, "ready") {
		t.Fatalf("n3's monitor: %q", ex.Monitor.Reason)
	}
}
