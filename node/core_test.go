package node

import (
	"errors"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/internal/clock"
	"haven/monitor"
	"haven/node/instsm"
)

var t0 = clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)).Now()

func newCore(name string) *Core {
	c := New(Config{Name: name, WriteThrough: true}, State{})
	c.install("web")
	c.Ready()
	return c
}

// localWebChecked installs a local, runnable web and ends its first check
// with status.
func localWebChecked(c *Core, status dataset.Status) {
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.checkNow("web")
	rd := c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: status}}, t0)
	c.Ready()
}

func noSnap() monitor.Snapshot { return monitor.Snapshot{Now: t0} }

// answers returns the answers of the next Ready by ticket.
func answers(c *Core) map[Ticket]Answer {
	out := map[Ticket]Answer{}
	for _, a := range c.Ready().Answers {
		out[a.Ticket] = a
	}
	return out
}

func TestAdminTargetPersistsThenAnswers(t *testing.T) {
	c := newCore("n1")
	tk := c.adminTarget(TargetRequest{Service: "web", Action: "stop"})
	rd := c.Ready()
	if rd.Persist == nil || rd.Persist.Services["web"].Target.Expect != dataset.ExpectStopped {
		t.Fatalf("got Persist %+v, want the new target to write", rd.Persist)
	}
	if !rd.Publish || len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil {
		t.Fatalf("got publish %v answers %+v, want one success for ticket %d", rd.Publish, rd.Answers, tk)
	}
	if got, want := rd.Answers[0].Result, "target stopped accepted (id n1-1)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, ok := rd.Events[0].(TargetSet); !ok {
		t.Fatalf("got events %v, want a TargetSet first", rd.Events)
	}
	// another target while one is in progress is refused
	tk = c.adminTarget(TargetRequest{Service: "web", Action: "start"})
	if a := answers(c)[tk]; a.Err == nil || !strings.Contains(a.Err.Error(), "in progress") {
		t.Fatalf("got %+v, want a refusal: a target is in progress", a)
	}
}

func TestWaitAnsweredWhenReached(t *testing.T) {
	c := newCore("n1")
	tk := c.adminTarget(TargetRequest{Service: "web", Action: "stop", Wait: true})
	if a, ok := answers(c)[tk]; ok {
		t.Fatalf("got an answer %+v before the target is reached", a)
	}
	c.targetReached("web", nil, noSnap())
	a, ok := answers(c)[tk]
	if !ok || a.Err != nil || a.Result != "target stopped reached (id n1-1)" {
		t.Fatalf("got %+v (answered %v), want reached", a, ok)
	}
	if c.Target("web").Expect != dataset.ExpectNone || c.Waiters() != 0 {
		t.Fatalf("got target %v and %d waiters, want none", c.Target("web"), c.Waiters())
	}
}

func TestMergeTargetsNewerWinsAndWitness(t *testing.T) {
	c := newCore("n1")
	peer := dataset.Target{Expect: dataset.ExpectStarted, ID: "n2-7", Version: dataset.Version{Counter: 7, Origin: "n2"}}
	c.mergeTargets("n2", map[string]dataset.Target{"web": peer, "unknown": peer}, t0, noSnap)
	rd := c.Ready()
	if c.Target("web") != peer || rd.Persist == nil || rd.Persist.Lamport != 7 {
		t.Fatalf("got target %v lamport %d, want the peer's and 7", c.Target("web"), c.State().Lamport)
	}
	if _, ok := c.State().Services["unknown"]; ok {
		t.Fatal("a target of a service unknown here was adopted")
	}
	old := peer
	old.Version.Counter = 3
	c.mergeTargets("n2", map[string]dataset.Target{"web": old}, t0, noSnap)
	if c.Target("web") != peer {
		t.Fatalf("an older target replaced a newer one: %v", c.Target("web"))
	}
	if v := c.nextVersion(); v.Counter != 8 {
		t.Fatalf("got version %d after witnessing 7, want 8", v.Counter)
	}
}

