package monitor

import (
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// globalWorld is nodes with the flex service app in the global mode.
func globalWorld(t *testing.T, nodes ...string) *world {
	w := newWorld(t, nodes...)
	w.addSvc(&config.ServiceConfig{Name: "app", Nodes: []string{"*"}, Topology: config.TopologyFlex,
		FlexTarget: config.CountAll, FlexMin: 1})
	return w
}

func wantFlexTarget(t *testing.T, w *world, node string, want int) {
	t.Helper()
	if got := decisionOf(Step(w.snap(node)), "app").FlexTarget; got != want {
		w.dumpLog()
		t.Fatalf("%s: flex target %d, want %d", node, got, want)
	}
}

// Every candidate starts its own instance at once (no ready window), and a
// node that joins gets its own; nothing stops at the "target".
func TestFlexGlobalEveryCandidate(t *testing.T) {
	w := globalWorld(t, "n1", "n2", "n3", "n4")
	w.setNode("n4", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.round(time.Second)
	wantUp(t, w, "one round", "n1", "n2", "n3")
	wantFlexTarget(t, w, "n1", 3)
	w.rounds(3, time.Second)
	for _, n := range []string{"n1", "n2", "n3"} {
		if d := decisionOf(Step(w.snap(n)), "app"); d.Changed {
			t.Fatalf("%s at the target: %+v", n, d)
		}
	}
	// n4 joins
	w.setNode("n4", func(v *placement.NodeView) { v.Status = dataset.NodeUp })
	wantFlexTarget(t, w, "n1", 4)
	d := decisionOf(Step(w.snap("n4")), "app")
	wantState(t, "n4 joined", d, dataset.Starting, ActionStart)
	w.round(time.Second)
	wantUp(t, w, "n4 joined", "n1", "n2", "n3", "n4")
}

// A frozen node keeps its instance (and the target counts it) but starts
// none; a drained node (frozen, its instance stopped) is not in the
// target; thawed, it starts its own at once.
func TestFlexGlobalFrozenAndDrained(t *testing.T) {
	w := globalWorld(t, "n1", "n2", "n3")
	w.round(time.Second)
	w.setNode("n2", func(v *placement.NodeView) { v.Data.Frozen = true })
	w.rounds(2, time.Second)
	wantUp(t, w, "n2 frozen", "n1", "n2", "n3")
	wantFlexTarget(t, w, "n1", 3)
	// drained: frozen and stopped
	w.setInst("n2", "app", func(i *dataset.Instance) { i.Avail = dataset.StatusDown })
	w.rounds(2, time.Second)
	wantUp(t, w, "n2 drained", "n1", "n3")
	wantFlexTarget(t, w, "n1", 2)
	e, _ := Explain(w.snap("n1"), "app", false)
	if e.Flex == nil || !e.Flex.Global || e.Flex.Target != 2 || e.Flex.Max != 3 || e.Flex.Short != "" {
		t.Fatalf("explain: %+v", e.Flex)
	}
	w.setNode("n2", func(v *placement.NodeView) { v.Data.Frozen = false })
	wantFlexTarget(t, w, "n1", 3)
	e, _ = Explain(w.snap("n1"), "app", false)
	if e.Flex.Short != "2 of 3 running: n2 to start its own instance" {
		t.Fatalf("explain short: %q", e.Flex.Short)
	}
	w.round(time.Second)
	wantUp(t, w, "n2 thawed", "n1", "n2", "n3")
}

// A node that stops meeting the constraints stops its instance, unless
// frozen (the target then counts it); meeting them again, it starts.
func TestFlexGlobalConstraints(t *testing.T) {
	w := globalWorld(t, "n1", "n2", "n3")
	w.round(time.Second)
	wantUp(t, w, "start", "n1", "n2", "n3")
	w.cok = map[string]map[string]bool{"app": {"n1": true, "n2": false, "n3": false}}
	w.setInst("n3", "app", func(i *dataset.Instance) { i.Frozen = true })
	d := decisionOf(Step(w.snap("n2")), "app")
	wantState(t, "n2 out of the constraints", d, dataset.Stopping, ActionStop)
	if !strings.Contains(d.Reason, "constraints no longer met on n2") {
		t.Fatalf("reason %q", d.Reason)
	}
	w.rounds(2, time.Second)
	wantUp(t, w, "constraints", "n1", "n3")
	wantFlexTarget(t, w, "n1", 2)
	w.cok = nil
	w.round(time.Second)
	wantUp(t, w, "constraints lifted", "n1", "n2", "n3")
}

// A lost node's instance is replaced nowhere and its takeover gate holds
// nothing: each node starts its own; a failed start holds until a clear
// (no other node takes its place, so nothing else would end it).
func TestFlexGlobalLostNodeAndFailedStart(t *testing.T) {
	w := globalWorld(t, "n1", "n2", "n3")
	w.failStart["n3/app"] = true
	w.rounds(3, time.Second)
	wantUp(t, w, "n3 fails", "n1", "n2")
	if st := w.inst("n3", "app").Monitor.State; st != dataset.StartFailed {
		t.Fatalf("n3: %s, want start failed held", st)
	}
	wantFlexTarget(t, w, "n1", 2)
	// n1 lost, not certainly stopped; n2's instance stops (killed)
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.setInst("n2", "app", func(i *dataset.Instance) { i.Avail = dataset.StatusDown })
	s := w.snap("n2")
	s.Fencing = map[string]string{"n1": "waiting for n1's self-stop deadline"}
	wantState(t, "n2 beside a lost n1", decisionOf(Step(s), "app"), dataset.Starting, ActionStart)
}

// stop --node N of a flex service: N freezes and stops its instance while
// the other nodes go on with the flex rules; reached once N's instance is
// frozen and down, and the next candidate takes the slot. start --node N
// thaws N's instance (reached then); N starts only when a slot is free.
func TestFlexNodeTargets(t *testing.T) {
	w := flexWorld(t, 2, "n1", "n2", "n3")
	w.rounds(4, time.Second)
	wantUp(t, w, "target 2", "n1", "n2")
	w.setTarget("app", dataset.Target{Expect: dataset.ExpectStopped, Node: "n1", ID: "x"})
	if d := decisionOf(Step(w.snap("n3")), "app"); d.Action != ActionNone || d.Monitor.State != dataset.Idle || d.TargetReached {
		t.Fatalf("n3 while n1 still runs: %+v", d)
	}
	d := decisionOf(Step(w.snap("n1")), "app")
	wantState(t, "n1 stopped@n1", d, dataset.Freezing, ActionFreeze)
	w.round(time.Second) // n1 freezes, the others see the target
	w.round(time.Second) // n1 stops
	if got := w.inst("n1", "app"); !got.Frozen || got.Avail != dataset.StatusDown || w.nodes["n2"].Data.Targets["app"].Expect != "" {
		w.dumpLog()
		t.Fatalf("n1 after stopped@n1: frozen %v avail %s, target %+v", got.Frozen, got.Avail, w.nodes["n2"].Data.Targets["app"])
	}
	w.rounds(4, time.Second)
	wantUp(t, w, "n1 held stopped: n3 takes the slot", "n2", "n3")

	w.setTarget("app", dataset.Target{Expect: dataset.ExpectStarted, Node: "n1", ID: "y"})
	d = decisionOf(Step(w.snap("n1")), "app")
	wantState(t, "n1 started@n1", d, dataset.Thawing, ActionThaw)
	w.round(time.Second) // n1 thaws; reached (the world clears a reached target)
	if w.inst("n1", "app").Frozen || w.nodes["n2"].Data.Targets["app"].Expect != "" {
		w.dumpLog()
		t.Fatalf("started@n1: n1 frozen %v, target %+v", w.inst("n1", "app").Frozen, w.nodes["n2"].Data.Targets["app"])
	}
	w.rounds(4, time.Second)
	wantUp(t, w, "n1 thawed, the target up without it", "n2", "n3")
	w.svcs["app"].FlexTarget, w.svcs["app"].FlexMax = 3, 3
	w.rounds(4, time.Second)
	wantUp(t, w, "a slot for n1", "n1", "n2", "n3")
}

// The fast ack of flex claims: two claims for two free slots are acked
// together by every other node, claimers included, and each starts once
// all acked; more claims than free slots are acked by nobody.
func TestFlexFastAck(t *testing.T) {
	w := flexWorld(t, 1, "n1", "n2", "n3", "n4")
	w.rounds(4, time.Second)
	wantUp(t, w, "target 1", "n1")
	w.svcs["app"].FlexTarget, w.svcs["app"].FlexMax = 3, 3
	claim := func(n string) string {
		w.setInst(n, "app", func(i *dataset.Instance) { i.Monitor.State, i.Monitor.StateSince = dataset.Ready, w.now })
		return dataset.ClaimID(n, w.now)
	}
	c2, c3 := claim("n2"), claim("n3")
	fast := func(n string) Decision {
		s := w.snap(n)
		s.FastAck = true
		return decisionOf(Step(s), "app")
	}
	for n, want := range map[string]string{"n1": c2 + "," + c3, "n4": c2 + "," + c3, "n2": c3, "n3": c2} {
		if got := fast(n).ReadyAck; got != want {
			t.Fatalf("%s acks %q, want %q", n, got, want)
		}
	}
	if d := fast("n2"); d.Action != ActionNone {
		t.Fatalf("n2 before the acks: %s (%s)", d.Action, d.Reason)
	}
	for n, ack := range map[string]string{"n1": c2 + "," + c3, "n4": c2 + "," + c3, "n2": c3, "n3": c2} {
		w.setInst(n, "app", func(i *dataset.Instance) { i.ReadyAck = ack })
	}
	for _, n := range []string{"n2", "n3"} {
		d := fast(n)
		wantState(t, n+" acked by all", d, dataset.Starting, ActionStart)
		if !strings.Contains(d.Reason, "fast ack") {
			t.Fatalf("%s: %q", n, d.Reason)
		}
	}
	// a third claim for the two slots: nobody acks, nobody starts fast
	claim("n4")
	for _, n := range []string{"n1", "n2", "n3"} {
		if got := fast(n).ReadyAck; got != "" {
			t.Fatalf("three claims for two slots: %s acks %q", n, got)
		}
	}
	// and a claimer's own count holds it back, whatever acks it holds
	if d := fast("n2"); d.Action != ActionNone {
		t.Fatalf("n2 with three claims for two slots: %s (%s)", d.Action, d.Reason)
	}
}
