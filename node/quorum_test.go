package node

import (
	"errors"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/internal/clock"
	"haven/node/instsm"
	"haven/quorum"
)

// qcore is a node core with quorum on, its peers heard at t0 (each hearing
// everyone), and a local instance of web that is up.
func qcore(t *testing.T, name string, members []string, arbs []quorum.Arbitrator, split string, stonith ...string) (*Core, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	c := New(Config{Name: name, WriteThrough: true, ClusterNodes: members, MaintenanceGrace: time.Minute, RejoinGrace: time.Minute, ReadyPeriod: time.Second,
		Quorum: QuorumConfig{Enabled: true, SplitAction: split, Arbitrators: arbs, HBTimeout: 3 * time.Second, Stonith: stonith,
			Timing: quorum.Timing{Beat: time.Second, ArbitratorTimeout: 2 * time.Second, StopBudget: 3 * time.Second}}}, State{})
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.start(t0)
	for rd := c.Ready(); len(rd.Check) > 0; rd = c.Ready() {
		c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	}
	for _, p := range c.PeerNames() {
		hear(c, p, nil, t0)
	}
	c.Ready()
	return c, clk
}

// hear is a data heartbeat of peer p, then its beat saying it does not
// hear unseen.
func hear(c *Core, p string, unseen []string, now time.Time) {
	c.heartbeat(PeerEvent{Node: p, Kind: PeerData, Data: &dataset.Node{Name: p, Monitor: dataset.NodeIdle, SplitAction: SplitStop}}, now)
	c.heartbeat(PeerEvent{Node: p, Kind: PeerUnseen, Unseen: unseen}, now)
}

func lose(c *Core, p string, now time.Time) { c.heartbeat(PeerEvent{Node: p, Kind: PeerDown}, now) }

// ticks runs the daemon's 500ms tick from from (excluded) to to: a daemon
// that runs (a gap longer than hb.timeout is a pause).
func ticks(c *Core, from, to time.Time) {
	for t := from.Add(500 * time.Millisecond); !t.After(to); t = t.Add(500 * time.Millisecond) {
		c.tick(t)
	}
}

func votes(rd Ready) []QuorumVote {
	var out []QuorumVote
	for _, e := range rd.Events {
		if v, ok := e.(QuorumVote); ok {
			out = append(out, v)
		}
	}
	return out
}

func TestMinorityStopsAndFreezesAtOnce(t *testing.T) {
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	lose(c, "n2", t0.Add(3*time.Second))
	rd := c.Ready()
	if v := votes(rd); len(v) != 1 || !v[0].Verdict.Survive || c.SplitFrozen() {
		t.Fatalf("n1 still hears n3: 2 of 3, got votes %v, want one that survives", v)
	}
	lose(c, "n3", t0.Add(3*time.Second))
	rd = c.Ready()
	v := votes(rd)
	if len(v) != 1 || v[0].Verdict.Survive || v[0].Verdict.Votes != 1 || v[0].Verdict.Total != 3 {
		t.Fatalf("got votes %+v, want one lost 1 of 3", v)
	}
	if !c.SplitFrozen() || len(rd.Run) != 1 || rd.Run[0].Kind != "stop" || rd.Run[0].Service != "web" {
		t.Fatalf("frozen %v, run %+v: want the node frozen and web stopped at once", c.SplitFrozen(), rd.Run)
	}
	if !strings.Contains(v[0].String(), "quorum lost: 1 of 3 votes (live n1; arbitrators answering: none; need more than 1); split_action stop") {
		t.Fatalf("vote line %q", v[0].String())
	}
}

func TestFirstLossOfThreeSurvives(t *testing.T) {
	c, _ := qcore(t, "n2", []string{"n1", "n2", "n3"}, nil, SplitStop)
	lose(c, "n1", t0.Add(3*time.Second))
	rd := c.Ready()
	v := votes(rd)
	if len(v) != 1 || !v[0].Verdict.Survive || c.SplitFrozen() || len(rd.Run) != 0 {
		t.Fatalf("got %+v frozen %v run %v, want a vote that survives and nothing stopped", v, c.SplitFrozen(), rd.Run)
	}
}

