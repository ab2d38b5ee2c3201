package node

import (
	"testing"
	"time"

	"haven/dataset"
	"haven/internal/clock"
	"haven/node/instsm"
)

var ladderSpec = instsm.Spec{Local: true, Runnable: true, Monitored: true, MonitorAction: MonitorActionSwitch,
	Resources: []instsm.ResourceSpec{{RID: "ip#vip"}, {RID: "app#main", Monitor: true, Restart: 2, RestartDelay: time.Second}}}

// startedCore is a core whose instance of web was started here and is up
// (ip#vip and app#main), at the fake clock's now.
func startedCore(t *testing.T, fc *clock.Fake, st State) *Core {
	t.Helper()
	return startedCoreSpec(t, fc, st, ladderSpec)
}

// startedCoreSpec is startedCore with the instance spec given.
func startedCoreSpec(t *testing.T, fc *clock.Fake, st State, spec instsm.Spec) *Core {
	t.Helper()
	c := New(Config{Name: "n1", MonitorInterval: 5 * time.Second, CheckInterval: time.Minute, WriteThrough: true}, st)
	c.addInstance("web", spec, fc.Now())
	if st.Services["web"].LocalExpect == "" {
		if _, err := c.runAction("web", "start", "test", fc.Now()); err != nil {
			t.Fatal(err)
		}
		c.Ready()
		c.actionDone("web", "start", nil, fc.Now())
	} else {
		c.checkNow("web")
	}
	check(t, c, fc, dataset.StatusUp)
	c.Ready()
	return c
}

// orderedCheck is the check of web the core ordered, one ordered now when
// none is pending.
func orderedCheck(t *testing.T, c *Core) Check {
	t.Helper()
	rd := c.Ready()
	if len(rd.Check) == 0 {
		c.checkNow("web")
		rd = c.Ready()
	}
	if len(rd.Check) != 1 {
		t.Fatalf("got checks %v, want one", rd.Check)
	}
	return rd.Check[0]
}

// check ends the check the core ordered (one is ordered when none is
// pending) with app#main at st.
func check(t *testing.T, c *Core, fc *clock.Fake, st dataset.Status) Ready {
	t.Helper()
	c.checkDone(orderedCheck(t, c), map[string]dataset.Resource{"ip#vip": {Status: dataset.StatusUp},
		"app#main": {Status: st, Monitor: true, Log: "pid gone"}}, fc.Now())
	return c.Ready()
}

func remaining(c *Core) (int, string) {
	r := c.Dataset(dataset.Node{}).Services["web"].Resources["app#main"]
	return r.RestartRemaining, r.LastFailure
}

// The ladder: a monitored resource found down is restarted alone,
// restart_delay later (restarting meanwhile); the restart is counted, the
// count survives a new core on the written state (a daemon restart), and
// is given back once the resource is up and the failure is older than the
// stabilisation time.
func TestLadderRestartsTheResourceAloneAndKeepsCount(t *testing.T) {
	fc := clock.NewFake(t0)
	c := startedCore(t, fc, State{})
	if n, _ := remaining(c); n != 2 {
		t.Fatalf("remaining %d, want 2", n)
	}
	fc.Advance(5 * time.Second)
	rd := check(t, c, fc, dataset.StatusDown)
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.Restarting {
		t.Fatalf("state %s, want restarting", info.Monitor.State)
	}
	if len(rd.Run) != 0 || !rd.WakeAt.Equal(fc.Now().Add(time.Second)) {
		t.Fatalf("got runs %v wake %v, want no run before the delay, a wake 1s later", rd.Run, rd.WakeAt)
	}
	fc.Advance(time.Second)
	c.pass(fc.Now())
	rd = c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "restart" || rd.Run[0].RID != "app#main" || rd.Persist == nil {
		t.Fatalf("got runs %+v persist %v, want a restart of app#main alone, persisted", rd.Run, rd.Persist != nil)
	}
	if n, last := remaining(c); n != 1 || last != "check says down: pid gone" {
		t.Fatalf("remaining %d last %q, want 1 and the check's line", n, last)
	}
	c.actionDone("web", "restart", nil, fc.Now())
	check(t, c, fc, dataset.StatusUp)
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.Idle || info.Busy != "" {
		t.Fatalf("got %+v, want idle after the restart", info.Monitor)
	}
	// a daemon restart: the count is still spent
	c2 := startedCore(t, fc, c.State().Clone())
	if n, _ := remaining(c2); n != 1 {
		t.Fatalf("after a daemon restart: remaining %d, want 1 (counters are durable)", n)
	}
	// 59s after the failure (at +5s): still spent; 60s: given back
	fc.Advance(58 * time.Second)
	check(t, c2, fc, dataset.StatusUp)
	if n, _ := remaining(c2); n != 1 {
		t.Fatalf("remaining %d before the stabilisation time, want 1", n)
	}
	fc.Advance(time.Second)
	check(t, c2, fc, dataset.StatusUp)
	if n, _ := remaining(c2); n != 2 {
		t.Fatalf("remaining %d after the stabilisation time, want 2", n)
	}
}

