package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/internal/paths"
	"haven/test/testbed"
)

// nodemgr daemon restart: a clean stop (maintenance) then a start; the new
// daemon adopts the running service (same process), and a restart of a
// daemon that is not running starts it.
func TestDaemonRestartAdoptsServices(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	if out := n.must("nodemgr", "daemon", "restart"); !strings.Contains(out, "daemon not running") || !strings.Contains(out, "daemon started") {
		t.Fatalf("restart of a stopped daemon: %s", out)
	}
	createService(t, n, "web", testbed.PidService)
	n.must("svcmgr", "-s", "web", "start", "--local")
	pidFile := filepath.Join(paths.New(n.root).ServiceVar("web"), "main.pid")
	app := testbed.ReadPID(pidFile)
	if app == 0 {
		t.Fatal("web's app has no pid")
	}
	before := testbed.DaemonPID(n.root)
	out := n.must("nodemgr", "daemon", "restart")
	if !strings.Contains(out, "daemon stopped (stop)") || !strings.Contains(out, "daemon started") {
		t.Fatalf("restart: %s", out)
	}
	if after := testbed.DaemonPID(n.root); after == before || after == 0 {
		t.Fatalf("daemon pid %d before the restart, %d after", before, after)
	}
	waitFor(t, 10*time.Second, "web up after the restart", func() bool {
		return strings.Contains(n.must("svcmgr", "-s", "web", "print", "status", "--format", "json"), `"avail": "up"`)
	})
	if got := testbed.ReadPID(pidFile); got != app || !testbed.Alive(app) {
		t.Fatalf("web's app was pid %d, now %d (alive %v): not adopted", app, got, testbed.Alive(app))
	}
}