// The gate: n1 lost; its services wait for its self-stop deadline (beat +
// arbitrator timeout + stop budget + beat = 1+2+3+1 = 7s after the loss).
func TestTakeoverWaitsForTheDeadline(t *testing.T) {
	c, _ := qcore(t, "n2", []string{"n1", "n2", "n3"}, nil, SplitStop)
	at := t0.Add(3 * time.Second)
	ticks(c, t0, at)
	lose(c, "n1", at)
	hear(c, "n3", []string{"n1"}, at)
	f := c.Snapshot(at).Fencing
	if !strings.Contains(f["n1"], "waiting for n1's self-stop deadline at 00:00:10.000") {
		t.Fatalf("fencing %v, want n1 blocked until 00:00:10", f)
	}
	ticks(c, at, at.Add(6500*time.Millisecond))
	c.tick(at.Add(7*time.Second - time.Millisecond))
	if len(c.Snapshot(at).Fencing) != 1 {
		t.Fatal("gate cleared before the deadline")
	}
	c.tick(at.Add(7 * time.Second))
	if f := c.Snapshot(at).Fencing; len(f) != 0 {
		t.Fatalf("fencing %v after the deadline, want none", f)
	}
	var cleared bool
	for _, e := range c.Ready().Events {
		if g, ok := e.(TakeoverGate); ok && g.Cleared && g.Node == "n1" {
			cleared = true
		}
	}
	if !cleared {
		t.Fatal("no event says the takeover of n1 is allowed")
	}
}

// One-way loss: n1 hears n2 and n3, neither hears n1. n1 learns it from
// their published views and loses its vote.
func TestOneWayLossLearnedFromPeersViews(t *testing.T) {
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	at := t0.Add(3 * time.Second)
	hear(c, "n2", []string{"n1"}, at)
	hear(c, "n3", []string{"n1"}, at)
	rd := c.Ready()
	v := votes(rd)
	if len(v) == 0 || v[len(v)-1].Verdict.Survive || !c.SplitFrozen() {
		t.Fatalf("votes %+v frozen %v: n1 was declared down by both, want a lost vote and a freeze", v, c.SplitFrozen())
	}
	// n2 does not take over while n3 still hears n1
	c2, _ := qcore(t, "n2", []string{"n1", "n2", "n3"}, nil, SplitStop)
	ticks(c2, t0, at)
	lose(c2, "n1", at)
	ticks(c2, at, at.Add(time.Minute))
	if f := c2.Snapshot(at).Fencing; !strings.Contains(f["n1"], "n3 still hears n1") {
		t.Fatalf("fencing %v, want n1 held: n3 still hears it", f)
	}
}

// A daemon paused longer than hb.timeout votes as if alone when it runs
// again, before anything else.
func TestPausedDaemonVotesAlone(t *testing.T) {
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	ticks(c, t0, t0.Add(2*time.Second))
	c.Ready()
	c.tick(t0.Add(10 * time.Second))
	rd := c.Ready()
	if v := votes(rd); len(v) != 1 || v[0].Verdict.Survive || !c.SplitFrozen() || len(rd.Run) != 1 {
		t.Fatalf("votes %+v frozen %v run %v: want a lost vote, a freeze and a stop", v, c.SplitFrozen(), rd.Run)
	}
}