// Restarts spent and no other candidate (the core knows no peer): the
// ladder gives up, with an event, and orders nothing more.
func TestLadderGivesUpWithoutCandidate(t *testing.T) {
	fc := clock.NewFake(t0)
	st := State{Services: map[string]ServiceState{"web": {LocalExpect: dataset.ExpectStarted,
		Restarts: map[string]RestartCount{"app#main": {Spent: 2, FailedAt: t0}}}}}
	c := startedCore(t, fc, st)
	rd := check(t, c, fc, dataset.StatusDown)
	var gave bool
	for _, e := range rd.Events {
		if g, ok := e.(LadderGaveUp); ok && g.Reason == "app#main down, 2 restarts spent: monitor_action switch not run: no other candidate node" {
			gave = true
		}
	}
	if !gave || len(rd.Run) != 0 || len(rd.NodeActions) != 0 {
		t.Fatalf("events %v runs %v node actions %v, want a give-up and nothing run", rd.Events, rd.Run, rd.NodeActions)
	}
	if ds := c.Dataset(dataset.Node{}).Services["web"]; ds.GaveUp == "" || ds.Excluded != "" {
		t.Fatalf("got gave_up %q excluded %q", ds.GaveUp, ds.Excluded)
	}
	// a clear gives the ladder back
	if !c.clearLocal("web", "admin clear", fc.Now()) {
		t.Fatal("clear found nothing to clear")
	}
	if n, _ := remaining(c); n != 2 || c.State().Services["web"].GaveUp != "" {
		t.Fatalf("after clear: remaining %d gave up %q", n, c.State().Services["web"].GaveUp)
	}
}

// A frozen instance is not restarted.
func TestLadderLeavesAFrozenInstance(t *testing.T) {
	fc := clock.NewFake(t0)
	c := startedCore(t, fc, State{})
	c.setFrozen("web", true, "test")
	c.Ready()
	rd := check(t, c, fc, dataset.StatusDown)
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.Idle || len(rd.Run) != 0 {
		t.Fatalf("got %s runs %v, want idle and nothing", info.Monitor.State, rd.Run)
	}
}

// A daemon that starts (after a crash of the node, or of the daemon with
// its apps) and finds its monitored resource down is not facing a failure
// of a running instance: the service may run elsewhere by now. The ladder
// neither restarts it nor gives up (a give-up would hold the service off
// this node for good: found by clusterbench failover -runs 2); the
// orchestrator decides.
func TestLadderIgnoresADownResourceFoundAtStart(t *testing.T) {
	fc := clock.NewFake(t0)
	st := State{Services: map[string]ServiceState{"web": {LocalExpect: dataset.ExpectStarted}}}
	c := New(Config{Name: "n1", MonitorInterval: 5 * time.Second, CheckInterval: time.Minute, WriteThrough: true}, st)
	c.addInstance("web", ladderSpec, fc.Now())
	c.checkNow("web")
	rd := check(t, c, fc, dataset.StatusDown)
	fc.Advance(2 * time.Second)
	c.pass(fc.Now())
	rd2 := c.Ready()
	for _, r := range append(rd.Run, rd2.Run...) {
		if r.Kind == "restart" {
			t.Fatalf("the ladder restarted %s, found down at start", r.RID)
		}
	}
	for _, e := range append(rd.Events, rd2.Events...) {
		if _, ok := e.(ResourceFailed); ok {
			t.Fatalf("a resource found down at start counted as a failure: %v", e)
		}
	}
	if info, _ := c.Instance("web"); info.Monitor.State == dataset.Restarting || c.held("web") {
		t.Fatalf("state %s gave up %q, want neither", info.Monitor.State, c.State().Services["web"].GaveUp)
	}
	// once seen up in this run, a failure climbs the ladder as before
	check(t, c, fc, dataset.StatusUp)
	fc.Advance(5 * time.Second)
	check(t, c, fc, dataset.StatusDown)
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.Restarting {
		t.Fatalf("after up then down: state %s, want restarting", info.Monitor.State)
	}
}
