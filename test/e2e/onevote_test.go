package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/quorum"
	"haven/test/chaos"
	"haven/test/testbed"
)

// oneVoteAddr is the one-vote arbitrator's host in the bed.
const oneVoteAddr = "192.0.2.50"

// newOneVoteBed is 2 nodes with quorum on, split_action stop, no fence
// command, and Haven's one-vote arbitrator (nodemgr arbitrator) running in
// a namespace of its own; it returns once both nodes hold its lease.
func newOneVoteBed(t *testing.T) *quorumBed {
	q, _ := newOneVoteBedArb(t)
	return q
}

// newOneVoteBedArb is newOneVoteBed, with a function that runs `nodemgr
// arbitrator ARGS` in the arbitrator's namespace.
func newOneVoteBedArb(t *testing.T) (*quorumBed, func(args ...string) testbed.Result) {
	t.Helper()
	return newOneVoteBedEdit(t, nil)
}

// newOneVoteBedEdit is newOneVoteBedArb with each node.toml rewritten by
// edit (newQuorumBedEdit).
func newOneVoteBedEdit(t *testing.T, edit func(string) string) (*quorumBed, func(args ...string) testbed.Result) {
	t.Helper()
	port, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	arbConf := func(*chaos.Bed, string) string {
		return fmt.Sprintf("[arbitrator.a1]\nuri = \"haven://%s:%d\"\ntimeout = \"1s\"\n", oneVoteAddr, port)
	}
	q := newQuorumBedEdit(t, []string{"n1", "n2"}, stopOnSplit, arbConf, map[string]string{"arb": oneVoteAddr}, 1, edit)
	arb := q.oneVoteArbitrator("arb", oneVoteAddr, port)
	for _, n := range []string{"n1", "n2"} {
		waitFor(t, 30*time.Second, n+" holds the one-vote arbitrator's lease", func() bool {
			qs := q.nodes[n].status().Cluster.QuorumState
			return qs != nil && len(qs.Arbitrators) == 1 && qs.Arbitrators[0].OneVote && qs.Arbitrators[0].Answered
		})
	}
	return q, arb
}

// oneVoteArbitrator starts a one-vote arbitrator (nodemgr arbitrator) of
// the bed's cluster in the namespace of host, listening on addr:port; it
// returns a function that runs `nodemgr arbitrator ARGS` there. It is
// stopped at the end of the test.
func (q *quorumBed) oneVoteArbitrator(host, addr string, port int) func(args ...string) testbed.Result {
	t := q.t
	t.Helper()
	b, err := os.ReadFile(filepath.Join(q.nodes["n1"].root, "etc", "cluster.toml"))
	if err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`secret = "([0-9a-f]{64})"`).FindSubmatch(b)
	if secret == nil {
		t.Fatalf("no secret in cluster.toml:\n%s", b)
	}
	root := filepath.Join(t.TempDir(), host)
	conf := filepath.Join(root, "etc", "arbitrator.toml")
	os.MkdirAll(filepath.Dir(conf), 0o700)
	writeFile(t, conf, fmt.Sprintf("[arbitrator]\nlisten = \"%s:%d\"\n\n[cluster.netns]\nsecret = %q\n", addr, port, secret[1]))
	os.Chmod(conf, 0o600)
	arb := func(args ...string) testbed.Result {
		r, err := testbed.Command{Bin: filepath.Join(binDir, "nodemgr"), Root: root, Args: append([]string{"arbitrator"}, args...), NS: q.bed.NS[host], Timeout: 20 * time.Second}.Run()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := arb("start"); r.Code != 0 {
		t.Fatalf("arbitrator start: %s", r)
	}
	t.Cleanup(func() { arb("stop") })
	return arb
}

