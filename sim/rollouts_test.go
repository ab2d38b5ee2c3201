package sim

import (
	"strings"
	"testing"
)

// The rollout observers see what they are for: two rollbacks of one
// rollout, made by hand on the two sides of a cut (an admin's order is
// not held back by the quorum: behaviour.md 11.6), and the restarts of a
// rollout of update_parallelism 2, two at once.
func TestRolloutObservers(t *testing.T) {
	res, err := RunScript("rollbacks", `cluster n1 n2 n3 hb.timeout=3s hb.interval=1s ready_period=2s
service app nodes=n1,n2,n3 orchestrate=ha topology=flex flex_target=3 flex_max=3 update_parallelism=2 update_monitor=2s start=500ms stop=500ms
run 8s
n2: svcmgr -s app set --kw priority=50
run 1s
n2: svcmgr -s app rollout
run 10s
expect app rollout done
expect app restarts within 2
expect app restarts within 1
expect app rolled back once
expect app configs converged
partition n1 | n2 n3
run 5s
n1: svcmgr -s app rollback
n2: svcmgr -s app rollback
run 5s
heal
run 10s
expect app rolled back once
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"expect app restarts within 1", "expect app rolled back once"}
	if len(res.Failed) != len(want) {
		t.Fatalf("failed %q, want the lines %q alone\n%s", res.Failed, want, res.Output)
	}
	for i, w := range want {
		if !strings.Contains(res.Failed[i], w) {
			t.Errorf("failed %q, want %q", res.Failed[i], w)
		}
	}
	t.Logf("seen: %s; %s", res.Failed[0], res.Failed[1])
	if !strings.Contains(res.Failed[1], " and ") {
		t.Errorf("the rollbacks are not both named: %s", res.Failed[1])
	}
}