// 2 nodes + an arbitrator: the vote waits for the probe sent after the
// loss; the side that reaches it wins; its peer may have reached it too,
// so only a fence clears the takeover.
func TestTwoNodesArbitrator(t *testing.T) {
	arbs := []quorum.Arbitrator{{Name: "a", Weight: 1}}
	c, _ := qcore(t, "n2", []string{"n1", "n2"}, arbs, SplitStop)
	c.arbitratorResult("a", true, "200 OK", t0, t0) // an answer from before the loss does not count
	at := t0.Add(3 * time.Second)
	ticks(c, t0, at)
	c.Ready()
	lose(c, "n1", at)
	rd := c.Ready()
	if len(votes(rd)) != 0 || len(rd.Probes) != 1 || !rd.Probes[0].Sent.Equal(at) {
		t.Fatalf("votes %v probes %+v: want no vote before a fresh probe", votes(rd), rd.Probes)
	}
	c.arbitratorResult("a", true, "200 OK", at, at.Add(100*time.Millisecond))
	rd = c.Ready()
	if v := votes(rd); len(v) != 1 || !v[0].Verdict.Survive || v[0].Verdict.Votes != 2 {
		t.Fatalf("votes %+v, want survive 2 of 3", v)
	}
	ticks(c, at, at.Add(time.Minute))
	if f := c.Snapshot(at).Fencing; !strings.Contains(f["n1"], "may have kept the quorum") {
		t.Fatalf("fencing %v, want n1 held: only a fence proves it stopped", f)
	}
	// the other side: no answer, lost
	c1, _ := qcore(t, "n1", []string{"n1", "n2"}, arbs, SplitStop)
	lose(c1, "n2", at)
	c1.arbitratorResult("a", false, "dial tcp: i/o timeout", at, at.Add(2*time.Second))
	if v := votes(c1.Ready()); len(v) != 1 || v[0].Verdict.Survive || !c1.SplitFrozen() {
		t.Fatalf("votes %+v: want the isolated side to lose", v)
	}
}

// Fencing: a survivor fences the lost peer before the takeover; a failure
// holds it and retries with a backoff; a success clears at once.
func TestFenceFailureBlocksAndRetries(t *testing.T) {
	c, _ := qcore(t, "n2", []string{"n1", "n2", "n3"}, nil, SplitStop, "n1")
	at := t0.Add(3 * time.Second)
	ticks(c, t0, at)
	lose(c, "n1", at)
	hear(c, "n3", []string{"n1"}, at)
	rd := c.Ready()
	if len(rd.Fences) != 1 || rd.Fences[0].Node != "n1" {
		t.Fatalf("fences %+v, want n1 fenced at once", rd.Fences)
	}
	c.fenceEnded("n1", errors.New("exit status 1"), at.Add(time.Second))
	if f := c.Snapshot(at).Fencing["n1"]; !strings.Contains(f, "fence of n1 failed (attempt 1: exit status 1), next try at 00:00:05.000") {
		t.Fatalf("gate %q, want blocked by the failed fence", f)
	}
	ticks(c, at.Add(time.Second), at.Add(time.Minute)) // far past the deadline: a fence is required
	f := c.Snapshot(at).Fencing["n1"]
	rd = c.Ready()
	if len(rd.Fences) != 1 {
		t.Fatalf("fences %+v after the backoff, want a retry", rd.Fences)
	}
	if !strings.Contains(f, "fencing n1") {
		t.Fatalf("gate %q, want blocked while fencing", f)
	}
	c.fenceEnded("n1", nil, at.Add(61*time.Second))
	if f := c.Snapshot(at).Fencing; len(f) != 0 {
		t.Fatalf("fencing %v after a successful fence, want none", f)
	}
}

func TestQuorumOffChangesNothing(t *testing.T) {
	c := New(Config{Name: "n1", WriteThrough: true, ClusterNodes: []string{"n1", "n2"}}, State{})
	hear(c, "n2", nil, t0)
	lose(c, "n2", t0.Add(3*time.Second))
	rd := c.Ready()
	if len(votes(rd)) != 0 || c.Snapshot(t0).Fencing != nil || c.QuorumInfo(t0) != nil {
		t.Fatal("quorum off: a vote, a gate or a quorum status")
	}
}

