package node

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/node/instsm"
	"haven/quorum"
)

// gcore is qcore with the guard on (lease 7s, act 2.5s) and web's
// monitored resource.
func gcore(t *testing.T, name string, members []string, arbs []quorum.Arbitrator) *Core {
	t.Helper()
	c := New(Config{Name: name, WriteThrough: true, ClusterNodes: members, MaintenanceGrace: time.Minute, RejoinGrace: time.Minute, ReadyPeriod: time.Second,
		Quorum: QuorumConfig{Enabled: true, SplitAction: SplitStop, Arbitrators: arbs, HBTimeout: 3 * time.Second,
			Timing: quorum.Timing{Beat: time.Second, ArbitratorTimeout: 2 * time.Second, StopBudget: 3 * time.Second}},
		Guard: GuardConfig{Enabled: true, Lease: 7 * time.Second, Act: 2500 * time.Millisecond}},
		State{Services: map[string]ServiceState{"web": {LocalExpect: dataset.ExpectStarted}}})
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true, Monitored: true,
		Resources: []instsm.ResourceSpec{{RID: "app#1", Monitor: true, Restart: 2}}}, t0)
	c.start(t0)
	c.checkNow("web")
	for rd := c.Ready(); len(rd.Check) > 0; rd = c.Ready() {
		c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp, Monitor: true}}, t0)
	}
	if info, _ := c.Instance("web"); info.Avail != dataset.StatusUp || info.Monitor.LocalExpect != dataset.ExpectStarted {
		t.Fatalf("web is not up here: %+v", info)
	}
	for _, p := range c.PeerNames() {
		hear(c, p, nil, t0)
	}
	c.Ready()
	return c
}

func events[E Event](rd Ready) []E {
	var out []E
	for _, e := range rd.Events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// The guard acted while the daemon was away: web is down at once, expects
// to run no more here, and neither the check that still says up nor the
// restart ladder brings it back.
func TestGuardFiredEndsTheInstanceHere(t *testing.T) {
	c := gcore(t, "n1", []string{"n1", "n2", "n3"}, nil)
	c.Step(GuardReported{Armed: true, Now: t0})
	if c.Dataset(dataset.Node{}).Guard == nil {
		t.Fatal("an armed guard is not published")
	}
	c.Ready()
	at := t0.Add(10 * time.Second)
	f := &GuardFiring{ID: "r1", At: at.Add(-time.Second), Services: []string{"web"}}
	c.Step(GuardReported{Armed: true, Fired: f, Now: at})
	rd := c.Ready()
	if ev := events[GuardFired](rd); len(ev) != 1 || ev[0].Services[0] != "web" || !strings.Contains(ev[0].String(), "ended web") {
		t.Fatalf("events %v", rd.Events)
	}
	info, _ := c.Instance("web")
	if info.Avail != dataset.StatusDown || info.Monitor.LocalExpect != dataset.ExpectNone {
		t.Fatalf("after the guard: avail %s local expect %s", info.Avail, info.Monitor.LocalExpect)
	}
	if len(rd.Check) != 1 || rd.Check[0].Service != "web" {
		t.Fatalf("no check ordered: %+v", rd.Check)
	}
	// the check says down: no restart (the ladder holds: not started here)
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown, Monitor: true}}, at)
	c.tick(at.Add(time.Minute))
	if rd := c.Ready(); len(rd.Run) != 0 {
		t.Fatalf("ran %+v after the guard ended web", rd.Run)
	}
	// the same record again (every answer of the guard carries it until
	// acknowledged) is taken in once
	c.Step(GuardReported{Armed: true, Fired: f, Now: at.Add(time.Second)})
	if ev := events[GuardFired](c.Ready()); len(ev) != 0 {
		t.Fatalf("taken in twice: %v", ev)
	}
}

