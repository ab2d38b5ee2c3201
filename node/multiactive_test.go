package node

import (
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/clock"
	"haven/node/instsm"
)

// maLocal is a driver's part of a node for the tests: its name, labels
// and service configs; the core fills the rest (Dataset).
type maLocal struct {
	name string
	core *Core
	svcs map[string]*config.ServiceConfig
}

func (l *maLocal) LocalInfo() dataset.Node {
	return dataset.Node{Name: l.name, Services: map[string]dataset.Instance{}}
}
func (l *maLocal) LocalServices() map[string]*config.ServiceConfig { return l.svcs }

// testNode is a core with web (nodes n1 n2 n3, orchestrate ha, the given
// multiple_active) installed and checked: up when up is true.
func maNode(t *testing.T, name, rule string, up bool, now time.Time) *Core {
	t.Helper()
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}, Orchestrate: "ha",
		Placement: "nodes order", MultipleActive: rule, Priority: 100}
	l := &maLocal{name: name, svcs: map[string]*config.ServiceConfig{"web": cfg}}
	c := New(Config{Name: name, ClusterNodes: []string{"n1", "n2", "n3"}, Compat: 1, ReadyPeriod: 2 * time.Second,
		RejoinGrace: time.Minute, MaintenanceGrace: time.Minute, CheckInterval: time.Hour, MonitorInterval: time.Hour, Local: l, WriteThrough: true}, State{})
	l.core = c
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, now)
	c.checkNow("web")
	rd := c.Ready()
	st := dataset.StatusDown
	if up {
		st = dataset.StatusUp
		c.setLocalState("web", false, dataset.ExpectStarted)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#main": {Status: st}}, now)
	c.Ready()
	return c
}

// peerData is the dataset a peer announces: idle, web up or down.
func maPeer(name string, webUp, frozen bool) *dataset.Node {
	st := dataset.StatusDown
	le := dataset.ExpectNone
	if webUp {
		st, le = dataset.StatusUp, dataset.ExpectStarted
	}
	return &dataset.Node{Name: name, Monitor: dataset.NodeIdle, Compat: 1, Services: map[string]dataset.Instance{
		"web": {Avail: st, Overall: st, Frozen: frozen, Monitor: dataset.InstanceMonitor{State: dataset.Idle, LocalExpect: le}}}}
}

// hear gives c a peer's data (up, then its data).
func maHear(c *Core, d *dataset.Node, now time.Time) {
	c.heartbeat(PeerEvent{Node: d.Name, Kind: PeerUp}, now)
	c.heartbeat(PeerEvent{Node: d.Name, Kind: PeerData, Data: d}, now)
}

// pass runs a decision pass and returns its Ready.
func maPass(c *Core, now time.Time) Ready {
	c.pass(now)
	return c.Ready()
}

func maResolveEvent(rd Ready) (MultipleActiveResolve, bool) {
	for _, e := range rd.Events {
		if r, ok := e.(MultipleActiveResolve); ok {
			return r, true
		}
	}
	return MultipleActiveResolve{}, false
}

func maStops(rd Ready) int {
	n := 0
	for _, a := range rd.Run {
		if a.Kind == "stop" && a.Service == "web" {
			n++
		}
	}
	return n
}