func TestRestoreFailsUndoneWaitersKeepsLamport(t *testing.T) {
	c := newCore("n1")
	good := c.State().Clone()
	tk := c.adminTarget(TargetRequest{Service: "web", Action: "stop", Wait: true})
	c.Ready()
	lamport := c.State().Lamport
	c.restore(good, errors.New("read-only file system"))
	a, ok := answers(c)[tk]
	if !ok || a.Err == nil || !strings.Contains(a.Err.Error(), "read-only") {
		t.Fatalf("got %+v (answered %v), want the write error", a, ok)
	}
	if c.State().Lamport != lamport || c.Target("web").ID != "" {
		t.Fatalf("got lamport %d (want %d) target %v (want undone)", c.State().Lamport, lamport, c.Target("web"))
	}
}

// monitorEvents returns the monitor changes of the next Ready.
func monitorEvents(c *Core) []string {
	var out []string
	for _, e := range c.Ready().Events {
		if m, ok := e.(InstanceMonitor); ok {
			out = append(out, string(m.From)+">"+string(m.To))
		}
	}
	return out
}

// failStart ends the start of web with an error: the commands fail, the
// check that follows says down.
func failStart(t *testing.T, c *Core) {
	t.Helper()
	c.actionDone("web", "start", errors.New("boom"), t0)
	rd := c.Ready()
	if len(rd.Check) != 1 || !rd.Check[0].Full {
		t.Fatalf("got checks %v, want one full check after the action", rd.Check)
	}
	if b := c.Busy("web"); b != "start" {
		t.Fatalf("busy %q before the check ended, want start", b)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
}

func TestClearAppliesOnceAndHere(t *testing.T) {
	c := newCore("n1")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	if _, err := c.runAction("web", "start", "test", t0); err != nil {
		t.Fatal(err)
	}
	if rd := c.Ready(); len(rd.Run) != 1 || rd.Run[0] != (Action{Kind: "start", Service: "web", Reason: "test", FencingToken: 1}) {
		t.Fatalf("got Run %v, want the start of web", rd.Run)
	}
	if _, err := c.runAction("web", "stop", "test", t0); err == nil {
		t.Fatal("a second action while one runs was accepted")
	}
	failStart(t, c)
	if got := monitorEvents(c); len(got) != 1 || got[0] != "starting>start failed" {
		t.Fatalf("got %v, want starting>start failed", got)
	}
	if !c.State().Services["web"].StartFailed {
		t.Fatal("start failed not recorded in the durable state")
	}
	cr := dataset.ClearRequest{Version: dataset.Version{Counter: 20, Origin: "n2"}}
	c.mergeClears("n2", map[string]dataset.ClearRequest{"web": cr}, t0)
	if got := monitorEvents(c); len(got) != 1 || got[0] != "start failed>idle" {
		t.Fatalf("got %v, want start failed>idle", got)
	}
	if _, err := c.runAction("web", "start", "test", t0); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	failStart(t, c)
	c.Ready()
	c.mergeClears("n2", map[string]dataset.ClearRequest{"web": cr}, t0)
	if got := monitorEvents(c); len(got) != 0 {
		t.Fatalf("a clear applied twice: %v", got)
	}
	c.applyClear("web", dataset.ClearRequest{Node: "n3", Version: dataset.Version{Counter: 30, Origin: "n2"}}, t0)
	if rd := c.Ready(); len(rd.Events) != 0 || rd.Persist == nil {
		t.Fatalf("a clear of n3 acted here (%v) or was not recorded", rd.Events)
	}
}

func TestWaiterExpiresWithProgress(t *testing.T) {
	c := newCore("n1")
	tk := c.adminTarget(TargetRequest{Service: "web", Action: "stop", Wait: true, Deadline: t0.Add(time.Second)})
	c.Ready()
	if next := c.expireWaiters(t0, noSnap()); !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("got next %v, want the deadline", next)
	}
	c.expireWaiters(t0.Add(time.Second), noSnap())
	if a := answers(c)[tk]; a.Err == nil || !strings.Contains(a.Err.Error(), "timed out") {
		t.Fatalf("got %+v, want a time out", a)
	}
}

