package monitor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/placement"
)

// count returns how many log lines contain every part.
func count(w *world, parts ...string) int {
	k := 0
	for _, l := range w.log {
		all := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				all = false
			}
		}
		if all {
			k++
		}
	}
	return k
}

// An instance without check (n/a) that was started counts as started: not
// started again, on its node or another.
func TestNAStartedCountsAsUp(t *testing.T) {
	for _, orch := range []string{OrchestrateStart, OrchestrateHA} {
		w := threeNodes(t)
		w.svcs["web"].Orchestrate = orch
		for _, n := range w.cluster {
			w.noCheck[n+"/web"] = true
			w.setInst(n, "web", func(i *dataset.Instance) { i.Avail = dataset.StatusNA })
		}
		w.rounds(10, w.ready)
		if k := count(w, "web start"); k != 1 {
			w.dumpLog()
			t.Fatalf("orchestrate=%s: the start ran %d times, want once", orch, k)
		}
		if m := w.inst("n1", "web").Monitor; m.LocalExpect != dataset.ExpectStarted || m.State != dataset.Idle {
			t.Fatalf("orchestrate=%s: n1 monitor %+v, want idle, started", orch, m)
		}
		if orch != OrchestrateHA {
			continue
		}
		// its node dies: the n/a instance counts as down, n2 takes over
		w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
		w.log = nil
		w.rounds(4, w.ready)
		if k := count(w, "n2 web start"); k != 1 || count(w, "web start") != 1 {
			w.dumpLog()
			t.Fatalf("ha failover of an n/a instance: want one start on n2, got %v", w.log)
		}
		// a stop target stops it, and a stopped n/a instance counts as down
		w.setNode("n1", func(v *placement.NodeView) { v.Status = dataset.NodeUp })
		w.setInst("n1", "web", func(i *dataset.Instance) { i.Monitor.LocalExpect = dataset.ExpectNone })
		w.setTarget("web", target(dataset.ExpectStopped, ""))
		w.rounds(4, time.Second)
		if !targetCleared(w, "web") || w.inst("n2", "web").Monitor.LocalExpect != dataset.ExpectNone {
			w.dumpLog()
			t.Fatalf("stop of an n/a instance: cleared %v, n2 %+v", targetCleared(w, "web"), w.inst("n2", "web").Monitor)
		}
	}
}

