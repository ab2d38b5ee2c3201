package node

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/node/instsm"
	"haven/quorum"
)

// rcore is a freshly (re)started node core with quorum on (3 nodes and an
// arbitrator: 4 votes), in rejoin: no peer heard yet in this run.
func rcore(t *testing.T) *Core {
	t.Helper()
	c := New(Config{Name: "n1", WriteThrough: true, ClusterNodes: []string{"n1", "n2", "n3"}, MaintenanceGrace: time.Minute, RejoinGrace: time.Minute, ReadyPeriod: time.Second,
		Quorum: QuorumConfig{Enabled: true, SplitAction: SplitStop, Arbitrators: []quorum.Arbitrator{{Name: "a1", Weight: 1}}, HBTimeout: 3 * time.Second,
			Timing: quorum.Timing{Beat: 500 * time.Millisecond, ArbitratorTimeout: 2 * time.Second, StopBudget: 3 * time.Second}}}, State{})
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.start(t0)
	for rd := c.Ready(); len(rd.Check) > 0; rd = c.Ready() {
		c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	}
	c.Ready()
	if c.NodeMonitor() != dataset.NodeRejoin {
		t.Fatalf("node monitor %s after the start, want rejoin", c.NodeMonitor())
	}
	return c
}

func peerUp(c *Core, p string, now time.Time) {
	c.heartbeat(PeerEvent{Node: p, Kind: PeerUp}, now)
	c.heartbeat(PeerEvent{Node: p, Kind: PeerData, Data: &dataset.Node{Name: p, Monitor: dataset.NodeIdle, SplitAction: SplitStop}}, now)
}

func unseen(c *Core, p string, now time.Time, who ...string) {
	c.heartbeat(PeerEvent{Node: p, Kind: PeerUnseen, Unseen: who}, now)
}

// The chaos run's restart (RestartOnebyOne): n1 restarts, hears n3 (its
// full copy), then n3's beat still lists n1 as declared down (n3 declared
// n1's previous run down and had not heard the new run yet). n1, still in
// rejoin (n2 not heard, the arbitrator not probed), must not vote alone and
// stop everything.
func TestRestartInRejoinDoesNotVote(t *testing.T) {
	c := rcore(t)
	at := t0.Add(600 * time.Millisecond)
	peerUp(c, "n3", at)
	unseen(c, "n3", at.Add(300*time.Millisecond), "n1")
	rd := c.Ready()
	if v := votes(rd); len(v) != 0 || c.SplitFrozen() || len(rd.Run) != 0 {
		t.Fatalf("votes %+v frozen %v run %+v: a node in rejoin must not run the race", v, c.SplitFrozen(), rd.Run)
	}
	// n3 hears the new run: its next beat drops n1; n2 comes up with a
	// stale claim too, which ends the rejoin
	unseen(c, "n3", at.Add(time.Second))
	peerUp(c, "n2", at.Add(1200*time.Millisecond))
	unseen(c, "n2", at.Add(1300*time.Millisecond), "n1")
	if c.NodeMonitor() != dataset.NodeIdle {
		t.Fatalf("node monitor %s, want idle: every member was heard", c.NodeMonitor())
	}
	rd = c.Ready()
	if v := votes(rd); len(v) != 0 || c.SplitFrozen() || len(rd.Run) != 0 {
		t.Fatalf("votes %+v frozen %v run %+v: n2's claim is about n1's previous run, want no vote", v, c.SplitFrozen(), rd.Run)
	}
	unseen(c, "n2", at.Add(1800*time.Millisecond))
	ticks(c, at.Add(1800*time.Millisecond), at.Add(10*time.Second))
	if v := votes(c.Ready()); len(v) != 0 || c.SplitFrozen() {
		t.Fatalf("votes %+v frozen %v, want none", v, c.SplitFrozen())
	}
}

// A claim that outlasts hb.timeout after the peer came up is about this
// run: the peer does not hear it (a one-way loss after the restart). It is
// a loss, voted as usual once the rejoin ended.
func TestRestartClaimThatPersistsIsALoss(t *testing.T) {
	c := rcore(t)
	at := t0.Add(600 * time.Millisecond)
	peerUp(c, "n3", at)
	peerUp(c, "n2", at)
	unseen(c, "n3", at)
	unseen(c, "n2", at.Add(100*time.Millisecond), "n1")
	if v := votes(c.Ready()); len(v) != 0 || c.QuorumInfo(at).Pending {
		t.Fatalf("votes %+v (pending %v) within hb.timeout of n2's first beat, want none", v, c.QuorumInfo(at).Pending)
	}
	end := at.Add(4 * time.Second)
	ticks(c, at, end)
	rd := c.Ready()
	if !c.QuorumInfo(end).Pending {
		t.Fatalf("no vote pending after n2's claim outlasted hb.timeout: %+v", votes(rd))
	}
	// 2 live of 3 nodes + 1 arbitrator: the vote waits for the probe it
	// ordered, and counts its answer
	var sent time.Time
	for _, p := range rd.Probes {
		sent = p.Sent
	}
	if sent.IsZero() {
		t.Fatal("the vote ordered no probe of the arbitrator")
	}
	c.arbitratorResult("a1", true, "200 OK", sent, end)
	v := votes(c.Ready())
	if len(v) != 1 || len(v[0].Lost) != 1 || v[0].Lost[0] != "n2" || !v[0].Verdict.Survive || v[0].Verdict.Votes != 3 {
		t.Fatalf("votes %+v, want one vote on the loss of n2, kept 3 of 4", v)
	}
}

// A node in rejoin does not run the race: a survivor that loses it then
// may not count on its self-stop deadline, only on a fence.
func TestLostInRejoinNeedsAFence(t *testing.T) {
	c, _ := qcore(t, "n2", []string{"n1", "n2", "n3"}, nil, SplitStop)
	at := t0.Add(3 * time.Second)
	ticks(c, t0, at)
	// n1 restarted: its new run says rejoin
	c.heartbeat(PeerEvent{Node: "n1", Kind: PeerData, Data: &dataset.Node{Name: "n1", Monitor: dataset.NodeRejoin, SplitAction: SplitStop}}, at)
	lose(c, "n1", at.Add(3*time.Second))
	hear(c, "n3", []string{"n1"}, at.Add(3*time.Second))
	ticks(c, at.Add(3*time.Second), at.Add(time.Minute))
	if f := c.Snapshot(at).Fencing; !strings.Contains(f["n1"], "n1 was in rejoin (its daemon had just started): it does not run the race") {
		t.Fatalf("fencing %v, want n1 held until a fence: it was in rejoin", f)
	}
}

// A peer whose beat did not list this node heard this run: its later claim
// that it does not is credited at once, even within hb.timeout of its
// first beat (a one-way loss right after the restart is not delayed).
func TestClaimAfterHeardUsIsCreditedAtOnce(t *testing.T) {
	c := rcore(t)
	at := t0.Add(600 * time.Millisecond)
	peerUp(c, "n2", at)
	peerUp(c, "n3", at)
	unseen(c, "n2", at)
	unseen(c, "n3", at)
	c.Ready()
	unseen(c, "n2", at.Add(time.Second), "n1")
	if !c.QuorumInfo(at).Pending {
		t.Fatalf("no vote on n2's claim (votes %+v): n2 had heard n1's run, its claim is about it", votes(c.Ready()))
	}
}