// A stop whose commands succeed but whose check still says up fails: the
// check wins, the caller is told which resource.
func TestStopThatLeavesAResourceUpFails(t *testing.T) {
	c := newCore("n1")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	tk, err := c.runAction("web", "stop", "test", t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Ready()
	c.actionDone("web", "stop", nil, t0)
	rd := c.Ready()
	if len(rd.Check) != 1 {
		t.Fatalf("got checks %v, want one", rd.Check)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp, Log: "still here"}}, t0)
	rd = c.Ready()
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err == nil ||
		!strings.Contains(rd.Answers[0].Err.Error(), "app#1: its check still says up after its stop (last line: still here)") {
		t.Fatalf("got %+v, want the stop failed naming app#1", rd.Answers)
	}
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.StopFailed || info.Busy != "" || info.Avail != dataset.StatusUp {
		t.Fatalf("got %+v, want stop failed, not busy, avail up", info)
	}
}

// The result of a check made before a config change is not used: a new
// check is ordered.
func TestStaleCheckIsMadeAgain(t *testing.T) {
	c := newCore("n1")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.checkNow("web")
	old := c.Ready().Check[0]
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0) // a new config
	c.checkDone(old, map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	rd := c.Ready()
	if len(rd.Check) != 1 || rd.Check[0].Gen == old.Gen {
		t.Fatalf("got checks %v, want a new one of the new generation", rd.Check)
	}
	if avail, _ := c.Status("web"); avail != dataset.StatusUnknown {
		t.Fatalf("a stale check set the status to %s", avail)
	}
}

// stop --local freezes, then stops; the answer comes when the stop ends.
// When the freeze cannot be written, the stop does not run: the driver
// aborts it and the caller gets the error.
func TestStopLocalAnswersAtTheEndOrIsAborted(t *testing.T) {
	c := newCore("n1")
	localWebChecked(c, dataset.StatusUp)

	tk := c.adminLocal(LocalRequest{Service: "web", Action: "stop", Now: t0})
	rd := c.Ready()
	if rd.Persist == nil || !rd.Persist.Services["web"].Frozen || len(rd.Run) != 1 || len(rd.Answers) != 0 {
		t.Fatalf("got persist %v run %v answers %v, want the freeze to write, the stop ordered, no answer yet", rd.Persist, rd.Run, rd.Answers)
	}
	c.actionAborted("web", "stop", errors.New("read-only file system"), t0)
	rd = c.Ready()
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err == nil {
		t.Fatalf("got %+v, want the write error for ticket %d", rd.Answers, tk)
	}
	if info, _ := c.Instance("web"); info.Busy != "" || info.Monitor.State != dataset.Idle {
		t.Fatalf("after the abort: %+v, want idle and not busy", info)
	}

	tk = c.adminLocal(LocalRequest{Service: "web", Action: "stop", Now: t0})
	c.Ready()
	c.actionDone("web", "stop", nil, t0)
	rd = c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	rd = c.Ready()
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil || rd.Answers[0].Result != "stopped and frozen" {
		t.Fatalf("got %+v, want stopped and frozen for ticket %d", rd.Answers, tk)
	}
}

