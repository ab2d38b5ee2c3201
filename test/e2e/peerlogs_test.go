package e2e

import (
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// `svcmgr logs --node N` reads N's log of the service through the cluster:
// the same lines N prints itself.
func TestLogsOfAnotherNode(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 15*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))

	own := c["n1"].must("svcmgr", "-s", "web", "logs", "--lines", "5")
	if !strings.Contains(own, "start") {
		t.Fatalf("n1's own log of web has no start line:\n%s", own)
	}
	var remote string
	waitFor(t, 10*time.Second, "n2 reads n1's log", func() bool {
		remote = c["n2"].must("svcmgr", "-s", "web", "logs", "--lines", "5", "--node", "n1")
		return remote == c["n1"].must("svcmgr", "-s", "web", "logs", "--lines", "5")
	})
	if mine := c["n2"].must("svcmgr", "-s", "web", "logs", "--lines", "5"); mine == remote {
		t.Fatalf("n2 logs --node n1 printed n2's own lines:\n%s", remote)
	}
	if r := c["n2"].run("svcmgr", "-s", "web", "logs", "--node", "n1", "--format", "json"); r.Code != 0 || !strings.Contains(r.Out, `"node":"n1"`) {
		t.Fatalf("logs --node n1 --format json: %s", r)
	}
	for _, bad := range [][]string{{"--node", "n9"}, {"--node", "n1", "--follow"}} {
		r := c["n2"].run("svcmgr", append([]string{"-s", "web", "logs"}, bad...)...)
		if r.Code != 2 {
			t.Fatalf("logs %v: want exit 2, got %s", bad, r)
		}
		t.Logf("logs %v: %s", bad, r.Err)
	}
	// n1's daemon stopped for maintenance: said at once, not after the
	// ask's timeout, nor blamed on an older Haven
	c["n1"].must("nodemgr", "daemon", "stop")
	waitFor(t, 10*time.Second, "n2 sees n1 in maintenance", func() bool {
		return strings.Contains(c["n2"].must("svcmon", "--format", "json"), `"status": "maintenance"`)
	})
	start := time.Now()
	r := c["n2"].run("svcmgr", "-s", "web", "logs", "--node", "n1")
	if r.Code != 1 || !strings.Contains(r.Err, "n1 is maintenance") || strings.Contains(r.Err, "older Haven") || time.Since(start) > 3*time.Second {
		t.Fatalf("logs --node of a node in maintenance: want exit 1 at once saying so; got %s after %s", r, time.Since(start))
	}
}