// The lease is renewed only while the node may run its services: not once
// it lost the quorum, not while its vote waits for an arbitrator, not
// after a pause longer than hb.timeout (it votes first).
func TestGuardEntitled(t *testing.T) {
	c := gcore(t, "n1", []string{"n1", "n2", "n3"}, nil)
	ticks(c, t0, t0.Add(2*time.Second))
	if ok, why := c.GuardEntitled(t0.Add(2 * time.Second)); !ok {
		t.Fatalf("a healthy node: %s", why)
	}
	if ok, why := c.GuardEntitled(t0.Add(6 * time.Second)); ok || !strings.Contains(why, "did not run for 4s") {
		t.Fatalf("after a 4s pause: %v %q", ok, why)
	}
	at := t0.Add(3 * time.Second)
	c.tick(at)
	lose(c, "n2", at)
	lose(c, "n3", at)
	if ok, why := c.GuardEntitled(at); ok || why != "this node lost the quorum" {
		t.Fatalf("after a lost vote: %v %q", ok, why)
	}

	arb := []quorum.Arbitrator{{Name: "a1", Weight: 1}}
	c = gcore(t, "n1", []string{"n1", "n2"}, arb)
	c.tick(at)
	lose(c, "n2", at)
	if ok, why := c.GuardEntitled(at); ok || why != "a quorum vote waits for the arbitrators" {
		t.Fatalf("during the vote: %v %q", ok, why)
	}
	c.arbitratorResult("a1", true, "200", at, at.Add(time.Second))
	if ok, why := c.GuardEntitled(at.Add(time.Second)); !ok {
		t.Fatalf("after a vote kept: %s", why)
	}
}

// The survivors' gate counts a lost peer's armed guard: beat + arbitrator
// timeout + the guard's lease and act and margin (quorum.GuardStop),
// instead of its stop budget; a peer without one keeps the stop budget.
func TestGateCountsTheLostPeersGuard(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		c := gcore(t, "n2", []string{"n1", "n2", "n3"}, nil)
		d := &dataset.Node{Name: "n1", Monitor: dataset.NodeIdle, SplitAction: SplitStop}
		want := time.Second + 2*time.Second + 3*time.Second + time.Second
		if guarded {
			d.Guard = &dataset.GuardInfo{LeaseMs: 7000, ActMs: 2500}
			want = time.Second + 2*time.Second + quorum.GuardStop(7*time.Second, 2500*time.Millisecond)
		}
		c.heartbeat(PeerEvent{Node: "n1", Kind: PeerData, Data: d}, t0)
		at := t0.Add(3 * time.Second)
		ticks(c, t0, at)
		lose(c, "n1", at)
		hear(c, "n3", []string{"n1"}, at)
		qi := c.QuorumInfo(at)
		if len(qi.Gates) != 1 || qi.Gates[0].Deadline.Sub(at) != want {
			t.Fatalf("guarded %v: gates %+v, want the deadline %s after the loss", guarded, qi.Gates, want)
		}
	}
}

// A peer that stopped for maintenance with its guard's lease covering the
// grace is no peer to fence once its grace passed: its guard ended its
// services by then. Without the guard, only a fence proves it.
func TestGateMaintenanceCoveredByTheGuard(t *testing.T) {
	for _, covered := range []bool{false, true} {
		c := gcore(t, "n2", []string{"n1", "n2", "n3"}, nil)
		d := &dataset.Node{Name: "n1", Monitor: dataset.NodeMaintenance, SplitAction: SplitStop}
		if covered {
			d.Guard = &dataset.GuardInfo{LeaseMs: 7000, ActMs: 2500, Maintenance: true}
		}
		c.heartbeat(PeerEvent{Node: "n1", Kind: PeerData, Data: d}, t0)
		at := t0.Add(3 * time.Second)
		ticks(c, t0, at)
		lose(c, "n1", at)
		hear(c, "n3", []string{"n1"}, at)
		end := t0.Add(time.Minute + time.Second)
		ticks(c, at, end)
		f := c.Snapshot(end).Fencing["n1"]
		if covered && f != "" || !covered && !strings.Contains(f, "only a fence") {
			t.Fatalf("covered %v: gate %q", covered, f)
		}
	}
}

