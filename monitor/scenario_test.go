package monitor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

func threeNodes(t *testing.T) *world {
	w := newWorld(t, "n1", "n2", "n3")
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}})
	return w
}

func wantState(t *testing.T, what string, d Decision, st dataset.MonitorState, a Action) {
	t.Helper()
	if d.Monitor.State != st || d.Action != a {
		t.Fatalf("%s: got %q action %q (%s), want %q action %q", what, d.Monitor.State, d.Action, d.Reason, st, a)
	}
}

func TestReadyWindow(t *testing.T) {
	w := threeNodes(t)
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Frozen = true })

	// n2 leads while n1 is frozen.
	d := w.run("n2")["web"]
	wantState(t, "n2 at t0", d, dataset.Ready, ActionNone)
	if !d.Deadline.Equal(t0.Add(w.ready)) || !d.PlacementLeader {
		t.Fatalf("n2 at t0: got deadline %v leader %v, want %v true", d.Deadline, d.PlacementLeader, t0.Add(w.ready))
	}
	wantState(t, "n1 at t0", w.run("n1")["web"], dataset.Idle, ActionNone)
	wantState(t, "n3 at t0", w.run("n3")["web"], dataset.Idle, ActionNone)

	// n1 is thawed and enters ready: it ranks better, n2 backs off.
	w.now = t0.Add(time.Second)
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Frozen = false })
	wantState(t, "n1 at t0+1s", w.run("n1")["web"], dataset.Ready, ActionNone)
	d = w.run("n2")["web"]
	wantState(t, "n2 at t0+1s", d, dataset.Idle, ActionNone)
	if !strings.Contains(d.Reason, "ready cancelled") {
		t.Errorf("n2 cancel reason: got %q, want a ready cancellation", d.Reason)
	}

	// n1's window runs from t0+1s.
	w.now = t0.Add(2900 * time.Millisecond)
	wantState(t, "n1 at t0+2.9s", w.run("n1")["web"], dataset.Ready, ActionNone)
	w.now = t0.Add(3 * time.Second)
	d = w.run("n1")["web"]
	wantState(t, "n1 at t0+3s", d, dataset.Starting, ActionStart)
	if got := w.inst("n1", "web").Monitor; got.State != dataset.Idle || got.LocalExpect != dataset.ExpectStarted {
		t.Errorf("n1 after start: got %+v, want idle, local expect started", got)
	}
	for _, n := range []string{"n2", "n3"} {
		if d := w.run(n)["web"]; d.Changed {
			t.Errorf("%s after n1 started: got %+v, want nothing", n, d)
		}
	}
}

func TestReadyCancels(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(w *world)
		reason string
	}{
		{"service up elsewhere", func(w *world) {
			w.setInst("n3", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
		}, "service up on n3"},
		{"peer transition", func(w *world) {
			w.setInst("n3", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Stopping })
		}, "n3 is stopping"},
		{"no longer leader (frozen)", func(w *world) {
			w.setNode("n1", func(v *placement.NodeView) { v.Data.Frozen = true })
		}, "node frozen"},
		{"compat lost", func(w *world) { w.compat = false }, "incompatible versions"},
		{"peer ready with a better rank", func(w *world) {
			// n2's view is stale: it believes it leads; n1 ranks first.
			w.setInst("n1", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Ready })
			// With identical data n1 also leads n2's ranking, so the
			// leader rule fires first; betterReadyPeer guards stale views.
		}, "(n1)"},
	}
	for _, c := range cases {
		w := threeNodes(t)
		local := "n1"
		if strings.HasPrefix(c.name, "peer ready") {
			local = "n2"
			w.setInst("n2", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Ready; i.Monitor.StateSince = t0 })
		} else {
			wantState(t, c.name+": first step", w.run(local)["web"], dataset.Ready, ActionNone)
		}
		w.now = t0.Add(time.Second)
		c.mutate(w)
		d := w.step(local)["web"]
		if d.Monitor.State != dataset.Idle || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: got %q (%s), want idle with a reason containing %q", c.name, d.Monitor.State, d.Reason, c.reason)
		}
	}
}

func TestStartFailedNextContestsThenAutoClear(t *testing.T) {
	w := threeNodes(t)
	w.failStart["n1/web"] = true
	w.rounds(3, w.ready)
	if got := w.inst("n1", "web").Monitor.State; got != dataset.StartFailed {
		w.dumpLog()
		t.Fatalf("n1: got %q, want start failed", got)
	}
	w.rounds(3, w.ready)
	if got := w.upOn("web"); fmt.Sprint(got) != "[n2]" {
		w.dumpLog()
		t.Fatalf("got web up on %v, want [n2]", got)
	}
	w.round(time.Second)
	if got := w.inst("n1", "web").Monitor.State; got != dataset.Idle {
		w.dumpLog()
		t.Fatalf("n1 once web is up on n2: got %q, want idle (auto-clear)", got)
	}
}

func TestAllStartsFailStayVisible(t *testing.T) {
	w := threeNodes(t)
	for _, n := range w.cluster {
		w.failStart[n+"/web"] = true
	}
	w.rounds(12, w.ready)
	for _, n := range w.cluster {
		if got := w.inst(n, "web").Monitor.State; got != dataset.StartFailed {
			t.Errorf("%s: got %q, want start failed", n, got)
		}
	}
}

