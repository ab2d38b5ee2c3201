package node

import (
	"errors"
	"strings"
	"testing"
	"time"

	"haven/cli/render"
	"haven/config"
	"haven/dataset"
	"haven/internal/clock"
	"haven/monitor"
	"haven/node/instsm"
)

// pairSpec is web's instance for ladderPair: one monitored app, restart 1
// with a 1s delay, monitor_action none (the default).
var pairSpec = instsm.Spec{Local: true, Runnable: true, Monitored: true, MonitorAction: MonitorActionNone,
	Resources: []instsm.ResourceSpec{{RID: "app#main", Monitor: true, Restart: 1, RestartDelay: time.Second}}}

// ladderPair is a cluster of two cores, n1 and n2 (web: nodes n1 n2,
// orchestrate ha, nodes order: n1 leads), that heard each other at the
// fake clock's now, web checked down on both.
type ladderPair struct {
	t     *testing.T
	fc    *clock.Fake
	nodes map[string]*Core
	// runs are the orders each core gave, in order
	runs map[string][]Action
}

func newLadderPair(t *testing.T, fc *clock.Fake) *ladderPair {
	p := &ladderPair{t: t, fc: fc, nodes: map[string]*Core{}, runs: map[string][]Action{}}
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2"}, Orchestrate: "ha", Placement: "nodes order", Priority: 100}
	for _, name := range []string{"n1", "n2"} {
		l := &maLocal{name: name, svcs: map[string]*config.ServiceConfig{"web": cfg}}
		c := New(Config{Name: name, ClusterNodes: []string{"n1", "n2"}, Compat: 1, ReadyPeriod: 2 * time.Second,
			RejoinGrace: time.Minute, MaintenanceGrace: time.Minute, CheckInterval: time.Hour, MonitorInterval: 5 * time.Second,
			Local: l, WriteThrough: true}, State{})
		l.core = c
		c.addInstance("web", pairSpec, fc.Now())
		c.start(fc.Now())
		p.nodes[name] = c
		p.check(name, dataset.StatusDown)
	}
	for _, name := range []string{"n1", "n2"} {
		p.nodes[name].heartbeat(PeerEvent{Node: p.other(name), Kind: PeerUp}, fc.Now())
	}
	p.exchange()
	return p
}

func (p *ladderPair) other(name string) string {
	if name == "n1" {
		return "n2"
	}
	return "n1"
}

// drain takes the Ready of the core of name, recording its orders.
func (p *ladderPair) drain(name string) Ready {
	rd := p.nodes[name].Ready()
	p.runs[name] = append(p.runs[name], rd.Run...)
	return rd
}