// The lease anchored on the acknowledged beats (docs/behaviour.md 3.1):
// it ends the lease after the send time of the newest message of this
// node that enough members acknowledged for a quorum, never later than
// now + the lease; nothing is renewed without such a message, or when it
// is older than the lease. With the quorum off, or a node that makes a
// quorum alone, it is now + the lease.
func TestGuardLeaseAnchoredOnAcks(t *testing.T) {
	const lease = 7 * time.Second
	now := t0.Add(2 * time.Second)
	acks := func(m map[string]time.Duration) func(string) (time.Time, bool) {
		return func(p string) (time.Time, bool) {
			d, ok := m[p]
			return now.Add(-d), ok
		}
	}
	check := func(c *Core, m map[string]time.Duration, want time.Duration, wantWhy string) {
		t.Helper()
		ticks(c, t0, now)
		until, ok, why := c.GuardLease(now, acks(m))
		switch {
		case wantWhy != "" && (ok || !strings.Contains(why, wantWhy)):
			t.Fatalf("acks %v: %v %s %q, want refused: %q", m, ok, until, why, wantWhy)
		case wantWhy == "" && (!ok || until.Sub(now) != want):
			t.Fatalf("acks %v: %v %q, lease until now+%s, want now+%s", m, ok, why, until.Sub(now), want)
		}
	}
	three := []string{"n1", "n2", "n3"}
	// 3 nodes: one acknowledgement makes a quorum with this node: the newest
	check(gcore(t, "n1", three, nil), map[string]time.Duration{"n2": 3 * time.Second, "n3": time.Second}, lease-time.Second, "")
	check(gcore(t, "n1", three, nil), map[string]time.Duration{"n3": 5 * time.Second}, lease-5*time.Second, "")
	check(gcore(t, "n1", three, nil), nil, 0, "do not make a quorum")
	check(gcore(t, "n1", three, nil), map[string]time.Duration{"n2": 8 * time.Second}, 0, "older than the lease")
	// 5 nodes: two acknowledgements: the second newest
	five := []string{"n1", "n2", "n3", "n4", "n5"}
	check(gcore(t, "n1", five, nil), map[string]time.Duration{"n2": time.Second, "n3": 4 * time.Second, "n4": 6 * time.Second}, lease-4*time.Second, "")
	check(gcore(t, "n1", five, nil), map[string]time.Duration{"n2": time.Second}, 0, "do not make a quorum")
	// a plain arbitrator's weight counts as if it answered: 3 nodes and a
	// weight of 2 make a quorum with this node alone
	check(gcore(t, "n1", three, []quorum.Arbitrator{{Name: "a", Weight: 2}}), nil, lease, "")
	// an acknowledgement from the future (a clock stepped back) is capped
	check(gcore(t, "n1", three, nil), map[string]time.Duration{"n2": -3 * time.Second}, lease, "")
	// a single node; the quorum off
	check(gcore(t, "n1", []string{"n1"}, nil), nil, lease, "")
	c := gcore(t, "n1", three, nil)
	c.cfg.Quorum.Enabled = false
	check(c, nil, lease, "")
	// a node that lost its vote renews nothing, whatever was acknowledged
	c = gcore(t, "n1", three, nil)
	ticks(c, t0, now)
	lose(c, "n2", now)
	lose(c, "n3", now)
	if _, ok, why := c.GuardLease(now, acks(map[string]time.Duration{"n2": 0})); ok || why != "this node lost the quorum" {
		t.Fatalf("after a lost vote: %v %q", ok, why)
	}
}

// 2 nodes and a one-vote arbitrator: the peer's acknowledgement or the
// arbitrator's lease (this node's estimate of its end, less the guard's act
// and a margin) vouches for the lease, whichever ends later; neither:
// nothing is renewed.
func TestGuardLeaseOneVote(t *testing.T) {
	arb := []quorum.Arbitrator{{Name: "a1", Weight: 1, OneVote: true}}
	c := gcore(t, "n1", []string{"n1", "n2"}, arb)
	now := t0.Add(2 * time.Second)
	ticks(c, t0, now)
	none := func(string) (time.Time, bool) { return time.Time{}, false }
	if _, ok, _ := c.GuardLease(now, none); ok {
		t.Fatal("renewed without an acknowledgement nor an arbitrator lease")
	}
	sent := now.Add(-500 * time.Millisecond)
	c.oneVoteResult("a1", quorum.GrantAnswer{Granted: true, Lease: 5 * time.Second}, "", sent, now)
	// the guard's act and a margin before this node's estimate of the
	// arbitrator lease's end: acted before any exclusive grant elsewhere
	end := quorum.NodeLeaseEnd(sent, 5*time.Second).Add(-quorum.GuardBeforeGrant(7*time.Second, 2500*time.Millisecond))
	if until, ok, why := c.GuardLease(now, none); !ok || !until.Equal(end) {
		t.Fatalf("with the arbitrator's lease: %v %q until %s, want its end less the act and margin %s", ok, why, until, end)
	}
	peer := func(string) (time.Time, bool) { return now.Add(-time.Second), true }
	if until, ok, _ := c.GuardLease(now, peer); !ok || until.Sub(now) != 6*time.Second {
		t.Fatalf("with the peer's acknowledgement too: until now+%s, want now+6s", until.Sub(now))
	}
}