// drain freezes the node, stops what runs, and answers once every stop
// ended; the node monitor says draining meanwhile.
func TestDrain(t *testing.T) {
	c := newCore("n1")
	for _, svc := range []string{"a", "b", "c"} {
		c.addInstance(svc, instsm.Spec{Local: true, Runnable: true}, t0)
		c.checkNow(svc)
		st := dataset.StatusUp
		if svc == "c" {
			st = dataset.StatusDown
		}
		c.checkDone(c.Ready().Check[0], map[string]dataset.Resource{"app#1": {Status: st}}, t0)
	}
	c.Ready()
	tk := c.adminNode("drain", t0)
	rd := c.Ready()
	if len(rd.Run) != 2 || !c.NodeFrozen() || c.NodeMonitor() != dataset.NodeDraining {
		t.Fatalf("got run %v frozen %v monitor %s, want a and b stopped, frozen, draining", rd.Run, c.NodeFrozen(), c.NodeMonitor())
	}
	for i, svc := range []string{"a", "b"} {
		var err error
		if svc == "b" {
			err = errors.New("boom")
		}
		c.actionDone(svc, "stop", err, t0)
		c.checkDone(c.Ready().Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
		rd = c.Ready()
		if i == 0 && len(rd.Answers) != 0 {
			t.Fatalf("answered %v before every stop ended", rd.Answers)
		}
	}
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err == nil || !strings.Contains(rd.Answers[0].Err.Error(), "boom") {
		t.Fatalf("got %+v, want the drain answered with b's error", rd.Answers)
	}
	if c.NodeMonitor() != dataset.NodeIdle {
		t.Fatalf("node monitor %s after the drain, want idle", c.NodeMonitor())
	}
}

// A shutdown that comes while a start runs stops the instance once the
// start has ended, so that the daemon never exits with a service it just
// started running (found by the chaos suite's SimulStart: the shutdown
// stopped only the instances already running).
func TestShutdownStopsAStartInFlight(t *testing.T) {
	c := newCore("n1")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.checkNow("web")
	c.checkDone(c.Ready().Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	c.Ready()
	if _, err := c.runAction("web", "start", "admin start --local", t0); err != nil {
		t.Fatal(err)
	}
	if rd := c.Ready(); len(rd.Run) != 1 || rd.Run[0].Kind != "start" {
		t.Fatalf("got run %+v, want the start", rd.Run)
	}
	c.beginStop("shutdown", t0)
	if rd := c.Ready(); len(rd.Run) != 0 {
		t.Fatalf("got run %+v while the start runs, want nothing yet", rd.Run)
	}
	c.actionDone("web", "start", nil, t0)
	c.checkDone(c.Ready().Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	rd := c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "stop" || !c.AnyBusy() {
		t.Fatalf("after the start ended during a shutdown: run %+v busy %v, want its stop", rd.Run, c.AnyBusy())
	}
}

// A node removed from the service's nodes while the instance runs there
// stops it, in the core (it was the daemon's decision, which the
// simulation did not make); an instance that is down is left alone.
func TestNodeRemovedFromTheServiceStopsItsInstance(t *testing.T) {
	c := newCore("n1")
	localWebChecked(c, dataset.StatusUp)

	c.addInstance("web", instsm.Spec{Local: false}, t0)
	rd := c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "stop" || rd.Run[0].Reason != "this node was removed from the service's nodes" {
		t.Fatalf("got run %+v, want the stop of the removed instance", rd.Run)
	}
	if info, _ := c.Instance("web"); info.Busy != "stop" || info.Monitor.State != dataset.Stopping {
		t.Fatalf("got %+v, want busy stop, stopping", info)
	}
	c.actionDone("web", "stop", nil, t0)
	rd = c.Ready()
	for _, ck := range rd.Check {
		c.checkDone(ck, nil, t0) // the drivers are gone: a stale check
	}
	c.Ready()
	if info, _ := c.Instance("web"); info.Busy != "" {
		t.Fatalf("after the stop: %+v, want not busy", info)
	}

	// down, then removed: nothing to stop
	d := newCore("n1")
	localWebChecked(d, dataset.StatusDown)
	d.addInstance("web", instsm.Spec{Local: false}, t0)
	if rd = d.Ready(); len(rd.Run) != 0 {
		t.Fatalf("a down instance removed from the nodes: run %+v, want none", rd.Run)
	}
}

// Removed from the service's nodes while a start runs here: once the start
// ended up, the instance is stopped (it was left running, unpublished).
func TestNodeRemovedDuringAStartStopsItAfterwards(t *testing.T) {
	c := newCore("n1")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	if _, err := c.runAction("web", "start", "test", t0); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	c.addInstance("web", instsm.Spec{Local: false}, t0)
	if rd := c.Ready(); len(rd.Run) != 0 {
		t.Fatalf("a stop ordered while the start runs: %+v", rd.Run)
	}
	c.actionDone("web", "start", nil, t0)
	rd := c.Ready()
	if len(rd.Check) != 1 {
		t.Fatalf("got checks %v, want the check that ends the start (old drivers)", rd.Check)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	rd = c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "stop" || rd.Run[0].Reason != "this node was removed from the service's nodes" {
		t.Fatalf("after the start ended up: run %+v, want the stop of the removed instance", rd.Run)
	}
	if _, ok := c.Dataset(dataset.Node{}).Services["web"]; !ok {
		t.Fatal("the removed instance, still running, is not published")
	}
	c.actionDone("web", "stop", nil, t0)
	rd = c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	c.Ready()
	if _, ok := c.Dataset(dataset.Node{}).Services["web"]; ok {
		t.Fatal("the removed instance is still published after its stop")
	}
}
