package monitor

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// At the end of its window a claimer does not start while a worse claim is
// still up (ready on a live node: it may not have seen ours); once it backs
// off, the claimer starts.
func TestReadyWindowWaitsForAWorseClaimToBackOff(t *testing.T) {
	w := threeNodes(t)
	wantState(t, "n1 claims", w.run("n1")["web"], dataset.Ready, ActionNone)
	// n3's claim, made without seeing n1's (a split cut n1's data off)
	w.setInst("n3", "web", func(i *dataset.Instance) { i.Monitor.State, i.Monitor.StateSince = dataset.Ready, t0 })
	w.now = t0.Add(w.ready)
	s := w.snap("n1")
	var d Decision
	for _, x := range Step(s) {
		d = x
	}
	wantState(t, "n1 at the window's end, n3 ready", d, dataset.Ready, ActionNone)
	if d.Changed {
		t.Errorf("n1: got a change, want none: %+v", d)
	}
	// svcmgr explain says why
	if ex, ok := Explain(s, "web", false); !ok || ex.Monitor == nil ||
		!strings.Contains(ex.Monitor.Reason, "ready period ended, but n3 is ready too: waiting for it to back off") {
		t.Errorf("explain: got %+v, want the wait for n3 in the reason", ex.Monitor)
	}
	// n3 backs off: n1 starts
	w.setInst("n3", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Idle })
	w.now = w.now.Add(100 * time.Millisecond)
	wantState(t, "n1 once n3 backed off", w.run("n1")["web"], dataset.Starting, ActionStart)
}
