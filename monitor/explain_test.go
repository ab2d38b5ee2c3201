package monitor

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/constraints"
	"haven/dataset"
	"haven/placement"
)

func explain(t *testing.T, w *world, local, svc string, start bool) Explanation {
	t.Helper()
	e, ok := Explain(w.snap(local), svc, start)
	if !ok {
		t.Fatalf("explain %s on %s: service not found", svc, local)
	}
	return e
}

func verdict(t *testing.T, e Explanation, node string) placement.Verdict {
	t.Helper()
	for _, v := range e.Verdicts {
		if v.Node == node {
			return v
		}
	}
	t.Fatalf("no verdict for %s: %+v", node, e.Verdicts)
	return placement.Verdict{}
}

// TestExplainAgreesWithStep: on the benchmark's cluster, the explanation of
// every service carries the decision Step makes for it, and the verdicts
// agree with the decision's leader and flags.
func TestExplainAgreesWithStep(t *testing.T) {
	s := benchSnapshot()
	ds := Step(s)
	for i := 0; i < len(ds); i += 101 {
		d := ds[i]
		e, ok := Explain(s, d.Service, false)
		if !ok || e.Monitor == nil {
			t.Fatalf("%s: got no explanation of the local instance", d.Service)
		}
		m := e.Monitor
		if m.Next != d.Monitor.State || m.Action != d.Action || m.Changed != d.Changed || m.Flags != d.Flags ||
			!m.Deadline.Equal(d.Deadline) || (e.Leader == s.Local) != d.PlacementLeader {
			t.Errorf("%s: explanation %+v (leader %s) disagrees with Step's decision %+v", d.Service, m, e.Leader, d)
		}
		if d.Changed && !strings.Contains(m.Reason, d.Reason) {
			t.Errorf("%s: got reason %q, want Step's %q", d.Service, m.Reason, d.Reason)
		}
		if len(e.Verdicts) != len(s.ClusterNodes) {
			t.Errorf("%s: got %d verdicts, want one per node", d.Service, len(e.Verdicts))
		}
		if e.Leader != "" && (!e.Verdicts[0].Candidate || e.Verdicts[0].Node != e.Leader) && e.Orchestrate == OrchestrateHA {
			t.Errorf("%s: leader %s, but the first verdict is %+v", d.Service, e.Leader, e.Verdicts[0])
		}
	}
}

// TestExplainReadyWindowAndExclusions: n1 is ready until the end of the
// window; n2 is frozen, n3 out of the constraints; the leader is n1.
func TestExplainReadyWindowAndExclusions(t *testing.T) {
	w := newWorld(t, "n1", "n2", "n3", "n4")
	prog, err := constraints.Compile(`node.env != "DEV"`)
	if err != nil {
		t.Fatal(err)
	}
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3", "n4"}, Constraint: prog})
	w.setNode("n2", func(v *placement.NodeView) { v.Data.Frozen = true })
	w.setNode("n3", func(v *placement.NodeView) { v.Data.Labels = map[string]string{"env": "DEV"} })
	w.setNode("n4", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.round(time.Second) // n1 enters ready at t0
	w.now = t0.Add(1500 * time.Millisecond)

	e := explain(t, w, "n1", "web", false)
	if e.Leader != "n1" || e.Constraint != `node.env != "DEV"` {
		t.Errorf("got leader %q constraint %q, want n1 and the source", e.Leader, e.Constraint)
	}
	m := e.Monitor
	if m.State != dataset.Ready || m.Next != dataset.Ready || !m.ReadyUntil.Equal(t0.Add(w.ready)) || !m.Deadline.Equal(m.ReadyUntil) || m.Blocked != "" {
		t.Errorf("monitor: got %+v, want ready until %s", m, t0.Add(w.ready))
	}
	for node, want := range map[string][]string{
		"n2": {placement.ReasonNodeFrozen}, "n3": {placement.ReasonConstraints}, "n4": {placement.ReasonNodeDown},
	} {
		if got := verdict(t, e, node).Reasons; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q, want %q", node, got, want)
		}
	}
	// on n2 (frozen): not a candidate, says so, and the same leader
	e2 := explain(t, w, "n2", "web", false)
	if e2.Leader != "n1" || e2.Monitor.Blocked != "not a candidate: node frozen" || e2.Monitor.Flags != "F" {
		t.Errorf("on n2: got leader %q monitor %+v", e2.Leader, e2.Monitor)
	}
	// past the window: the decision is the start
	w.now = t0.Add(w.ready)
	if m := explain(t, w, "n1", "web", false).Monitor; m.Action != ActionStart || m.Next != dataset.Starting || !m.Changed {
		t.Errorf("window over: got %+v, want the start", m)
	}
}

