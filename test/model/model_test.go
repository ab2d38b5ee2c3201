package model

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/sim"
)

// hashOf builds w after trace and hashes it with the facts the moves
// leave.
func hashOf(t *testing.T, w *World, trace []string, f facts) string {
	t.Helper()
	c, err := w.build(trace)
	if err != nil {
		t.Fatal(err)
	}
	return Hash(c, w, f)
}

// The state hash is canonical: two orders of the same independent moves
// (at the same instant, on different nodes, or a fault of the network and
// one of a machine) hash equal, and different worlds hash differently.
func TestHashCanonical(t *testing.T) {
	w := OneVote2()
	base := facts{Faults: 2, Tokens: map[string]uint64{}}
	cutN2 := base.clone()
	cutN2.Unreachable = []string{"n2"}
	for _, pair := range [][2]string{
		{"crash n1", "arbitrator a unreachable n2"},
		{"crash n2", "fail n1 web stop 1"},
		{"partition n1 | n2", "arbitrator a unreachable n2"},
	} {
		f := base.clone()
		if strings.HasPrefix(pair[1], "arbitrator") {
			f = cutN2.clone()
		}
		one := hashOf(t, w, []string{pair[0], pair[1], "run 3s"}, f)
		two := hashOf(t, w, []string{pair[1], pair[0], "run 3s"}, f)
		if one != two {
			t.Errorf("%q then %q hashes %s, the other order %s", pair[0], pair[1], one[:12], two[:12])
		}
	}
	// frames held back on one link, and a crash of the other node
	w2 := OnPath2()
	f := base.clone()
	one := hashOf(t, w2, []string{"withhold n1 n2", "crash n2", "run 3s"}, f)
	two := hashOf(t, w2, []string{"crash n2", "withhold n1 n2", "run 3s"}, f)
	if one != two {
		t.Errorf("withhold then crash hashes %s, the other order %s", one[:12], two[:12])
	}
	// the same lines twice: the same world
	if a, b := hashOf(t, w, []string{"crash n1", "run 3s"}, base), hashOf(t, w, []string{"crash n1", "run 3s"}, base); a != b {
		t.Errorf("the same trace hashes %s then %s", a[:12], b[:12])
	}
	// different worlds
	distinct := map[string]string{}
	for _, tr := range [][]string{{"run 3s"}, {"crash n1"}, {"crash n2"}, {"partition n1 | n2"}, {"crash n1", "run 3s"}} {
		h := hashOf(t, w, tr, base)
		if prev, dup := distinct[h]; dup {
			t.Errorf("%q and %q hash equal", prev, strings.Join(tr, "; "))
		}
		distinct[h] = strings.Join(tr, "; ")
	}
}

// The checker's bound for CI (make model): no invariant breaks in the
// worlds of the first slice. The figures are in docs/model.md.
func TestModelSafe(t *testing.T) {
	for _, c := range []struct {
		w *World
		b Bounds
	}{
		{Tie2(), Bounds{Depth: 8, Faults: 2}},
		{OneVote2(), Bounds{Depth: 6, Faults: 2}},
		{Plain2(), Bounds{Depth: 6, Faults: 2}},
		{Majority3(), Bounds{Depth: 6, Faults: 2}},
		{OnPath2(), Bounds{Depth: 4, Faults: 2}},
		{Admin2(), Bounds{Depth: 4, Faults: 1, Admin: 1}},
		{WithoutCrashes(Ladder2()), Bounds{Depth: 7, Faults: 3}},
		{Flex3(), Bounds{Depth: 8, Faults: 1}},
		{Rollout3(), Bounds{Depth: 8, Faults: 1}},
		{Rollout3SF(), Bounds{Depth: 8, Faults: 1}},
	} {
		r, err := Check(c.w, c.b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s depth %d faults %d admin %d: %d states, %d merged, %d left out by the reduction, %d worlds built, %s", c.w.Name, c.b.Depth, c.b.Faults, c.b.Admin, r.States, r.Merged, r.Pruned, r.Replays, r.Elapsed.Round(1e6))
		if v := r.Violation; v != nil {
			t.Errorf("%s: %s after %d moves; the scenario:\n%s", c.w.Name, v.Invariant, len(v.Trace), v.Script)
		}
	}
}

// Without the node guard, a daemon stopped (maintenance) on the node cut
// off leaves its service running, and the majority takes it over: the
// hazard the guard is for, which the checker finds.
func TestWithoutGuardDaemonStop(t *testing.T) {
	w := WithoutGuard(Majority3(), true)
	w.DiskFaults = false // not needed to show it (and half the cost of the bound)
	r, err := Check(w, Bounds{Depth: 5, Faults: 2})
	if err != nil {
		t.Fatal(err)
	}
	v := r.Violation
	if v == nil {
		t.Fatalf("no violation in %s (%d states)", w.Name, r.States)
	}
	t.Logf("%s: %s; shortest trace %d moves: %s", w.Name, v.Invariant, len(v.Trace), strings.Join(v.Trace, "; "))
	res, err := sim.RunScript(w.Name, v.Script)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) == 0 {
		t.Errorf("the trace does not fail in the simulation:\n%s", res.Output)
	}
}

