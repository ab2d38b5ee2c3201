package monitor

import (
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// fastRun steps node with fast ack on (every node sees the same world) and
// applies the decision as the shell does: the monitor, the ack, the start
// (at once: avail up).
func (w *world) fastRun(node string) Decision {
	s := w.snap(node)
	s.FastAck = true
	var out Decision
	for _, d := range Step(s) {
		if d.Service != "web" {
			continue
		}
		out = d
		w.setInst(node, "web", func(i *dataset.Instance) {
			i.Monitor, i.ReadyAck = d.Monitor, d.ReadyAck
			if d.Action == ActionStart {
				i.Avail = dataset.StatusUp
				i.Monitor = AfterStart(i.Monitor, true, w.now)
			}
		})
	}
	return out
}

// n1 (the owner) is down: n2 claims, n3 acks the claim, n2 starts at once.
func TestFastAckStartsBeforeTheWindowEnds(t *testing.T) {
	w := threeNodes(t)
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })

	d := w.fastRun("n2")
	wantState(t, "n2 claims", d, dataset.Ready, ActionNone)
	if d.ReadyAck != "" {
		t.Errorf("n2 claims: the claimer acks %q, want nothing", d.ReadyAck)
	}
	d = w.fastRun("n3")
	want := dataset.ClaimID("n2", t0)
	if d.ReadyAck != want || d.Changed {
		t.Fatalf("n3: got ack %q changed %v, want %q, unchanged (an ack is no state change)", d.ReadyAck, d.Changed, want)
	}
	w.now = t0.Add(100 * time.Millisecond)
	d = w.fastRun("n2")
	wantState(t, "n2 acked by every live node", d, dataset.Starting, ActionStart)
	if d.Reason != fastAckReason {
		t.Errorf("n2 reason: got %q, want %q", d.Reason, fastAckReason)
	}
	// once started, n3 acks nothing any more
	if d := w.fastRun("n3"); d.ReadyAck != "" {
		t.Errorf("n3 after the start: got ack %q, want none", d.ReadyAck)
	}
}

// Without fast ack, the same acks are ignored: the whole window.
func TestFastAckOffWaitsTheWindow(t *testing.T) {
	w := threeNodes(t)
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.fastRun("n2")
	w.fastRun("n3")
	w.now = t0.Add(100 * time.Millisecond)
	wantState(t, "n2 without fast ack", w.step("n2")["web"], dataset.Ready, ActionNone)
	w.now = t0.Add(w.ready)
	wantState(t, "n2 at the window's end", w.step("n2")["web"], dataset.Starting, ActionStart)
}

// Every live node must ack: one that is up but has not acked (it came back,
// its data has no ack yet) holds the fast path.
func TestFastAckWaitsForEveryLiveNode(t *testing.T) {
	w := threeNodes(t)
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Frozen = true }) // n1 up, not a candidate
	w.fastRun("n2")
	w.fastRun("n3")
	w.now = t0.Add(100 * time.Millisecond)
	wantState(t, "n2 with n1 silent", w.fastRun("n2"), dataset.Ready, ActionNone)
	// n1 acks (frozen: out of the race, it does not contest)
	if d := w.fastRun("n1"); d.ReadyAck != dataset.ClaimID("n2", t0) {
		t.Fatalf("n1 frozen: got ack %q, want n2's claim", d.ReadyAck)
	}
	w.now = t0.Add(200 * time.Millisecond)
	wantState(t, "n2 acked by n1 and n3", w.fastRun("n2"), dataset.Starting, ActionStart)
}