// TestExplainWaitsAndTarget: the parents not up (all of them), the
// children not down under a stop target, the target and its id.
func TestExplainWaitsAndTarget(t *testing.T) {
	w := newWorld(t, "n1")
	w.addSvc(&config.ServiceConfig{Name: "db", Nodes: []string{"n1"}})
	w.addSvc(&config.ServiceConfig{Name: "mq", Nodes: []string{"n1"}})
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1"}, Parents: []string{"db", "mq"}, Children: []string{"front"}})
	w.addSvc(&config.ServiceConfig{Name: "front", Nodes: []string{"n1"}, Orchestrate: OrchestrateNo})
	w.setInst("n1", "db", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	w.setInst("n1", "mq", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	w.setInst("n1", "front", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	// both parents down, frozen so that nothing starts them
	for _, p := range []string{"db", "mq"} {
		w.setInst("n1", p, func(i *dataset.Instance) { i.Avail, i.Frozen = dataset.StatusDown, true })
	}
	e := explain(t, w, "n1", "web", false)
	m := e.Monitor
	if !reflect.DeepEqual(m.WaitParents, []string{"db", "mq"}) || m.Next != dataset.WaitParents || m.Blocked != "wait parents: db not up" {
		t.Errorf("got %+v, want wait parents db and mq", m)
	}

	w.setInst("n1", "web", func(i *dataset.Instance) { i.Avail, i.Frozen = dataset.StatusUp, true })
	// up already: its parents gate no start, explain lists none
	if m := explain(t, w, "n1", "web", false).Monitor; len(m.WaitParents) > 0 {
		t.Errorf("web up: got parents not up %v, want none listed", m.WaitParents)
	}
	w.setTarget("web", dataset.Target{Expect: dataset.ExpectStopped, ID: "n1-7"})
	m = explain(t, w, "n1", "web", false).Monitor
	if m.Target != "stopped" || m.TargetID != "n1-7" || !reflect.DeepEqual(m.WaitChildren, []string{"front"}) ||
		m.Next != dataset.WaitChildren || m.Blocked != "" || !strings.Contains(m.Reason, "wait children: front not down") {
		t.Errorf("got %+v, want target stopped waiting for front", m)
	}
}

// TestExplainHypotheticalStart: web runs on n1; explained as is, n2 is held
// back by it; with start, n1 (frozen instance) is excluded and n2 leads.
func TestExplainHypotheticalStart(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2"}})
	w.setInst("n1", "web", func(i *dataset.Instance) {
		i.Avail, i.Frozen, i.Monitor.LocalExpect = dataset.StatusUp, true, dataset.ExpectStarted
	})
	e := explain(t, w, "n2", "web", false)
	if e.Hypothetical || !reflect.DeepEqual(e.Running, []string{"n1"}) || e.Monitor.Blocked != "service up on n1" {
		t.Errorf("as is: got %+v monitor %+v", e, e.Monitor)
	}
	e = explain(t, w, "n2", "web", true)
	if !e.Hypothetical || e.Running != nil || e.Leader != "n2" || e.Monitor.Next != dataset.Ready ||
		!reflect.DeepEqual(verdict(t, e, "n1").Reasons, []string{placement.ReasonInstanceFrozen}) {
		t.Errorf("start: got %+v monitor %+v", e, e.Monitor)
	}
	if w.inst("n1", "web").Avail != dataset.StatusUp {
		t.Errorf("the hypothetical start changed the snapshot")
	}
}

// TestExplainSeesSameStepClaims: a and b are anti-affine on one node; a
// (decided first in the Step) claims the node, and b's explanation shows
// the claim made in the same pass, as Step decides b.
func TestExplainSeesSameStepClaims(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.addSvc(&config.ServiceConfig{Name: "a", Nodes: []string{"n1", "n2"}})
	w.addSvc(&config.ServiceConfig{Name: "b", Nodes: []string{"n1", "n2"}, HardAntiAffinity: []string{"a"}})
	e := explain(t, w, "n1", "b", false)
	if got := verdict(t, e, "n1").Reasons; !reflect.DeepEqual(got, []string{"hard anti-affinity: a claimed"}) {
		t.Errorf("n1: got %q, want a's claim of this very Step", got)
	}
	if e.Leader != "n2" || e.Monitor.Blocked != "not a candidate: hard anti-affinity: a claimed" {
		t.Errorf("got leader %q monitor %+v", e.Leader, e.Monitor)
	}
	if d := w.step("n1")["b"]; d.PlacementLeader || d.Monitor.State != dataset.Idle {
		t.Errorf("Step: got %+v, want b idle, not the leader", d)
	}
	// a service without a local instance: the ranking, no monitor
	w2 := newWorld(t, "n1", "n2")
	w2.addSvc(&config.ServiceConfig{Name: "c", Nodes: []string{"n2"}})
	if e := explain(t, w2, "n1", "c", false); e.Monitor != nil || e.Leader != "n2" {
		t.Errorf("remote only: got %+v", e)
	}
	if _, ok := Explain(w2.snap("n1"), "nope", false); ok {
		t.Errorf("unknown service: got ok")
	}
}

// A cycle of parents (web waits for db, db for web) never ends: explain
// names it, instead of only "parents not up".
func TestExplainParentCycle(t *testing.T) {
	w := newWorld(t, "n1")
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1"}, Parents: []string{"db"}})
	w.addSvc(&config.ServiceConfig{Name: "db", Nodes: []string{"n1"}, Parents: []string{"mq@n1"}})
	w.addSvc(&config.ServiceConfig{Name: "mq", Nodes: []string{"n1"}, Parents: []string{"web"}})
	w.addSvc(&config.ServiceConfig{Name: "app", Nodes: []string{"n1"}, Parents: []string{"db"}})
	if m := explain(t, w, "n1", "web", false).Monitor; !reflect.DeepEqual(m.ParentCycle, []string{"web", "db", "mq", "web"}) {
		t.Errorf("web: parent cycle %v, want web db mq web", m.ParentCycle)
	}
	if m := explain(t, w, "n1", "app", false).Monitor; m.ParentCycle != nil {
		t.Errorf("app (outside the cycle): parent cycle %v, want none", m.ParentCycle)
	}
}

// TestExplainLadderSaysTheWindow: the ladder's line of a monitored
// resource says the restarts remaining, and the restart_window they count
// over when the resource has one.
func TestExplainLadderSaysTheWindow(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2"}, Resources: []config.ResourceConfig{
		{RID: "app#a", Monitor: true, Restart: 3, RestartWindow: 10 * time.Minute}, {RID: "app#b", Monitor: true, Restart: 1}}})
	w.setInst("n1", "web", func(i *dataset.Instance) {
		i.Resources = map[string]dataset.Resource{"app#a": {Status: dataset.StatusUp, Monitor: true, RestartRemaining: 2},
			"app#b": {Status: dataset.StatusUp, Monitor: true, RestartRemaining: 1}}
	})
	got := explain(t, w, "n1", "web", false).Monitor.Ladder
	want := []string{"app#a: up, 2 restart(s) remaining (restarts count over a restart_window of 10m0s)", "app#b: up, 1 restart(s) remaining"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got ladder %q, want %q", got, want)
	}
}
