package sim

import (
	"testing"

	"haven/dataset"
	"haven/node"
)

// The rollout_progress events (node/rolloutnote.go) that the metrics
// read: on every node, the rollout moves through its turns to done with
// the 3 instances on the current config; a priority edit after it (a
// keyword that only orchestrates: config.OrchestrationKeywords) leaves
// them on it (the simulation's configs hold only [DEFAULT] keywords, all
// of which but topology orchestrate, so it cannot show an edit that makes
// them old: the daemon's TestMetricsRollout does). A node that runs nothing of the service (n4) counts the
// same. (The simulation installs its first configs without a digest: the
// instances started on them count as neither, as svcmon says nothing of
// them.)
func TestRolloutProgressEvents(t *testing.T) {
	res, err := RunScript("rolloutprogress", `cluster n1 n2 n3 n4 hb.timeout=3s hb.interval=1s ready_period=2s
service app nodes=n1,n2,n3,n4 orchestrate=ha topology=flex flex_target=3 flex_max=3 update_monitor=2s start=500ms stop=500ms
run 8s
n2: svcmgr -s app set --kw priority=50
run 2s
n3: svcmgr -s app rollout
run 20s
expect app rollout done
n1: svcmgr -s app set --kw priority=60
run 3s
`)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("%v %v", err, res.Failed)
	}
	last := map[string]node.RolloutProgress{}
	sawDone, sawRunning := map[string]bool{}, map[string]bool{}
	for _, e := range res.Events {
		if ev, ok := e.Event.(node.RolloutProgress); ok {
			last[e.Node] = ev
			sawDone[e.Node] = sawDone[e.Node] || ev.State == dataset.RolloutDone && ev.OK == 3 && ev.Pending == 0 && ev.Current == 3 && ev.Old == 0
			sawRunning[e.Node] = sawRunning[e.Node] || ev.State == dataset.RolloutInProgress && ev.OK > 0 && ev.Pending > 0
		}
	}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		if !sawRunning[n] || !sawDone[n] {
			t.Errorf("%s: saw the rollout in progress with turns ok and pending: %v, done with 3 on the current config: %v", n, sawRunning[n], sawDone[n])
		}
		if l := last[n]; l.State != dataset.RolloutDone || l.Current != 3 || l.Old != 0 {
			t.Errorf("%s's last rollout_progress: %+v, want the rollout done and the 3 instances still on the current config after a priority edit", n, l)
		}
	}
}
