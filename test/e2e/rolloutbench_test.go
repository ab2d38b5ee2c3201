package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRolloutFigure measures docs/benchmarks.md's figure 11: a rollout of
// a flex service of 3 instances with the update_* defaults (1 at a time,
// update_monitor 5s, no delay), 3 daemons on loopback, from the request to
// rollout --wait's answer, against the bound 3 × (start +
// update_monitor) + 2 s. A measurement, not a pass/fail timing: it runs
// only when HAVEN_BENCH_ROLLOUT gives its number of rollouts
// (bench/rollout.sh), and fails only when a rollout does not end done.
func TestRolloutFigure(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("HAVEN_BENCH_ROLLOUT"))
	if runs <= 0 {
		t.Skip("a measurement (docs/benchmarks.md, figure 11): HAVEN_BENCH_ROLLOUT=N runs it (bench/rollout.sh)")
	}
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	journal := filepath.Join(t.TempDir(), "journal")
	svc := fmt.Sprintf(`[DEFAULT]
orchestrate = "ha"
nodes = ["n1", "n2", "n3"]
topology = "flex"
flex_target = 3

[app.main]
start = "%s"
stop  = "sh -c 'kill $(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 $(cat {var}/main.pid) 2>/dev/null'"
monitor = true
timeout = "10s"
`, strings.ReplaceAll(versionStart(journal, "v0"), `"`, `\"`))
	createService(t, c["n1"], "app", svc)
	waitFor(t, 40*time.Second, "app up on 3 nodes", func() bool { return c["n3"].status().Services["app"].Flex.Up == 3 })
	var took []time.Duration
	for k := 1; k <= runs; k++ {
		c["n2"].must("svcmgr", "-s", "app", "set", "--kw", "app#main.start="+versionStart(journal, fmt.Sprintf("v%d", k)))
		waitFor(t, 20*time.Second, "n3 sees 3 instances on an older config", func() bool {
			return c["n3"].status().Services["app"].Configs.Old == 3
		})
		from := time.Now()
		if out := c["n3"].must("svcmgr", "-s", "app", "rollout", "--wait", "--time", "120s"); !strings.Contains(out, "done") {
			t.Fatalf("rollout %d: %s", k, out)
		}
		d := time.Since(from)
		var start, stop time.Duration
		for _, n := range names {
			i := c["n3"].status().Services["app"].Instances[n]
			start = max(start, time.Duration(i.LastStartMs)*time.Millisecond)
			stop = max(stop, time.Duration(i.LastStopMs)*time.Millisecond)
		}
		bound := 3*(start+5*time.Second) + 2*time.Second
		t.Logf("rollout %d of 3 instances, defaults: %s (start %s, stop %s: bound 3 × (start + update_monitor) + 2 s = %s)",
			k, d.Round(10*time.Millisecond), start, stop, bound.Round(10*time.Millisecond))
		took = append(took, d)
	}
	slices.Sort(took)
	t.Logf("RESULT rollout of 3 flex instances, update_monitor 5s, %d runs: median %s, min %s, max %s",
		runs, took[len(took)/2].Round(10*time.Millisecond), took[0].Round(10*time.Millisecond), took[len(took)-1].Round(10*time.Millisecond))
}
