package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// The ladder where the service runs, with real daemons: monitor_action
// none, restart 1,
// multiple_active warn. web runs on n2; its app dies there and its restart
// fails (a start that fails while {var}/nostart exists): n2 gives up; the
// leader n1 starts web; then the app dies on n1. Only n1 restarts it: n2,
// whose instance gave up, never runs the app again.
func TestLadderGaveUpNodeLeavesTheRestartToTheOwner(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	c["n1"].must("nodemgr", "freeze")
	svc := ladderService("none", 1, "200ms")
	svc = strings.Replace(svc, "[DEFAULT]\n", "[DEFAULT]\nmultiple_active = \"warn\"\n", 1)
	svc = strings.Replace(svc, `start = "sh -c '`, `start = "sh -c 'test ! -f {var}/nostart || exit 1; `, 1)
	createService(t, c["n1"], "web", svc)
	waitFor(t, 15*time.Second, "web up on n2", func() bool { return upOnlyOn(c["n1"], "web", "n2")() && appPid(c["n2"], "web") != 0 })
	c["n1"].must("nodemgr", "thaw")

	nostart := filepath.Join(c["n2"].root, "var", "services", "web", "nostart")
	writeFile(t, nostart, "")
	killApp(t, c["n2"], "web")
	waitFor(t, 15*time.Second, "n2 gave up", func() bool {
		return c["n2"].instance("web").GaveUp != ""
	})
	waitFor(t, 15*time.Second, "web's app running on n1", func() bool { return appPid(c["n1"], "web") != 0 })
	if err := os.Remove(nostart); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "n1 up, seen from n2", upOnlyOn(c["n2"], "web", "n1"))

	at, old := killApp(t, c["n1"], "web")
	deadline := time.Now().Add(20 * time.Second)
	restarted := false
	for time.Now().Before(deadline) && !restarted {
		if p := appPid(c["n2"], "web"); p != 0 {
			t.Fatalf("web's app runs on n2 again (pid %d): n2, which gave up, restarted it too", p)
		}
		p := appPid(c["n1"], "web")
		restarted = p != 0 && p != old
		time.Sleep(50 * time.Millisecond)
	}
	if !restarted {
		t.Fatal("n1 did not restart web's app")
	}
	t.Logf("n1 restarted the app %s after the kill", time.Since(at).Round(time.Millisecond))
	// a few more monitor intervals: n2 stays out of it
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if p := appPid(c["n2"], "web"); p != 0 {
			t.Fatalf("web's app runs on n2 again (pid %d)", p)
		}
	}
	if i := c["n2"].instance("web"); i.Monitor.State != dataset.Idle || i.Monitor.LocalExpect != dataset.ExpectNone {
		t.Fatalf("n2: monitor %+v, want idle, local expect none", i.Monitor)
	}
}