// A stop that fails on the losing side escalates to crash at once.
func TestSplitStopFailureEscalates(t *testing.T) {
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	at := t0.Add(3 * time.Second)
	ticks(c, t0, at)
	lose(c, "n2", at)
	lose(c, "n3", at)
	var pending []Check
	pending = append(pending, c.Ready().Check...) // periodic checks of the ticks
	c.actionDone("web", "stop", errors.New("timeout"), at.Add(time.Second))
	for len(pending) > 0 {
		ck := pending[0]
		pending = pending[1:]
		c.checkDone(ck, map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, at.Add(time.Second))
		pending = append(pending, c.Ready().Check...)
	}
	ticks(c, at, at.Add(1500*time.Millisecond))
	var crash bool
	for _, a := range c.Ready().NodeActions {
		if a.Kind == NodeCrash && strings.Contains(a.Reason, "the split stop of web failed") {
			crash = true
		}
	}
	if !crash {
		t.Fatal("a failed split stop did not escalate to crash")
	}
}

// split_action crash and reboot run the node action at once; disabled logs
// only; a frozen node does not run the race.
func TestSplitActions(t *testing.T) {
	at := t0.Add(3 * time.Second)
	for _, split := range []string{SplitCrash, SplitReboot, SplitDisabled} {
		c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, split)
		ticks(c, t0, at)
		c.Ready()
		lose(c, "n2", at)
		lose(c, "n3", at)
		rd := c.Ready()
		v := votes(rd)
		if len(v) != 2 || v[1].Verdict.Survive {
			t.Fatalf("%s: votes %v, want the second lost", split, v)
		}
		switch split {
		case SplitDisabled:
			if len(rd.NodeActions) != 0 || len(rd.Run) != 0 || c.SplitFrozen() || !strings.Contains(v[1].String(), "split_action disabled: nothing done") {
				t.Fatalf("disabled: actions %v run %v frozen %v (%s), want nothing but the log", rd.NodeActions, rd.Run, c.SplitFrozen(), v[1])
			}
		default:
			if len(rd.NodeActions) != 1 || rd.NodeActions[0].Kind != split || len(rd.Run) != 0 {
				t.Fatalf("%s: node actions %v run %v, want one %s", split, rd.NodeActions, rd.Run, split)
			}
		}
	}
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	c.setNodeFrozen(true, "admin")
	ticks(c, t0, at)
	c.Ready()
	lose(c, "n2", at)
	lose(c, "n3", at)
	rd := c.Ready()
	v := votes(rd)
	if len(v) != 2 || !v[1].Verdict.Skipped || len(rd.Run) != 0 || !strings.Contains(v[1].String(), "node frozen: it does not run the race") {
		t.Fatalf("frozen: votes %v run %v, want the race skipped", v, rd.Run)
	}
}

// A split stop that has not ended by its escalation time crashes the node.
func TestSplitStopDeadlineEscalates(t *testing.T) {
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	at := t0.Add(3 * time.Second)
	ticks(c, t0, at)
	c.Ready()
	lose(c, "n2", at)
	lose(c, "n3", at)
	if rd := c.Ready(); len(rd.Run) != 1 {
		t.Fatalf("run %v, want the stop", rd.Run)
	}
	// escalation: vote start + arbitrator timeout 2s + stop budget 3s
	ticks(c, at, at.Add(4500*time.Millisecond))
	if rd := c.Ready(); len(rd.NodeActions) != 0 {
		t.Fatalf("crashed before the escalation time: %v", rd.NodeActions)
	}
	ticks(c, at.Add(4500*time.Millisecond), at.Add(5*time.Second))
	rd := c.Ready()
	if len(rd.NodeActions) != 1 || rd.NodeActions[0].Kind != NodeCrash || !strings.Contains(rd.NodeActions[0].Reason, "did not end by its deadline (web still running)") {
		t.Fatalf("node actions %v, want a crash at the escalation time", rd.NodeActions)
	}
}

