package e2e

import (
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// svcmgr start --local on a node where the service runs elsewhere:
// refused, exit 1, naming the node that runs it, as restart is;
// nothing starts there. --force without --local is a usage error (exit 2);
// start --local --force starts the second copy on purpose.
func TestStartLocalRefusedWhereItRunsElsewhere(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, `multiple_active = "warn"`))
	waitFor(t, 15*time.Second, "web up on n1, seen from n2", upOnlyOn(c["n2"], "web", "n1"))
	waitFor(t, 5*time.Second, "web's app running on n1", func() bool { return appPid(c["n1"], "web") != 0 })

	r := c["n2"].run("svcmgr", "-s", "web", "start", "--local")
	if r.Code != 1 || !strings.Contains(r.Out+r.Err, "web runs on n1") || !strings.Contains(r.Out+r.Err, "--force") {
		t.Fatalf("start --local on n2: want exit 1 naming n1 and --force, got %s", r)
	}
	if r := c["n2"].run("svcmgr", "-s", "web", "start", "--force"); r.Code != 2 || !strings.Contains(r.Err, "--force goes with --local") {
		t.Fatalf("start --force without --local: want exit 2, got %s", r)
	}
	if p := appPid(c["n2"], "web"); p != 0 {
		t.Fatalf("the refused start ran web's app on n2 (pid %d)", p)
	}
	if out := c["n2"].must("svcmgr", "-s", "web", "start", "--local", "--force"); !strings.Contains(out, "web: started") {
		t.Fatalf("start --local --force on n2: %q", out)
	}
	if appPid(c["n2"], "web") == 0 || appPid(c["n1"], "web") == 0 {
		t.Fatalf("after start --local --force: app pids n1 %d n2 %d, want both running", appPid(c["n1"], "web"), appPid(c["n2"], "web"))
	}
}