// n2 runs web, n1 (first in the nodes order) too: n2 stops its own, only
// once the situation lasted ready_period, and says so loudly.
func TestMultipleActiveStopsOwnExtraAfterSettle(t *testing.T) {
	clk := clock.NewFake(t0)
	c := maNode(t, "n2", "", true, clk.Now())
	maHear(c, maPeer("n1", true, false), clk.Now())
	maHear(c, maPeer("n3", false, false), clk.Now())
	rd := maPass(c, clk.Now())
	var seen bool
	for _, e := range rd.Events {
		if m, ok := e.(MultipleActive); ok {
			seen = strings.Join(m.Nodes, ",") == "n1,n2" && m.Rule == MultipleActiveStopOthers
		}
	}
	if !seen || maStops(rd) != 0 {
		t.Fatalf("got events %v and %d stops, want the multiple-active event and no stop yet", rd.Events, maStops(rd))
	}
	if want := clk.Now().Add(2 * time.Second); !rd.WakeAt.Equal(want) {
		t.Fatalf("got WakeAt %v, want the end of the settle %v", rd.WakeAt, want)
	}
	clk.Advance(1900 * time.Millisecond)
	if rd := maPass(c, clk.Now()); maStops(rd) != 0 {
		t.Fatalf("stopped before ready_period: %+v", rd.Run)
	}
	clk.Advance(100 * time.Millisecond)
	rd = maPass(c, clk.Now())
	e, ok := maResolveEvent(rd)
	if maStops(rd) != 1 || !ok || e.Kept != "n1" || e.Level() != Error {
		t.Fatalf("got run %+v event %+v, want n2's stop and an error-level event keeping n1", rd.Run, e)
	}
	for _, want := range []string{"up on n1,n2", "multiple_active = stop_others keeps n1", "stopping the instance here"} {
		if !strings.Contains(e.String(), want) {
			t.Fatalf("event %q does not say %q", e.String(), want)
		}
	}
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.Stopping || info.Busy != "stop" {
		t.Fatalf("got monitor %s busy %q, want stopping", info.Monitor.State, info.Busy)
	}
	// once: no second stop while the situation lasts
	clk.Advance(5 * time.Second)
	if rd := maPass(c, clk.Now()); maStops(rd) != 0 {
		t.Fatalf("stopped twice: %+v", rd.Run)
	}
}

// The keeper does nothing but say so; a node that does not run it says
// who stops.
func TestMultipleActiveKeeperAndObserverStopNothing(t *testing.T) {
	for _, tc := range []struct {
		local  string
		runs   bool
		action string
	}{
		{"n1", true, "kept here; n2 stops its own"},
		{"n3", false, "stopped by n2"},
	} {
		clk := clock.NewFake(t0)
		c := maNode(t, tc.local, "", tc.runs, clk.Now())
		for _, p := range []string{"n1", "n2", "n3"} {
			if p != tc.local {
				maHear(c, maPeer(p, p != "n3", false), clk.Now())
			}
		}
		maPass(c, clk.Now())
		clk.Advance(2 * time.Second)
		rd := maPass(c, clk.Now())
		e, ok := maResolveEvent(rd)
		if maStops(rd) != 0 || !ok || e.Kept != "n1" || e.Action != tc.action {
			t.Fatalf("%s: got run %+v event %+v, want no stop and %q", tc.local, rd.Run, e, tc.action)
		}
	}
}

// A peer that comes back is not counted on its data from before the
// split: nothing is decided until it is heard again, then the settle
// starts.
func TestMultipleActiveWaitsForFreshData(t *testing.T) {
	clk := clock.NewFake(t0)
	c := maNode(t, "n2", "", true, clk.Now())
	maHear(c, maPeer("n1", true, false), clk.Now())
	maHear(c, maPeer("n3", false, false), clk.Now())
	// n1 lost, n2 ran web meanwhile; n1 comes back with no data yet
	c.heartbeat(PeerEvent{Node: "n1", Kind: PeerDown}, clk.Now())
	c.Ready()
	clk.Advance(10 * time.Second)
	c.heartbeat(PeerEvent{Node: "n1", Kind: PeerUp}, clk.Now())
	rd := maPass(c, clk.Now())
	for _, e := range rd.Events {
		if _, ok := e.(MultipleActive); ok {
			t.Fatalf("multiple active on n1's data from before the split: %v", e)
		}
	}
	clk.Advance(5 * time.Second)
	if rd := maPass(c, clk.Now()); maStops(rd) != 0 {
		t.Fatalf("stopped on stale data: %+v", rd.Run)
	}
	// n1 is heard: web still runs there
	c.heartbeat(PeerEvent{Node: "n1", Kind: PeerData, Data: maPeer("n1", true, false)}, clk.Now())
	if rd := maPass(c, clk.Now()); maStops(rd) != 0 {
		t.Fatalf("stopped at once on the first fresh data: %+v", rd.Run)
	}
	clk.Advance(2 * time.Second)
	if rd := maPass(c, clk.Now()); maStops(rd) != 1 {
		t.Fatalf("got run %+v, want the stop ready_period after fresh data", rd.Run)
	}
}

