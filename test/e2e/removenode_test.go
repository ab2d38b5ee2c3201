package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// Removing the node that runs a service from the service's nodes stops it
// there, with the drivers of the config that had the node (its process is
// gone), and the service starts on a node still in the list once that stop
// ended: up on n2 only, never on both.
func TestRemovedNodeStopsItsInstance(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 20*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	b, err := os.ReadFile(filepath.Join(c["n1"].root, "var", "services", "web", "main.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	c["n2"].must("svcmgr", "-s", "web", "set", "--kw", "nodes-=n1")
	waitFor(t, 20*time.Second, "web up on n2", upOnlyOn(c["n1"], "web", "n2"))
	if testbed.Alive(pid) {
		t.Fatalf("the app of web (pid %d) still runs on n1, removed from the service's nodes", pid)
	}
	if log := nodeLog(t, c["n1"]); !strings.Contains(log, "this node was removed from the service's nodes") {
		t.Fatal("n1's log does not say why it stopped web")
	}
}