func TestSingleNodeStartsAtOnce(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.addSvc(&config.ServiceConfig{Name: "solo", Nodes: []string{"n2"}})
	d := w.step("n2")["solo"]
	wantState(t, "n2", d, dataset.Starting, ActionStart)
	if _, ok := w.step("n1")["solo"]; ok {
		t.Errorf("n1: got a decision for a service it does not host")
	}
}

func TestWaitParents(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.addSvc(&config.ServiceConfig{Name: "db", Nodes: []string{"n2"}, Orchestrate: OrchestrateNo})
	w.addSvc(&config.ServiceConfig{Name: "app", Nodes: []string{"n1", "n2"}, Parents: []string{"db"}})
	d := w.run("n1")["app"]
	wantState(t, "n1 app, db down", d, dataset.WaitParents, ActionNone)
	if !strings.Contains(d.Reason, "wait parents: db") {
		t.Errorf("reason: got %q, want wait parents: db", d.Reason)
	}
	w.setInst("n2", "db", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	wantState(t, "n1 app, db up", w.run("n1")["app"], dataset.Ready, ActionNone)

	// pinned parent
	w.svcs["app"].Parents = []string{"db@n1"}
	w.setInst("n1", "app", func(i *dataset.Instance) { i.Monitor.State = dataset.Idle })
	wantState(t, "n1 app, db@n1 down", w.run("n1")["app"], dataset.WaitParents, ActionNone)
}

func TestOrchestrateStartNoFailover(t *testing.T) {
	w := threeNodes(t)
	w.svcs["web"].Orchestrate = OrchestrateStart
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.rounds(4, w.ready)
	if got := w.upOn("web"); len(got) != 0 {
		t.Fatalf("natural leader down: got web up on %v, want nowhere", got)
	}
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeUp })
	w.rounds(3, w.ready)
	if got := w.upOn("web"); fmt.Sprint(got) != "[n1]" {
		t.Fatalf("natural leader back: got web up on %v, want [n1]", got)
	}
}

func TestNothingAutomatic(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(w *world)
	}{
		{"orchestrate=no", func(w *world) { w.svcs["web"].Orchestrate = OrchestrateNo }},
		{"placement=none", func(w *world) { w.svcs["web"].Placement = placement.PolicyNone }},
		{"compat false", func(w *world) { w.compat = false }},
	} {
		w := threeNodes(t)
		c.set(w)
		w.rounds(4, w.ready)
		if len(w.log) != 0 {
			t.Errorf("%s: got decisions %v, want none", c.name, w.log)
		}
		// an admin target still works
		w.setTarget("web", dataset.Target{Expect: dataset.ExpectStarted, Version: dataset.Version{Counter: 1, Origin: "n3"}})
		w.rounds(2, time.Second)
		if got := w.upOn("web"); fmt.Sprint(got) != "[n1]" {
			w.dumpLog()
			t.Errorf("%s, target started: got web up on %v, want [n1]", c.name, got)
		}
	}
}

func TestNodeCrashFailover(t *testing.T) {
	w := threeNodes(t)
	w.rounds(3, w.ready)
	if got := w.upOn("web"); fmt.Sprint(got) != "[n1]" {
		t.Fatalf("got web up on %v, want [n1]", got)
	}
	// n1 in maintenance: its last data is kept, nothing moves.
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeStMaint })
	w.rounds(3, w.ready)
	if got := w.upOn("web"); fmt.Sprint(got) != "[n1]" {
		t.Fatalf("n1 in maintenance: got web up on %v, want [n1]", got)
	}
	// n1 declared down: n2 takes over after the ready period.
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.round(time.Second)
	if got := w.inst("n2", "web").Monitor.State; got != dataset.Ready {
		t.Fatalf("n2 after n1 down: got %q, want ready", got)
	}
	w.rounds(3, w.ready)
	if got := w.inst("n2", "web").Avail; got != dataset.StatusUp {
		w.dumpLog()
		t.Fatalf("n2: got web %q, want up", got)
	}
}

func TestShuttingPeerHandsOver(t *testing.T) {
	w := threeNodes(t)
	w.rounds(3, w.ready)
	// n1 shuts down cleanly: it announces shutting and stops its instance.
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeStShutting; v.Data.Monitor = dataset.NodeShutting })
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Stopping })
	if d := w.run("n2")["web"]; d.Monitor.State != dataset.Idle {
		t.Fatalf("n2 while n1 stops: got %q (%s), want idle", d.Monitor.State, d.Reason)
	}
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusDown; i.Monitor.State = dataset.Idle })
	d := w.run("n2")["web"]
	wantState(t, "n2 once n1 stopped", d, dataset.Ready, ActionNone)
	if d.Flags != "L" {
		t.Errorf("n2 flags: got %q, want L (n1 is not available)", d.Flags)
	}
	w.now = w.now.Add(w.ready)
	wantState(t, "n2 after ready period", w.step("n2")["web"], dataset.Starting, ActionStart)
}

func TestRejoiningNodeDoesNotLead(t *testing.T) {
	w := threeNodes(t)
	w.setNode("n1", func(v *placement.NodeView) { v.Data.Monitor = dataset.NodeRejoin })
	d := w.step("n1")["web"]
	if d.Monitor.State != dataset.Idle || d.PlacementLeader {
		t.Errorf("n1 in rejoin: got %q leader %v, want idle, not leader", d.Monitor.State, d.PlacementLeader)
	}
	wantState(t, "n2", w.step("n2")["web"], dataset.Ready, ActionNone)
}