// A node running it that is not available (rejoin) holds the decision:
// its rank is not yet the one every node will compute; so does one that
// runs another release (a rolling upgrade: that release may rank the
// instances otherwise).
func TestMultipleActiveWaitsForAvailablePeer(t *testing.T) {
	for name, hold := range map[string]func(*dataset.Node){
		"rejoin":          func(d *dataset.Node) { d.Monitor = dataset.NodeRejoin },
		"another release": func(d *dataset.Node) { d.Format.Release = "0.9" },
	} {
		clk := clock.NewFake(t0)
		c := maNode(t, "n2", "", true, clk.Now())
		d := maPeer("n1", true, false)
		hold(d)
		maHear(c, d, clk.Now())
		maHear(c, maPeer("n3", false, false), clk.Now())
		maPass(c, clk.Now())
		clk.Advance(10 * time.Second)
		if rd := maPass(c, clk.Now()); maStops(rd) != 0 {
			t.Fatalf("%s: stopped while n1 holds it: %+v", name, rd.Run)
		}
		maHear(c, maPeer("n1", true, false), clk.Now())
		maPass(c, clk.Now())
		clk.Advance(2 * time.Second)
		if rd := maPass(c, clk.Now()); maStops(rd) != 1 {
			t.Fatalf("%s: got run %+v, want the stop once n1 is idle, on this release, for ready_period", name, rd.Run)
		}
	}
}

// freeze freezes the local instance and stops nothing; warn only logs.
func TestMultipleActiveFreezeAndWarn(t *testing.T) {
	for _, rule := range []string{MultipleActiveFreeze, MultipleActiveWarn} {
		clk := clock.NewFake(t0)
		c := maNode(t, "n2", rule, true, clk.Now())
		maHear(c, maPeer("n1", true, false), clk.Now())
		maHear(c, maPeer("n3", false, false), clk.Now())
		maPass(c, clk.Now())
		clk.Advance(2 * time.Second)
		rd := maPass(c, clk.Now())
		e, ok := maResolveEvent(rd)
		if maStops(rd) != 0 || !ok || e.Rule != rule {
			t.Fatalf("%s: got run %+v event %+v, want no stop and the event", rule, rd.Run, e)
		}
		if got, want := c.Frozen("web"), rule == MultipleActiveFreeze; got != want {
			t.Fatalf("%s: frozen %v, want %v", rule, got, want)
		}
		if rule == MultipleActiveFreeze && rd.Persist == nil {
			t.Fatalf("freeze not persisted")
		}
	}
}

// Every node computes the same keeper from the same data: an unstoppable
// (frozen) instance first; between instances alike (no token here), the
// placement rank among the running nodes.
func TestKeeperIsTheSameEverywhere(t *testing.T) {
	clk := clock.NewFake(t0)
	// n1 frozen on n2 and n3 running: n1 ranks last in placement (frozen)
	// but cannot be stopped: it is kept
	views := map[string]*Core{}
	for _, n := range []string{"n2", "n3"} {
		c := maNode(t, n, "", true, clk.Now())
		for _, p := range []string{"n1", "n2", "n3"} {
			if p != n {
				maHear(c, maPeer(p, true, p == "n1"), clk.Now())
			}
		}
		views[n] = c
	}
	for n, c := range views {
		s := c.Snapshot(clk.Now())
		if k, _ := Keeper(s, "web", runningNodes(s, "web")); k != "n1" {
			t.Fatalf("%s computes keeper %s, want the frozen n1", n, k)
		}
	}
	// without the freeze, n2 and n3 see the nodes order: n1 still, and a
	// service whose nodes order is n3 first keeps n3
	c := maNode(t, "n2", "", true, clk.Now())
	maHear(c, maPeer("n1", true, false), clk.Now())
	maHear(c, maPeer("n3", true, false), clk.Now())
	s := c.Snapshot(clk.Now())
	if k, _ := Keeper(s, "web", []string{"n2", "n3"}); k != "n2" {
		t.Fatalf("got keeper %s among n2,n3, want n2 (nodes order)", k)
	}
	s.Services["web"].Nodes = []string{"n3", "n2", "n1"}
	if k, _ := Keeper(s, "web", []string{"n1", "n2", "n3"}); k != "n3" {
		t.Fatalf("got keeper %s with nodes n3 n2 n1, want n3", k)
	}
}