// The gate of a peer whose lease is anchored counts quorum.GuardAfterHeard
// with the shortest hb.timeout of this node and its live members; a live
// member that did not say its hb.timeout makes it the unanchored gate.
func TestGateAnchoredPeer(t *testing.T) {
	for _, said := range []bool{true, false} {
		c := gcore(t, "n2", []string{"n1", "n2", "n3"}, nil)
		c.heartbeat(PeerEvent{Node: "n1", Kind: PeerData, Data: &dataset.Node{Name: "n1", Monitor: dataset.NodeIdle, SplitAction: SplitStop,
			Guard: &dataset.GuardInfo{LeaseMs: 7000, ActMs: 2500, Anchored: true, HBTimeoutMs: 3000}}}, t0)
		d3 := &dataset.Node{Name: "n3", Monitor: dataset.NodeIdle, SplitAction: SplitStop}
		want := time.Second + 2*time.Second + quorum.GuardStop(7*time.Second, 2500*time.Millisecond)
		if said {
			d3.Guard = &dataset.GuardInfo{LeaseMs: 7000, ActMs: 2500, Anchored: true, HBTimeoutMs: 2000}
			want = quorum.GuardAfterHeard(7*time.Second, 2500*time.Millisecond, 2*time.Second)
		}
		at := t0.Add(3 * time.Second)
		ticks(c, t0, at)
		lose(c, "n1", at)
		c.heartbeat(PeerEvent{Node: "n3", Kind: PeerData, Data: d3}, at)
		c.heartbeat(PeerEvent{Node: "n3", Kind: PeerUnseen, Unseen: []string{"n1"}}, at)
		qi := c.QuorumInfo(at)
		if len(qi.Gates) != 1 || qi.Gates[0].Deadline.Sub(at) != want {
			t.Fatalf("n3 says its hb.timeout %v: gates %+v, want the deadline %s after the loss", said, qi.Gates, want)
		}
	}
}

// A start held because the guard's lease was not renewed (guardHoldsStart)
// is decided again as soon as the lease is renewed: the renewal alone
// wakes the decision pass. Before, nothing did: a node whose split freeze
// ended with its peers quiet kept its service in ready, start held, until
// some other change (44 s in a chaos round, NearQuorumPoint).
func TestGuardRenewedWakesAHeldStart(t *testing.T) {
	c := gcore(t, "n1", []string{"n1", "n2", "n3"}, nil)
	at := t0.Add(time.Second)
	c.Step(GuardReported{Armed: true, NotRenewed: "this node lost the quorum", Now: at})
	if !c.guardHoldsStart("web") {
		t.Fatal("a start is not held while the lease is not renewed")
	}
	c.pass(at)
	c.Ready()
	if c.ViewChanged() {
		t.Fatal("the view is still changed after a pass")
	}
	c.Step(GuardReported{Armed: true, Now: at.Add(time.Second)})
	if !c.ViewChanged() {
		t.Fatal("the lease renewed again does not wake the pass that decides the held start")
	}
	// renewed with no start held: nothing to decide again
	c.pass(at.Add(time.Second))
	c.Ready()
	c.Step(GuardReported{Armed: true, NotRenewed: "a quorum vote waits for the arbitrators", Now: at.Add(2 * time.Second)})
	c.Step(GuardReported{Armed: true, Now: at.Add(3 * time.Second)})
	if c.ViewChanged() {
		t.Fatal("a renewal with no start held woke a pass")
	}
}
