package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// node.ready_fast_ack on real daemons: after a kill -9 of the owner, the
// next node starts web on the acks of the live peers, before ready_period
// ends (the start's reason says so in node.log); nothing runs twice.
func TestFastAckFailoverAfterCrash(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{extra: "ready_fast_ack = true"})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2", "n3"]`, ""))
	waitFor(t, 20*time.Second, "web up on n1 (the leader)", upOnlyOn(c["n2"], "web", "n1"))

	killed := time.Now()
	syscallKill(daemonPid(t, c["n1"]))
	killService(t, c["n1"], "web")
	waitFor(t, 30*time.Second, "web failed over to n2", upOnlyOn(c["n3"], "web", "n2"))
	t.Logf("failover after the crash took %s (hb.timeout 3s, ready_period 2s, fast ack)", time.Since(killed).Round(10*time.Millisecond))
	log := readFile(t, filepath.Join(c["n2"].root, "log", "node.log"))
	if !strings.Contains(log, "every live node of the service acked the claim: start before the ready period ends (fast ack)") {
		t.Fatalf("n2's node.log does not show a start on the acks:\n%s", log)
	}
	if w := where(c["n3"], "web"); len(w) != 1 {
		t.Fatalf("web up on %v after the failover, want exactly one node", w)
	}
}