// Three instances: the two extra ones stop in the same round.
func TestMultipleActiveThreeInstances(t *testing.T) {
	clk := clock.NewFake(t0)
	c := maNode(t, "n3", "", true, clk.Now())
	maHear(c, maPeer("n1", true, false), clk.Now())
	maHear(c, maPeer("n2", true, false), clk.Now())
	maPass(c, clk.Now())
	clk.Advance(1 * time.Second)
	// n2's stop begins first: it does not hold n3's
	d := maPeer("n2", true, false)
	i := d.Services["web"]
	i.Monitor.State = dataset.Stopping
	d.Services["web"] = i
	maHear(c, d, clk.Now())
	clk.Advance(1 * time.Second)
	if rd := maPass(c, clk.Now()); maStops(rd) != 1 {
		t.Fatalf("got run %+v, want n3's stop in the same round as n2's", rd.Run)
	}
}

// maFacts are an instance's facts that Keeper ranks by.
type maFacts struct {
	expect string // local expect
	token  uint64
	avail  dataset.Status // up or warn
}

// maNodeWith is maNode with web running here with the given facts.
func maNodeWith(t *testing.T, name string, f maFacts, now time.Time) *Core {
	t.Helper()
	c := maNode(t, name, "", false, now)
	inst := c.insts["web"]
	inst.Mon.LocalExpect = f.expect
	ss := c.state.Services["web"]
	ss.LocalExpect, ss.FencingToken = f.expect, f.token
	c.state.Services["web"] = ss
	inst.Avail, inst.Overall = f.avail, f.avail
	return c
}

// maPeerWith is the data of a peer running web with the given facts.
func maPeerWith(name string, f maFacts) *dataset.Node {
	d := maPeer(name, true, false)
	i := d.Services["web"]
	i.Monitor.LocalExpect, i.FencingToken, i.Avail, i.Overall = f.expect, f.token, f.avail, f.avail
	d.Services["web"] = i
	return d
}

// Every node computes the same keeper from the same data, whatever tells
// the instances apart: started by Haven (local expect started and a
// token), then complete (avail up), then the greatest token, then the
// placement (nodes order n1, n2, n3).
func TestKeeperRulesTheSameEverywhere(t *testing.T) {
	started := func(tok uint64, a dataset.Status) maFacts { return maFacts{dataset.ExpectStarted, tok, a} }
	up, warn := dataset.StatusUp, dataset.StatusWarn
	for _, tc := range []struct {
		name  string
		facts map[string]maFacts
		want  string
		why   string
	}{
		{"foreign copy without a token", map[string]maFacts{"n1": {dataset.ExpectStarted, 0, up}, "n2": started(2, up)}, "n2", "started by Haven"},
		{"foreign copy, local expect none", map[string]maFacts{"n1": {dataset.ExpectNone, 4, up}, "n2": started(2, warn)}, "n2", "started by Haven"},
		{"incomplete old owner", map[string]maFacts{"n1": started(1, warn), "n2": started(2, up)}, "n2", "complete"},
		{"incomplete latest start", map[string]maFacts{"n1": started(1, up), "n2": started(2, warn)}, "n1", "complete"},
		{"both complete", map[string]maFacts{"n1": started(1, up), "n2": started(2, up), "n3": started(3, up)}, "n3", "the latest start"},
		{"same facts", map[string]maFacts{"n2": {dataset.ExpectNone, 0, up}, "n3": {dataset.ExpectNone, 0, up}}, "n2", "first in placement rank"},
	} {
		now := t0
		for _, local := range []string{"n1", "n2", "n3"} {
			var c *Core
			if f, ok := tc.facts[local]; ok {
				c = maNodeWith(t, local, f, now)
			} else {
				c = maNode(t, local, "", false, now)
			}
			for _, p := range []string{"n1", "n2", "n3"} {
				if p == local {
					continue
				}
				if f, ok := tc.facts[p]; ok {
					maHear(c, maPeerWith(p, f), now)
				} else {
					maHear(c, maPeer(p, false, false), now)
				}
			}
			s := c.Snapshot(now)
			k, why := Keeper(s, "web", runningNodes(s, "web"))
			if k != tc.want || !strings.HasPrefix(why, tc.why) {
				t.Errorf("%s: %s computes keeper %s (%s), want %s (%s...)", tc.name, local, k, why, tc.want, tc.why)
			}
		}
	}
}