// webOnN1 creates web on n1 and n2, waits until it runs on n1 only, and
// returns the journal's clock then (the tests' fault comes next).
func (q *quorumBed) webOnN1() float64 {
	q.t.Helper()
	c := q.nodes
	createService(q.t, c["n1"], "web", q.service("n1", "n2"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	return uptime(q.t)
}

// cutOwnerTakenOver cuts the owner n1 off from n2 and from the arbitrator
// (web runs on n1 since cut, the journal's clock), waits until n1 stopped
// web and n2 started it by itself, checks the external journal for an
// overlap and logs the times.
func (q *quorumBed) cutOwnerTakenOver(cut float64) {
	q.t.Helper()
	q.cut("n1")
	q.waitFor(30*time.Second, "n1 stops web (journal)", func() bool { _, ok := q.first("n1", "stop", cut); return ok })
	q.waitFor(60*time.Second, "n2 starts web by itself (journal)", func() bool { _, ok := q.first("n2", "start", cut); return ok })
	q.noOverlap()
	stop, _ := q.first("n1", "stop", cut)
	start, _ := q.first("n2", "start", cut)
	q.t.Logf("cut -> n1 stop %.2fs, cut -> n2 start %.2fs, gap %.2fs", stop.T-cut, start.T-cut, start.T-stop.T)
}

// 2 nodes, quorum, a one-vote arbitrator, no fence command. The
// owner n1 is cut off from n2 and from the arbitrator: n1 loses its vote
// when its lease ends and stops web; the arbitrator gives its vote to n2
// alone once n1's lease ended; n2 takes web over by itself. The external
// journal shows no overlap.
func TestNetnsOneVoteArbitratorOwnerCutOff(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	q := newOneVoteBed(t)
	c := q.nodes
	cut := q.webOnN1()
	q.cutOwnerTakenOver(cut)
	if frozen(c["n2"]) || !frozen(c["n1"]) {
		t.Fatalf("frozen: n1 %v (want true), n2 %v (want false)", frozen(c["n1"]), frozen(c["n2"]))
	}
	if log := nodeLog(t, c["n2"]); !strings.Contains(log, "granted this side alone") {
		q.dump()
		t.Fatal("n2's log does not say the one-vote arbitrator granted it alone")
	}
}

// Only the link between the two nodes is cut; both still reach
// the one-vote arbitrator. The side running web (n1) keeps the vote and
// web; n2, refused, loses its vote at its lease end and freezes. Nothing
// starts on n2: never twice.
func TestNetnsOneVoteArbitratorLinkCut(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	q := newOneVoteBed(t)
	c := q.nodes
	cut := q.webOnN1()
	q.ok(q.bed.OneWay("n1", "n2"))
	q.ok(q.bed.OneWay("n2", "n1"))
	q.waitFor(60*time.Second, "n2 loses its vote and freezes", func() bool { return frozen(c["n2"]) })
	// n1 keeps the vote: its lease is renewed well past the moment n2
	// froze (a renewal after n2's loss, not the lease it had before)
	lostAt := time.Now()
	q.waitFor(20*time.Second, "n1's lease renewed past n2's loss", func() bool {
		qs := c["n1"].status().Cluster.QuorumState
		return qs != nil && len(qs.Arbitrators) == 1 && qs.Arbitrators[0].LeaseUntil.After(lostAt.Add(quorum.DefaultLease/2))
	})
	if _, ok := q.first("n2", "start", cut); ok {
		q.dump()
		t.Fatal("n2 started web after the link cut")
	}
	if _, ok := q.first("n1", "stop", cut); ok || frozen(c["n1"]) {
		q.dump()
		t.Fatal("n1, the side running web, lost it")
	}
	q.noOverlap()
}

// restartArbitrator stops and starts the one-vote arbitrator: it keeps no
// lease on disk, so it comes back as after a kill -9, in its start-up wait.
func restartArbitrator(t *testing.T, arb func(args ...string) testbed.Result) {
	t.Helper()
	for _, cmd := range []string{"stop", "start"} {
		if r := arb(cmd); r.Code != 0 {
			t.Fatalf("arbitrator %s: %s", cmd, r)
		}
	}
}

// The one-vote arbitrator restarts (it remembers no lease) in the
// middle of a cut of the link between the two nodes. It gives no vote for
// its start-up wait, so both nodes lose theirs at their lease ends: both
// stop and freeze. Then it grants n1 alone (same sizes, neither runs
// anything now, the lowest name): n1 holds the quorum again, its split
// freeze ends by itself, its takeover gate of n2 is decided again (no
// stale "this node lost the quorum") and n1 starts web again. n2, thawed
// by an admin while the split lasts, starts nothing (its gate says it
// lost the quorum). After the heal n2's freeze is gone, web on n1 only;
// the external journal never shows web twice.
func TestNetnsOneVoteArbitratorRestartedMidSplit(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	q, arb := newOneVoteBedArb(t)
	c := q.nodes
	cut := q.webOnN1()
	q.ok(q.bed.OneWay("n1", "n2"))
	q.ok(q.bed.OneWay("n2", "n1"))
	restartArbitrator(t, arb)
	q.waitFor(60*time.Second, "both nodes lose their vote and freeze", func() bool { return splitFrozen(c["n1"]) && splitFrozen(c["n2"]) })
	// a node that lost its vote freezes, then stops what runs (the stop
	// takes a moment: the app's end is awaited): its journal line may come
	// after both froze (a run under load, 2026-11-27)
	q.waitFor(10*time.Second, "n1, frozen, stops web (journal)", func() bool { _, ok := q.first("n1", "stop", cut); return ok })
	stop, _ := q.first("n1", "stop", cut)
	c["n2"].must("nodemgr", "thaw")
	q.waitFor(30*time.Second, "n1's split freeze ends by itself (the arbitrator grants it alone)", func() bool { return !frozen(c["n1"]) })
	q.waitFor(60*time.Second, "n1 starts web again (journal)", func() bool { _, ok := q.first("n1", "start", stop.T); return ok })
	start, _ := q.first("n1", "start", stop.T)
	t.Logf("cut -> n1 stop %.2fs -> n1 start %.2fs", stop.T-cut, start.T-cut)
	if qs := c["n1"].status().Cluster.QuorumState; qs == nil || !qs.LastSurvive || strings.Contains(fmt.Sprint(qs.Gates), "lost the quorum") {
		q.dump()
		t.Fatalf("n1's quorum state %+v: want a vote kept and no gate held by a lost quorum", qs)
	}
	if log := nodeLog(t, c["n1"]); !strings.Contains(log, "split freeze ended: this node holds the quorum again") {
		q.dump()
		t.Fatal("n1's log does not say its split freeze ended")
	}
	qs := c["n2"].status().Cluster.QuorumState
	if frozen(c["n2"]) || qs == nil || qs.LastSurvive || !strings.Contains(fmt.Sprint(qs.Gates), "this node lost the quorum") {
		q.dump()
		t.Fatalf("n2, thawed by the admin during the split: frozen %v, quorum state %+v: want thawed, its gate held by its lost quorum", frozen(c["n2"]), qs)
	}
	if _, ok := q.first("n2", "start", cut); ok {
		q.dump()
		t.Fatal("n2 started web during the split")
	}
	q.ok(q.bed.Heal())
	q.waitFor(20*time.Second, "n2 hears n1 again", func() bool { return peerStatus(c["n2"], "n1") == dataset.NodeUp })
	// n2's copy of n1's data is confirmed a moment after it hears n1
	// (stale until then: web neither up nor down there)
	q.waitFor(10*time.Second, "n2 sees web on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	if _, ok := q.first("n2", "start", cut); ok || frozen(c["n2"]) {
		q.dump()
		t.Fatal("after the heal: web must stay on n1 only, n2 thawed")
	}
	q.noOverlap()
}

// A split freeze taken for want of a vote that then comes ends by itself.
// The one-vote arbitrator has just restarted (it gives no vote for its
// lease + margin) when the owner n1 is cut off from n2 and from it. Both
// lose their vote at their lease ends and freeze (n1 stops web); once its
// wait is over the arbitrator grants n2 alone: n2's split freeze ends and
// n2 takes web over by itself (the grant to this side alone, then n1's
// stop budget). While cut off, n1 shows its freeze as a split freeze in
// svcmon, nodemgr daemon status and svcmgr explain; after the heal it ends
// by itself. The external journal shows no overlap.
func TestNetnsOneVoteArbitratorYoungOwnerCutOff(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	q, arb := newOneVoteBedArb(t)
	c := q.nodes
	cut := q.webOnN1()
	restartArbitrator(t, arb)
	q.cutOwnerTakenOver(cut)
	log2 := nodeLog(t, c["n2"])
	for _, want := range []string{"quorum lost: 1 of 3 votes (live n2; arbitrators answering: none", "node frozen by its split_action",
		"split freeze ended: this node holds the quorum again", "granted this side alone"} {
		if !strings.Contains(log2, want) {
			q.dump()
			t.Fatalf("n2's log lacks %q", want)
		}
	}
	if frozen(c["n2"]) || !splitFrozen(c["n1"]) {
		q.dump()
		t.Fatalf("frozen: n1 by its split_action %v (want true), n2 %v (want false)", splitFrozen(c["n1"]), frozen(c["n2"]))
	}
	// n1, cut off, says what froze it, and not as an admin's freeze
	if out := c["n1"].must("svcmon"); !strings.Contains(out, "n1 frozen by its split_action: quorum lost") || strings.Contains(out, "n1 frozen: ") {
		t.Fatalf("svcmon on n1:\n%s", out)
	}
	if out := c["n1"].must("nodemgr", "daemon", "status"); !regexp.MustCompile(`\nsplit freeze +yes: quorum lost`).MatchString(out) || strings.Contains(out, "\nfrozen ") {
		t.Fatalf("nodemgr daemon status on n1:\n%s", out)
	}
	if out := c["n1"].must("svcmgr", "-s", "web", "explain"); !strings.Contains(out, "node frozen by its split_action (quorum lost)") {
		t.Fatalf("svcmgr explain on n1:\n%s", out)
	}
	q.restore("n1")
	q.waitFor(20*time.Second, "n1's split freeze ends by itself after the heal", func() bool { return !frozen(c["n1"]) })
	if !upOnlyOn(c["n1"], "web", "n2")() {
		q.dump()
		t.Fatal("after the heal web must stay on n2 only")
	}
	q.noOverlap()
}

// A VIP in front of the app (the usual layout): the takeover waits the
// whole service's stop budget after the arbitrator's exclusive grant, and
// an ip counts its own 5s stop limit, not the 30s of the other resources
// (which made the takeover 25 s later than the docs said). The gate the
// survivor shows before the cut is the one it waits (quorum_state.self_stop).
func TestNetnsOneVoteVIPTakeoverWithinTheShownGate(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	q := newOneVoteBed(t)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2")+"\n[ip.vip]\nipname = \""+vip+"\"\nipdev = \""+bedDev+"\"\nnetmask = \"24\"\n")
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	qs := c["n2"].status().Cluster.QuorumState
	if qs == nil || qs.SelfStop == nil || !qs.SelfStop.OneVote {
		t.Fatalf("n2 shows no one-vote takeover gate: %+v", qs)
	}
	gate := time.Duration(qs.SelfStop.OneVoteMs) * time.Millisecond
	// the app's 3s and the ip's 5s, and a beat
	if budget := time.Duration(qs.SelfStop.StopBudgetMs) * time.Millisecond; budget != 8*time.Second {
		t.Errorf("stop budget %s, want 8s (ip 5s + app 3s)", budget)
	}
	cut := uptime(t)
	q.cut("n1")
	q.waitFor(90*time.Second, "n2 starts web by itself (journal)", func() bool { _, ok := q.first("n2", "start", cut); return ok })
	q.noOverlap()
	stop, _ := q.first("n1", "stop", cut)
	start, _ := q.first("n2", "start", cut)
	took := time.Duration((start.T - cut) * float64(time.Second))
	// n1's lease (8s), the arbitrator's freshness (2.5s), the shown gate,
	// ready_period (2s), and 3s for the beats and the reports
	bound := quorum.DefaultLease + quorum.DefaultFresh + gate + 2*time.Second + 3*time.Second
	t.Logf("VIP + app: cut -> n1 stop %.2fs, cut -> n2 start %s (gate shown %s, bound %s)", stop.T-cut, took.Round(10*time.Millisecond), gate, bound)
	if took > bound {
		t.Errorf("n2 started web %s after the cut, more than %s (lease + freshness + the shown gate %s + ready_period + 3s)", took, bound, gate)
	}
}

// 2 nodes, quorum on, the one-vote arbitrator: clean restarts of the
// daemons, the peer's then the owner's then the peer's again, stop
// nothing. Each new run is held (its previous run was heard a moment
// ago: it could be a clone) and then trusted; between the trust and the
// copy of its data that follows, the other node counted it lost, voted
// alone without the arbitrator's grant and stopped web (the chaos
// suite's RestartOnebyOne/q; here the arbitrator answered and the vote
// was kept). The external journal has no line after web's start, and no
// node voted.
func TestNetnsOneVoteCleanRestartsStopNothing(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	q := newOneVoteBed(t)
	c := q.nodes
	since := q.webOnN1()
	names := []string{"n1", "n2"}
	for _, n := range []string{"n2", "n1", "n2"} {
		other := "n1"
		if n == "n1" {
			other = "n2"
		}
		c[n].must("nodemgr", "daemon", "stop")
		q.startDaemon(n)
		q.converge(names, 30*time.Second)
		// the hold of n's new run ended: its instances are known again
		q.waitFor(30*time.Second, other+" knows "+n+"'s instances again", func() bool {
			i, ok := c[other].status().Services["web"].Instances[n]
			return ok && !i.Stale && i.Avail != dataset.StatusUnknown
		})
	}
	for _, e := range q.events() {
		if e.T > since {
			q.dump()
			t.Fatalf("clean restarts moved web: journal line %d: %s %s %s", e.Line, e.Node, e.Svc, e.Kind)
		}
	}
	for _, n := range names {
		if log := nodeLog(t, c[n]); strings.Contains(log, "lost contact with") {
			q.dump()
			t.Fatalf("%s counted its peer lost and voted during clean restarts", n)
		}
	}
	q.waitFor(10*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
}