// A node that is a better candidate claims itself and acks nothing; a node
// that sees two claims acks neither; the worse claimer never starts early.
func TestFastAckNoAckWhileContested(t *testing.T) {
	w := threeNodes(t)
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Frozen = true })
	wantState(t, "n2 claims", w.fastRun("n2"), dataset.Ready, ActionNone)
	w.fastRun("n3")
	// n1 is thawed: it ranks first, claims, and acks nothing
	w.now = t0.Add(50 * time.Millisecond)
	w.setInst("n1", "web", func(i *dataset.Instance) { i.Frozen = false })
	d := w.fastRun("n1")
	wantState(t, "n1 thawed", d, dataset.Ready, ActionNone)
	if d.ReadyAck != "" {
		t.Errorf("n1 claiming: got ack %q, want none", d.ReadyAck)
	}
	// n3 sees two claims: no ack
	if d := w.fastRun("n3"); d.ReadyAck != "" {
		t.Errorf("n3 with two claims: got ack %q, want none", d.ReadyAck)
	}
	// n2 backs off: n1 ranks better
	wantState(t, "n2", w.fastRun("n2"), dataset.Idle, ActionNone)
	// n3's ack now names n1's claim, n2 acks it too: n1 starts
	if d := w.fastRun("n3"); d.ReadyAck != dataset.ClaimID("n1", t0.Add(50*time.Millisecond)) {
		t.Fatalf("n3: got ack %q, want n1's claim", d.ReadyAck)
	}
	w.fastRun("n2")
	w.now = t0.Add(60 * time.Millisecond)
	wantState(t, "n1 acked", w.fastRun("n1"), dataset.Starting, ActionStart)
}

// An ack names one window: when the claimer cancels and claims again, the
// ack of the first window does not count for the second.
func TestFastAckOfAnOlderClaimDoesNotCount(t *testing.T) {
	w := threeNodes(t)
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.fastRun("n2")
	w.fastRun("n3") // acks n2@t0
	// n2 leaves ready (a parent of web went down, say) then claims again
	w.now = t0.Add(time.Second)
	w.setInst("n2", "web", func(i *dataset.Instance) {
		i.Monitor.State, i.Monitor.StateSince = dataset.Ready, w.now
	})
	wantState(t, "n2 second claim, old ack", w.fastRun("n2"), dataset.Ready, ActionNone)
	if got := w.inst("n3", "web").ReadyAck; got != dataset.ClaimID("n2", t0) {
		t.Fatalf("n3's ack: got %q", got)
	}
}

// A node that sees the service up, warn or starting anywhere acks
// nothing; neither does one with a target on the service.
func TestFastAckNoAckWhenRunningOrTargeted(t *testing.T) {
	w := threeNodes(t)
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.fastRun("n2")
	w.setInst("n2", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusWarn })
	if d := w.fastRun("n3"); d.ReadyAck != "" {
		t.Errorf("n3 with web warn on n2: got ack %q", d.ReadyAck)
	}
	w.setInst("n2", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusDown })
	w.setTarget("web", dataset.Target{Expect: dataset.ExpectStopped, ID: "x", Version: dataset.Version{Counter: 1, Origin: "n3"}})
	s := w.snap("n3")
	s.FastAck = true
	for _, d := range Step(s) {
		if d.ReadyAck != "" {
			t.Errorf("n3 with a target: got ack %q", d.ReadyAck)
		}
	}
}

// A single live node (every peer down) has nobody to wait for: it decides
// again at once (Deadline now) and starts.
func TestFastAckAloneStartsAtOnce(t *testing.T) {
	w := newWorld(t, "n1", "n2")
	w.addSvc(&config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2"}})
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	d := w.fastRun("n2")
	wantState(t, "n2 alone", d, dataset.Ready, ActionNone)
	if !d.Deadline.Equal(w.now) {
		t.Errorf("n2 alone: deadline %v, want now", d.Deadline)
	}
	wantState(t, "n2 alone, again", w.fastRun("n2"), dataset.Starting, ActionStart)
}

// Quorum on: a node whose takeover gate of a lost node of the service is
// still closed (Snapshot.Fencing) acks nothing; once open, it acks.
func TestFastAckNoAckBehindTheFenceGate(t *testing.T) {
	w := threeNodes(t)
	w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	w.fastRun("n2")
	s := w.snap("n3")
	s.FastAck = true
	s.Fencing = map[string]string{"n1": "waiting for n1's self-stop deadline"}
	for _, d := range Step(s) {
		if d.ReadyAck != "" {
			t.Errorf("n3 behind the gate: got ack %q, want none", d.ReadyAck)
		}
	}
	if d := w.fastRun("n3"); d.ReadyAck == "" {
		t.Errorf("n3 with the gate open: got no ack")
	}
}