// A node of the service whose state is unknown: a
// takeover is reached on the known nodes only, and says so; a stop waits
// for it (its instance may still run).
func TestTargetNotReachedWhileANodeIsUnknown(t *testing.T) {
	w := runningOn(t, "n3")
	w.setNode("n3", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
	// takeover on n1: it starts there, but n3 is unknown
	w.setTarget("web", target(dataset.ExpectPlaced, "n1"))
	w.run("n1")
	if d := w.run("n2")["web"]; !d.TargetReached || fmt.Sprint(d.TargetUnknown) != "[n3]" {
		t.Fatalf("takeover with n3 down: reached %v unknown %v; want reached on the known nodes, n3 unknown", d.TargetReached, d.TargetUnknown)
	}
	w.rounds(2, time.Second)
	if got := w.upOn("web"); fmt.Sprint(got) != "[n1 n3]" || !targetCleared(w, "web") {
		w.dumpLog()
		t.Fatalf("takeover with n3 down: up on %v, cleared %v; want [n1 n3] (n3's last data) and the target cleared (orchestration goes on)", got, targetCleared(w, "web"))
	}
	if p := Progress(w.snap("n1"), "web"); p != "n1 up, n2 down, n3 unknown (node down)" {
		t.Fatalf("progress: got %q", p)
	}
	w.setTarget("web", target(dataset.ExpectStopped, ""))
	w.rounds(4, time.Second)
	if targetCleared(w, "web") || w.inst("n1", "web").Avail != dataset.StatusDown {
		w.dumpLog()
		t.Fatalf("stop with n3 down: n1 %s, cleared %v; want n1 down, target kept", w.inst("n1", "web").Avail, targetCleared(w, "web"))
	}
	if d := w.step("n1")["web"]; d.TargetReached || d.TargetFailed != "" {
		t.Fatalf("stop with n3 down: got reached %v failed %q, want neither (waiting)", d.TargetReached, d.TargetFailed)
	}
	// n3 back, its instance not checked yet: still unknown
	w.setNode("n3", func(v *placement.NodeView) { v.Status = dataset.NodeUp })
	w.setInst("n3", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusUnknown })
	if d := w.step("n1")["web"]; d.TargetReached {
		t.Fatal("reached while n3's instance was not checked")
	}
	w.setInst("n3", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
	w.rounds(4, time.Second)
	if got := w.upOn("web"); len(got) != 0 || !targetCleared(w, "web") {
		w.dumpLog()
		t.Fatalf("n3 back: up on %v, cleared %v; want down everywhere and reached", got, targetCleared(w, "web"))
	}
}

// A start that failed on every node makes the started target fail at once,
// with the nodes and their causes.
func TestTargetFailedWhenEveryStartFailed(t *testing.T) {
	w := threeNodes(t)
	w.svcs["web"].Orchestrate = OrchestrateNo
	for _, n := range w.cluster {
		w.failStart[n+"/web"] = true
	}
	w.setTarget("web", target(dataset.ExpectStarted, ""))
	w.run("n1")
	if d := w.step("n2")["web"]; d.TargetFailed != "" {
		t.Fatalf("after n1's failure only: got failed %q, want none (n2 may start it)", d.TargetFailed)
	}
	w.rounds(4, time.Second)
	d := w.step("n2")["web"]
	for _, n := range w.cluster {
		want := "start failed on " + n + ": app#main: start failed: exit code 1: boom on " + n
		if !strings.Contains(d.TargetFailed, want) {
			w.dumpLog()
			t.Fatalf("target failed %q does not say %q", d.TargetFailed, want)
		}
	}
	if targetCleared(w, "web") || d.TargetReached {
		t.Fatal("a failed target was cleared or reached: it stays for clear")
	}
	// clear after the fix: the target goes on
	for _, n := range w.cluster {
		w.failStart[n+"/web"] = false
		w.setInst(n, "web", func(i *dataset.Instance) { i.Monitor = Clear(i.Monitor, w.now) })
		if e := w.inst(n, "web").Monitor.Error; e != "" {
			t.Fatalf("clear kept the error %q", e)
		}
	}
	w.rounds(3, time.Second)
	if got := w.upOn("web"); fmt.Sprint(got) != "[n1]" || !targetCleared(w, "web") {
		w.dumpLog()
		t.Fatalf("after clear: up on %v cleared %v", got, targetCleared(w, "web"))
	}
}

// A stop that failed where the service runs makes stopped and placed
// targets fail at once; the stop is not run again.
func TestTargetFailedWhenAStopFailed(t *testing.T) {
	for _, tg := range []dataset.Target{{Expect: dataset.ExpectStopped}, {Expect: dataset.ExpectPlaced, Node: "n2"}} {
		w := runningOn(t, "n1")
		w.failStop["n1/web"] = true
		w.setTarget("web", target(tg.Expect, tg.Node))
		w.rounds(6, time.Second)
		if k := count(w, "n1 web stop"); k != 1 {
			w.dumpLog()
			t.Fatalf("%s: the stop ran %d times, want once", tg, k)
		}
		d := w.step("n3")["web"]
		if want := "stop failed on n1: app#main: still up after its stop on n1"; d.TargetFailed != want {
			w.dumpLog()
			t.Fatalf("%s: target failed %q, want %q", tg, d.TargetFailed, want)
		}
		if got := w.upOn("web"); fmt.Sprint(got) != "[n1]" {
			t.Fatalf("%s: up on %v, want [n1] (nothing started beside a failed stop)", tg, got)
		}
	}
}

// A node shut down cleanly (its last data: shutting, its instance down)
// runs nothing: a stop is pending on it only (answered, kept for it); a
// node whose shutdown was cut short (its last data: shutting, the instance
// still stopping or up) stays unknown.
func TestTargetPendingOnANodeShutDown(t *testing.T) {
	w := runningOn(t, "n1")
	w.setNode("n3", func(v *placement.NodeView) { v.Status = dataset.NodeDown; v.Data.Monitor = dataset.NodeShutting })
	w.setTarget("web", target(dataset.ExpectStopped, ""))
	w.rounds(4, time.Second)
	d := w.step("n1")["web"]
	if d.TargetReached || fmt.Sprint(d.TargetPending) != "[n3]" || len(d.TargetUnknown) != 0 {
		w.dumpLog()
		t.Fatalf("stop with n3 shut down: reached %v pending %v unknown %v; want pending on n3 only", d.TargetReached, d.TargetPending, d.TargetUnknown)
	}
	if p := Progress(w.snap("n1"), "web"); p != "n1 down (frozen), n2 down (frozen), n3 down (shut down)" {
		t.Fatalf("progress: got %q", p)
	}
	if u := Unknown(w.snap("n1"), "web"); len(u) != 0 {
		t.Fatalf("unknown %v, want none", u)
	}
	// its shutdown cut short: the instance may still run
	for _, st := range []dataset.MonitorState{dataset.Stopping, dataset.StopFailed} {
		w.setInst("n3", "web", func(i *dataset.Instance) { i.Monitor.State = st })
		if d := w.step("n1")["web"]; d.TargetReached || len(d.TargetPending) != 0 {
			t.Fatalf("n3 left %s: reached %v pending %v, want neither", st, d.TargetReached, d.TargetPending)
		}
	}
	w.setInst("n3", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Idle; i.Avail = dataset.StatusUp })
	if d := w.step("n1")["web"]; d.TargetReached || len(d.TargetPending) != 0 {
		t.Fatalf("n3 left with web up: reached %v pending %v, want neither", d.TargetReached, d.TargetPending)
	}
	// in maintenance (a daemon stop: its services keep running): unknown
	w.setInst("n3", "web", func(i *dataset.Instance) { i.Avail = dataset.StatusDown })
	w.setNode("n3", func(v *placement.NodeView) { v.Data.Monitor = dataset.NodeMaintenance })
	if d := w.step("n1")["web"]; d.TargetReached || len(d.TargetPending) != 0 {
		t.Fatalf("n3 gone after a daemon stop: reached %v pending %v, want neither", d.TargetReached, d.TargetPending)
	}
	// shut down with its instance frozen: it complies already
	w.setNode("n3", func(v *placement.NodeView) { v.Data.Monitor = dataset.NodeShutting })
	w.setInst("n3", "web", func(i *dataset.Instance) { i.Frozen = true })
	w.rounds(2, time.Second)
	if !targetCleared(w, "web") {
		w.dumpLog()
		t.Fatal("stop with n3 shut down, its instance frozen: not reached")
	}
}