// check runs a status check of web on name that finds app#main at st.
func (p *ladderPair) check(name string, st dataset.Status) {
	c := p.nodes[name]
	c.checkNow("web")
	rd := p.drain(name)
	if len(rd.Check) != 1 {
		p.t.Fatalf("%s: got checks %v, want one", name, rd.Check)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#main": {Status: st, Monitor: true}}, p.fc.Now())
	p.drain(name)
}

// exchange sends each core's dataset to the other, then runs a decision
// pass on both.
func (p *ladderPair) exchange() {
	send(p.nodes["n1"], p.nodes["n2"], p.fc.Now())
	send(p.nodes["n2"], p.nodes["n1"], p.fc.Now())
	for _, name := range []string{"n1", "n2"} {
		p.nodes[name].pass(p.fc.Now())
		p.drain(name)
	}
}

// finish ends the action in flight on name (nil: success) and the check
// that follows it, which finds app#main at st.
func (p *ladderPair) finish(name, kind string, err error, st dataset.Status) {
	c := p.nodes[name]
	c.actionDone("web", kind, err, p.fc.Now())
	rd := p.drain(name)
	if len(rd.Check) != 1 {
		p.t.Fatalf("%s: after the %s, got checks %v, want one", name, kind, rd.Check)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#main": {Status: st, Monitor: true}}, p.fc.Now())
	p.drain(name)
}

// step advances the clock by d, then exchanges.
func (p *ladderPair) step(d time.Duration) {
	p.fc.Advance(d)
	p.exchange()
}

// lastRun is the last order of name, or a zero Action.
func (p *ladderPair) lastRun(name string) Action {
	if r := p.runs[name]; len(r) > 0 {
		return r[len(r)-1]
	}
	return Action{}
}

// n2 runs web, its app dies, its restart fails, it gives up
// (monitor_action none); the leader n1 starts web; later the app dies on n1.
// Only n1, where the service runs and ran last, restarts it: n2, whose
// instance gave up, keeps no expectation to run and orders nothing.
func TestLadderOnlyWhereTheServiceRanLast(t *testing.T) {
	fc := clock.NewFake(t0)
	p := newLadderPair(t, fc)
	n1, n2 := p.nodes["n1"], p.nodes["n2"]
	// web runs on n2 (an admin start there)
	n1.setNodeFrozen(true, "test")
	p.drain("n1")
	if _, err := n2.runAction("web", "start", "test", fc.Now()); err != nil {
		t.Fatal(err)
	}
	p.drain("n2")
	p.finish("n2", "start", nil, dataset.StatusUp)
	p.exchange()
	n1.setNodeFrozen(false, "test")
	p.drain("n1")
	p.exchange()

	// the app dies on n2; its one restart fails: n2 gives up
	p.step(time.Second)
	p.check("n2", dataset.StatusDown)
	p.step(time.Second)
	if r := p.lastRun("n2"); r.Kind != "restart" || r.RID != "app#main" {
		t.Fatalf("n2: got %+v, want the restart of app#main", r)
	}
	p.finish("n2", "restart", errors.New("restart failed"), dataset.StatusDown)
	if n2.State().Services["web"].GaveUp == "" {
		t.Fatalf("n2 did not give up: %+v", n2.State().Services["web"])
	}
	if le := n2.insts["web"].Mon.LocalExpect; le != dataset.ExpectNone {
		t.Errorf("n2 gave up with local expect %q, want none", le)
	}
	if le := n2.State().Services["web"].LocalExpect; le != dataset.ExpectNone {
		t.Errorf("n2 gave up with a durable local expect %q, want none", le)
	}

	// the leader n1 starts web (after its ready window)
	p.exchange()
	p.step(3 * time.Second)
	if r := p.lastRun("n1"); r.Kind != "start" {
		t.Fatalf("n1: got %+v, want the start of web", r)
	}
	p.finish("n1", "start", nil, dataset.StatusUp)
	p.exchange()
	p.step(time.Second)

	// the app dies on n1: n1 restarts it, n2 does nothing
	n2runs := len(p.runs["n2"])
	p.check("n1", dataset.StatusDown)
	p.exchange()
	p.check("n2", dataset.StatusDown)
	p.exchange()
	for i := 0; i < 5; i++ {
		p.step(time.Second)
		p.check("n2", dataset.StatusDown)
	}
	if r := p.lastRun("n1"); r.Kind != "restart" || r.RID != "app#main" {
		t.Errorf("n1: got %+v, want the restart of app#main", r)
	}
	if got := p.runs["n2"][n2runs:]; len(got) != 0 {
		t.Errorf("n2, whose instance gave up, ordered %+v, want nothing", got)
	}
	if st := n2.insts["web"].Mon.State; st != dataset.Idle {
		t.Errorf("n2: monitor %s, want idle", st)
	}
}

// The same without a give-up: n2's instance is frozen when its app dies
// (the ladder leaves it), the leader n1 starts web, n2 is thawed; later the
// app dies on n1: n2, down while the service ran on n1, expects to run no
// more and orders nothing.
func TestLadderNotWhereTheServiceRanBefore(t *testing.T) {
	fc := clock.NewFake(t0)
	p := newLadderPair(t, fc)
	n1, n2 := p.nodes["n1"], p.nodes["n2"]
	n1.setNodeFrozen(true, "test")
	p.drain("n1")
	if _, err := n2.runAction("web", "start", "test", fc.Now()); err != nil {
		t.Fatal(err)
	}
	p.drain("n2")
	p.finish("n2", "start", nil, dataset.StatusUp)
	p.exchange()
	n2.setFrozen("web", true, "test")
	p.drain("n2")
	n1.setNodeFrozen(false, "test")
	p.drain("n1")
	p.exchange()

	p.step(time.Second)
	p.check("n2", dataset.StatusDown)
	p.exchange()
	p.step(3 * time.Second)
	if r := p.lastRun("n1"); r.Kind != "start" {
		t.Fatalf("n1: got %+v, want the start of web", r)
	}
	p.finish("n1", "start", nil, dataset.StatusUp)
	p.exchange()
	if le := n2.insts["web"].Mon.LocalExpect; le != dataset.ExpectNone {
		t.Errorf("n2, down while web runs on n1: local expect %q, want none", le)
	}
	n2.setFrozen("web", false, "test")
	p.drain("n2")
	p.step(time.Second)

	n2runs := len(p.runs["n2"])
	p.check("n1", dataset.StatusDown)
	p.exchange()
	for i := 0; i < 5; i++ {
		p.check("n2", dataset.StatusDown)
		p.step(time.Second)
	}
	if r := p.lastRun("n1"); r.Kind != "restart" || r.RID != "app#main" {
		t.Errorf("n1: got %+v, want the restart of app#main", r)
	}
	if got := p.runs["n2"][n2runs:]; len(got) != 0 {
		t.Errorf("n2, where web ran before n1, ordered %+v, want nothing", got)
	}
}

// A give-up drops the expectation to run; the resource found up again
// (it runs here again) gives back the ladder and the expectation.
func TestLadderGiveUpExpectsNothingUntilUpAgain(t *testing.T) {
	fc := clock.NewFake(t0)
	st := State{Services: map[string]ServiceState{"web": {LocalExpect: dataset.ExpectStarted,
		Restarts: map[string]RestartCount{"app#main": {Spent: 2, FailedAt: t0}}}}}
	c := startedCore(t, fc, st)
	check(t, c, fc, dataset.StatusDown)
	if ss := c.State().Services["web"]; ss.GaveUp == "" || ss.LocalExpect != dataset.ExpectNone {
		t.Fatalf("after the give-up: gave up %q local expect %q, want a reason and none", ss.GaveUp, ss.LocalExpect)
	}
	fc.Advance(5 * time.Second)
	check(t, c, fc, dataset.StatusUp)
	if ss := c.State().Services["web"]; ss.GaveUp != "" || ss.LocalExpect != dataset.ExpectStarted {
		t.Fatalf("up again: gave up %q local expect %q, want none and started", ss.GaveUp, ss.LocalExpect)
	}
}

// An instance whose ladder gave up is no candidate (docs/behaviour.md
// 1.1): n1 frozen, n2 gave up, so nobody starts web. svcmgr explain says
// so, on n2 and elsewhere (no leader, n2's verdict names the give-up); it
// promises no start, no ready window.
func TestExplainGaveUpNodeIsNoCandidate(t *testing.T) {
	fc := clock.NewFake(t0)
	p := newLadderPair(t, fc)
	n1, n2 := p.nodes["n1"], p.nodes["n2"]
	n1.setNodeFrozen(true, "test")
	p.drain("n1")
	if _, err := n2.runAction("web", "start", "test", fc.Now()); err != nil {
		t.Fatal(err)
	}
	p.drain("n2")
	p.finish("n2", "start", nil, dataset.StatusUp)
	p.step(time.Second)
	p.check("n2", dataset.StatusDown)
	p.step(time.Second)
	p.finish("n2", "restart", errors.New("restart failed"), dataset.StatusDown)
	p.exchange()
	n2runs := len(p.runs["n2"])
	for i := 0; i < 5; i++ {
		p.step(time.Second)
	}
	if got := p.runs["n2"][n2runs:]; len(got) != 0 || n2.State().Services["web"].GaveUp == "" {
		t.Fatalf("n2 gave up %q and ordered %+v, want a give-up and nothing", n2.State().Services["web"].GaveUp, got)
	}
	for _, c := range []*Core{n2, n1} {
		e, ok := monitor.Explain(c.Snapshot(fc.Now()), "web", false)
		if !ok {
			t.Fatal("no explanation")
		}
		out := render.Explain(&e)
		if e.Leader != "" || !strings.Contains(out, "leader: none: no node may start it now") ||
			!strings.Contains(out, "n2  nodes order #2  restart ladder gave up: app#main down") ||
			strings.Contains(out, "would start it now") {
			t.Errorf("explain on %s: leader %q, want none and n2's give-up in its verdict:\n%s", c.name(), e.Leader, out)
		}
		if c != n2 {
			continue
		}
		m := e.Monitor
		if m.Next != dataset.Idle || m.Action != "" || !m.ReadyUntil.IsZero() || !m.Deadline.IsZero() ||
			strings.Contains(out, "ready") || !strings.Contains(out, "held by: not a candidate: restart ladder gave up") {
			t.Errorf("explain on n2 promises a start (next %s, ready until %v):\n%s", m.Next, m.ReadyUntil, out)
		}
	}
	// a clear: n2 is a candidate again, the leader, and starts it
	n2.clearLocal("web", "test", fc.Now())
	p.drain("n2")
	for i := 0; i < 3; i++ {
		p.step(time.Second)
	}
	if r := p.lastRun("n2"); r.Kind != "start" {
		t.Fatalf("after the clear n2 ordered %+v, want the start", r)
	}
}
