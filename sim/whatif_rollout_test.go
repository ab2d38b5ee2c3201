package sim

import (
	"strings"
	"testing"
	"time"
)

// rolloutSnap is a flex service of 3 on n1..n3 and a spare n4, its
// instances on an older config than their nodes hold where old says so.
func rolloutSnap(old ...string) *Snapshot {
	s := threeNodes()
	s.Nodes["n4"] = SnapshotNode{Status: "up"}
	ins := map[string]SnapshotInstance{}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		ins[n] = SnapshotInstance{Running: n != "n4", Monitor: "idle", OldConfig: strings.Contains(strings.Join(old, ","), n)}
	}
	s.Services = map[string]SnapshotService{"app": {
		Config:    "[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\", \"n4\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = 3\nupdate_monitor = \"3s\"\n",
		Instances: ins}}
	return s
}

// svcmgr simulate --rollout: the instances on an older config restarted
// one batch after the other in the simulation (the same node core), each
// turn's times, done at the end, never fewer than flex_target -
// update_parallelism up nor more than flex_max; instances on the current
// config are not in it; with none old, the answer says there is nothing
// to do (an edit of a keyword that only orchestrates changes nothing of
// that), and a --set of update_parallelism before the rollout sizes its
// batches.
func TestWhatIfRollout(t *testing.T) {
	s := rolloutSnap("n1", "n3")
	res := whatIf(t, s, mustEvents(t, "rollout", "app"), RolloutSpan(s, "app"))
	if len(res.Rollouts) != 1 {
		t.Fatalf("rollouts: %+v\n%s", res.Rollouts, dump(res))
	}
	r := res.Rollouts[0]
	if r.State != "done" || len(r.Batches) != 2 || r.Batches[0][0].Node != "n1" || r.Batches[1][0].Node != "n3" {
		t.Fatalf("rollout of n1 n3: %+v\n%s", r, dump(res))
	}
	for _, b := range r.Batches {
		if tu := b[0]; tu.State != "ok" || tu.Begin == nil || tu.End == nil || time.Duration(*tu.End-*tu.Begin) < 3*time.Second {
			t.Errorf("%s's turn: %+v, want ok, ended update_monitor (3s) at least after its restart", tu.Node, tu)
		}
	}
	if *r.Batches[1][0].Begin < *r.Batches[0][0].End {
		t.Errorf("n3 restarted at %s, before n1's turn ended at %s", time.Duration(*r.Batches[1][0].Begin), time.Duration(*r.Batches[0][0].End))
	}
	if r.FewestUp < 2 || r.Least != 2 || r.MostUp > 3 || r.Most != 3 {
		t.Errorf("up at once: fewest %d (bound %d), most %d (max %d)", r.FewestUp, r.Least, r.MostUp, r.Most)
	}
	if !strings.Contains(strings.Join(res.Assumptions, "\n"), "older config than their node holds (a rollout restarts them): app@n1, app@n3") {
		t.Errorf("assumptions: %q", res.Assumptions)
	}

	// none old: nothing to do
	s = rolloutSnap()
	res = whatIf(t, s, mustEvents(t, "rollout", "app"), time.Minute)
	if r := res.Rollouts[0]; r.ID != "" || !strings.Contains(r.Answer, "nothing to do") {
		t.Errorf("none old: %+v", r)
	}
	// an edit of a keyword that only orchestrates makes nothing old
	// (config.OrchestrationKeywords): still nothing to do
	res = whatIf(t, s, mustEvents(t, "set", "app:update_parallelism=2", "rollout", "app@+2s"), time.Minute)
	if r := res.Rollouts[0]; r.ID != "" || !strings.Contains(r.Answer, "nothing to do") {
		t.Errorf("after a --set of update_parallelism 2, none old: %+v\n%s", r, dump(res))
	}
	// every instance old, update_parallelism 2 set first: 2 batches, 2 then 1
	s = rolloutSnap("n1", "n2", "n3")
	res = whatIf(t, s, mustEvents(t, "set", "app:update_parallelism=2", "rollout", "app@+2s"), RolloutSpan(s, "app"))
	if r := res.Rollouts[0]; r.State != "done" || len(r.Batches) != 2 || len(r.Batches[0]) != 2 || r.Least != 1 || r.FewestUp < 1 {
		t.Errorf("3 old, after a --set of update_parallelism 2: %+v\n%s", r, dump(res))
	}
}