// Liveness under fairness, the CI bound: once the faults stop (every
// fault in force repaired, every daemon started), web runs on one node
// within 60s, from every state of tie2 up to depth 4 with 2 faults; and
// in rollout3, up to depth 6 with 1 fault (and with the rollout made on
// n1, depth 4), web's configs converge (every node holds one config,
// every instance up runs it) within 60s: the interrupted turn, the
// rollback made between two peers declared down and the rollback lost at
// a daemon's start were found so (scenarios rollout_turn_interrupted,
// rollout_rollback_cut and rollout_rollback_restarted).
func TestModelLive(t *testing.T) {
	for _, c := range []struct {
		w *World
		b Bounds
	}{
		{Tie2(), Bounds{Depth: 4, Faults: 2, Live: time.Minute}},
		{Rollout3(), Bounds{Depth: 6, Faults: 1, Live: time.Minute}},
		{MadeOn(Rollout3(), "n1"), Bounds{Depth: 4, Faults: 1, Live: time.Minute}},
	} {
		r, err := Check(c.w, c.b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s depth %d faults %d, live 60s: %d states, %d merged, %d worlds built, %s", c.w.Name, c.b.Depth, c.b.Faults, r.States, r.Merged, r.Replays, r.Elapsed.Round(1e6))
		if v := r.Violation; v != nil {
			t.Errorf("%s: %s after %d moves; the scenario:\n%s", c.w.Name, v.Invariant, len(v.Trace), v.Script)
		}
	}
}

// A rollout world reaches the automatic rollback (not only the rollouts
// that end well): in rollout3, web's app dies on n1 within its turn's
// update_monitor, n2 (the rollout's maker) rolls the config back once,
// and the trace's script passes with the rollout's expects (rolled back
// once, one restart at a time; the availability expect is left out: the
// trace holds a fault). A trace without one holds it, and passes.
func TestRolloutScriptReplays(t *testing.T) {
	w := Rollout3()
	trace := []string{"run 3s", "kill n1 web", "run 3s", "run 3s", "run 3s"}
	script := w.Script(trace) + "expect web rollout rollback\nexpect web configs converged\nexpect web@n2 keyword priority 100\n"
	if strings.Contains(script, "since rollout") {
		t.Errorf("a trace with a fault holds the availability expect:\n%s", script)
	}
	res, err := sim.RunScript("replay", script)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 0 {
		t.Fatalf("the trace of rollout3 fails in the simulation: %v\n%s", res.Failed, res.Output)
	}
	// a path without a fault: the availability expect is there, and holds
	script = w.Script([]string{"run 3s", "run 3s", "run 3s", "run 3s"}) + "expect web rollout done\nexpect web configs converged\n"
	if !strings.Contains(script, "expect web at least 1 up since rollout") {
		t.Errorf("a trace without a fault lacks the availability expect:\n%s", script)
	}
	if res, err = sim.RunScript("replay", script); err != nil || len(res.Failed) != 0 {
		t.Fatalf("the rollout without a fault: %v %v", err, res.Failed)
	}
}

// The liveness check sees a service that stays down: an acknowledged
// admin stop keeps web down once the faults stop (which is why the worlds
// with admin actions are not checked for liveness), and its script fails
// in the simulation on its last expect line.
func TestLiveSeesDown(t *testing.T) {
	w := Admin2()
	w.Admin, w.DiskFaults = []string{"stop"}, false
	r, err := Check(w, Bounds{Depth: 1, Faults: 0, Admin: 1, Live: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	v := r.Violation
	if v == nil || !strings.Contains(v.Invariant, "web up on 0 nodes") {
		t.Fatalf("want web down after an admin stop, got %+v", v)
	}
	res, err := sim.RunScript(w.Name, v.Script)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0], "expect web up on 1 node") {
		t.Errorf("the script fails on %v, want its liveness expect alone", res.Failed)
	}
}

// A violation's script replays in the simulation (its expect fails
// there): a trace that the checker found is a regression test.
func TestScriptReplays(t *testing.T) {
	w := Tie2()
	script := w.Script([]string{"partition n1 | n2", "run 3s"})
	res, err := sim.RunScript("replay", script)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 0 {
		t.Fatalf("a safe trace fails in the simulation: %v", res.Failed)
	}
}

// A flex service's script holds it to flex_max, not to one instance: in
// flex3 a node cut off stops its instance (split_action) and the spare
// takes its slot once the takeover gate opens, 2 instances up all along,
// and the replay passes (the failover rules would fail it).
func TestFlexScriptReplays(t *testing.T) {
	w := Flex3()
	trace := []string{"partition n1 | n2 n3"}
	for range 7 {
		trace = append(trace, w.Step)
	}
	script := w.Script(trace) + "expect web up on n2,n3\n"
	res, err := sim.RunScript("replay", script)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 0 {
		t.Fatalf("a safe trace of flex3 fails in the simulation: %v\n%s", res.Failed, res.Output)
	}
}

// Two instances of a flex service that start within one move are
// compared in their order: n2 starts with token 5, then n1 with 7, 0.8 s
// later and in the same step (both came back from a split), and no token
// went backwards at any state of the path, though n1 comes first by name.
func TestFlexTokensInOrder(t *testing.T) {
	w := Flex3()
	trace := []string{"pause n1 6s", "run 3s", "pause n3 6s", "run 3s", "run 3s", "run 3s", "run 3s"}
	f := facts{Tokens: map[string]uint64{}, MaxToken: map[string]uint64{}}
	for i := range trace {
		c, err := w.build(trace[:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if inv := w.check(c, &f); inv != "" {
			t.Fatalf("after %q: %s", trace[:i+1], inv)
		}
	}
	if f.Tokens["web/n1"] != 7 || f.Tokens["web/n2"] != 5 {
		t.Fatalf("tokens %v, want n2's 5 then n1's 7 in the last step", f.Tokens)
	}
	res, err := sim.RunScript("replay", w.Script(trace))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 0 {
		t.Fatalf("the trace fails in the simulation: %v", res.Failed)
	}
}

// The longer bound, by hand (docs/model.md):
//
//	HAVEN_MODEL_DEPTH=8 HAVEN_MODEL_FAULTS=2 go test -count=1 -v -run TestModelDeep -timeout 60m ./test/model
//
// HAVEN_MODEL_WORLD picks one world by name.
func TestModelDeep(t *testing.T) {
	depth, _ := strconv.Atoi(os.Getenv("HAVEN_MODEL_DEPTH"))
	faults, _ := strconv.Atoi(os.Getenv("HAVEN_MODEL_FAULTS"))
	admin, _ := strconv.Atoi(os.Getenv("HAVEN_MODEL_ADMIN"))     // admin2's admin actions (default 1)
	live, _ := time.ParseDuration(os.Getenv("HAVEN_MODEL_LIVE")) // liveness within, when set (not admin2)
	noReduce := os.Getenv("HAVEN_MODEL_NOREDUCE") != ""          // both orders of the moves that commute
	if admin <= 0 {
		admin = 1
	}
	if depth <= 0 || faults <= 0 {
		t.Skip("the longer bound runs by hand: set HAVEN_MODEL_DEPTH and HAVEN_MODEL_FAULTS")
	}
	for _, w := range Worlds() {
		if name := os.Getenv("HAVEN_MODEL_WORLD"); name != "" && name != w.Name {
			continue
		}
		b := Bounds{Depth: depth, Faults: faults, NoReduce: noReduce}
		if len(w.Admin) > 0 {
			b.Admin = admin
		} else {
			b.Live = live
		}
		r, err := Check(w, b)
		if err != nil {
			t.Fatal(err)
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		t.Logf("%s depth %d faults %d admin %d: %d states, %d merged, %d left out by the reduction, %d worlds built, %s, heap %d MiB", w.Name, depth, faults, b.Admin, r.States, r.Merged, r.Pruned, r.Replays,
			r.Elapsed.Round(1e6), m.HeapAlloc>>20)
		if v := r.Violation; v != nil {
			t.Errorf("%s: %s after %d moves; the scenario:\n%s", w.Name, v.Invariant, len(v.Trace), v.Script)
		}
	}
}

// The premise of the partial-order reduction: two moves that commute by
// their footprints (each sets a flag of one node alone, not the same node)
// lead to the same world in either order, each still offered after the
// other, and to the same world 3s later (what the hash does not show,
// the future does). Checked in every world for every such pair offered at
// the end of the warm-up and one move after it (a crash, a partition, a
// frame held, a failed restart...) in onevote2 (whose flags are the
// arbitrator's, the failed stops and the pauses; plain2 and two2 have
// fewer of the same) and ladder2 (the failed restarts).
func TestCommute(t *testing.T) {
	b := Bounds{Faults: 9, Admin: 1}
	pairs := 0
	for _, w := range []*World{OneVote2(), Ladder2()} {
		root, err := w.build(nil)
		if err != nil {
			t.Fatal(err)
		}
		f0 := facts{Tokens: map[string]uint64{}, MaxToken: map[string]uint64{}}
		w.check(root, &f0)
		states := []state{{facts: f0, seen: w.see(root)}}
		for _, m := range w.moves(states[0].seen, f0, b) {
			n, _, _, err := w.after(states[0], m)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, n)
		}
		for _, s := range states {
			ms := w.moves(s.seen, s.facts, b)
			for _, x := range ms {
				for _, y := range ms {
					if x.line >= y.line || !commute(x, y) {
						continue
					}
					pairs++
					xy, yx := w.order(t, s, x, y, b), w.order(t, s, y, x, b)
					if xy != yx {
						t.Errorf("%s after %q: %q then %q gives %s, the other order %s", w.Name, s.trace, x.line, y.line, xy, yx)
					}
				}
			}
		}
	}
	t.Logf("%d pairs of moves that commute, both orders alike", pairs)
	if pairs == 0 {
		t.Error("no pair of moves that commute: nothing checked")
	}
}

// order is the world of s then x then y, and 3s later: their hashes and
// the invariant broken there, or why y is not offered after x.
func (w *World) order(t *testing.T, s state, x, y move, b Bounds) string {
	t.Helper()
	sx, _, _, err := w.after(s, x)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range w.moves(sx.seen, sx.facts, b) {
		if m.line != y.line {
			continue
		}
		sxy, c, inv, err := w.after(sx, m)
		if err != nil {
			t.Fatal(err)
		}
		later, c2, inv2, err := w.after(sxy, move{line: w.Step})
		if err != nil {
			t.Fatal(err)
		}
		return Hash(c, w, sxy.facts)[:12] + " " + inv + " then " + Hash(c2, w, later.facts)[:12] + " " + inv2
	}
	return "no " + y.line + " after " + x.line
}

// The partial-order reduction with the merge keeps every world: the same
// distinct states as without it, for no more worlds built, where it
// leaves moves out (ladder2 without crashes: the failed restarts of n1
// and n2 commute). It fails with a premise that takes every two moves as
// commuting (36 states of 79). Within this bound it does not see the
// reopening of worlds go: every world is reached without it too.
func TestReductionKeepsEveryState(t *testing.T) {
	w := WithoutCrashes(Ladder2())
	b := Bounds{Depth: 5, Faults: 3}
	with, err := Check(w, b)
	if err != nil {
		t.Fatal(err)
	}
	b.NoReduce = true
	without, err := Check(w, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with the reduction: %d states, %d worlds built, %d moves left out, %d worlds reopened; without: %d states, %d worlds built",
		with.States, with.Replays, with.Pruned, with.Reopened, without.States, without.Replays)
	if with.Pruned == 0 {
		t.Fatal("the reduction left no move out: nothing checked")
	}
	if with.States != without.States || with.Replays > without.Replays {
		t.Errorf("with the reduction %d states, %d worlds built; without %d, %d: want the same states, no more worlds",
			with.States, with.Replays, without.States, without.Replays)
	}
}
