package e2e

import (
	"strings"
	"testing"
)

// ready_period = 0 used to mean 16s silently: the daemon now refuses it
// with exit 2, naming the file, the line and the key.
func TestDaemonRefusesZeroReadyPeriod(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "[node]\nname = \"n1\"\nready_period = 0\n")
	r := n.run("nodemgr", "daemon", "start")
	if r.Code != 2 || !strings.Contains(r.Err, "node.toml:3: node.ready_period: must be more than 0") {
		t.Fatalf("want exit 2 and node.toml:3: node.ready_period: must be more than 0, got %s", r)
	}
}