// Two survivors that may both have kept the quorum (2 nodes, an arbitrator
// both reach) must not fence each other at once: with as many services on
// each side, the first by name fences at once, the other after the
// self-stop deadline (TestFenceRaceFavoursTheBusierSide: otherwise the
// side running more services fences first).
func TestFenceRaceDelay(t *testing.T) {
	at := t0.Add(3 * time.Second)
	for _, tc := range []struct {
		name, peer string
		delayed    bool
	}{{"n1", "n2", false}, {"n2", "n1", true}} {
		c, rd := raceCore(t, tc.name, tc.peer, "db") // one service each
		if got := len(rd.Fences) == 0; got != tc.delayed {
			t.Fatalf("%s: fences %v, want delayed %v", tc.name, rd.Fences, tc.delayed)
		}
		if !tc.delayed {
			continue
		}
		if f := c.Snapshot(at).Fencing[tc.peer]; !strings.Contains(f, "fence of n1 delayed until 00:00:10.000") {
			t.Fatalf("gate %q, want the fence delayed to the deadline", f)
		}
		ticks(c, at, at.Add(7*time.Second))
		if rd := c.Ready(); len(rd.Fences) != 1 {
			t.Fatalf("fences %v after the delay, want one", rd.Fences)
		}
	}
}

// A restart of a peer (a new run confirmed while its old one was heard a
// moment ago: PeerRunHeld) leaves its instances unknown for a while, but
// the peer is alive and its data current: it still counts as a member of
// this node's side. Before, two peers restarted one after the other were
// both "lost" for the quorum: n1 lost it (1 of 3) and stopped its
// services (the chaos suite's RestartOnebyOne).
func TestHeldRunCountsForQuorum(t *testing.T) {
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	now := t0.Add(time.Second)
	for _, p := range []string{"n2", "n3"} {
		c.heartbeat(PeerEvent{Node: p, Kind: PeerRunHeld, Reason: "a new run of " + p}, now)
		hear(c, p, nil, now)
	}
	ticks(c, now, now.Add(3*time.Second))
	rd := c.Ready()
	if v := votes(rd); len(v) != 0 || c.NodeFrozen() || len(rd.Run) != 0 {
		t.Fatalf("votes %+v, frozen %v, run %+v with two peers restarted: want nothing", v, c.NodeFrozen(), rd.Run)
	}
	// the hold ends: RunTrusted, then the transport hands the copy held
	// (a Data event); in between the peer is neither held nor confirmed,
	// and was counted lost: a 2-node cluster with the one-vote arbitrator
	// voted alone and stopped its services at every clean restart of its
	// peer (the chaos suite's RestartOnebyOne/q)
	now = now.Add(3 * time.Second)
	for _, p := range []string{"n2", "n3"} {
		c.heartbeat(PeerEvent{Node: p, Kind: PeerRunTrusted}, now)
		ticks(c, now, now.Add(time.Second))
		if rd := c.Ready(); len(votes(rd)) != 0 || c.NodeFrozen() || len(rd.Run) != 0 {
			t.Fatalf("%s's new run trusted, its copy not handed yet: votes %+v, frozen %v, run %+v: want nothing", p, votes(rd), c.NodeFrozen(), rd.Run)
		}
		hear(c, p, nil, now.Add(time.Second))
		if pp, _ := c.Peer(p); pp.Stale {
			t.Fatalf("%s's copy handed after the trust: still stale", p)
		}
	}
	if rd := c.Ready(); len(votes(rd)) != 0 || c.NodeFrozen() || len(rd.Run) != 0 {
		t.Fatalf("votes %+v, frozen %v, run %+v after the holds ended: want nothing", votes(rd), c.NodeFrozen(), rd.Run)
	}
}
