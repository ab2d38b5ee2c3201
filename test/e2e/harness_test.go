package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

var binDir string

func TestMain(m *testing.M) {
	if os.Getenv(chaos.DiskAttackEnv) != "" {
		os.Exit(chaos.DiskAttackerMain()) // a disk attacker's process (disk_test.go)
	}
	dir, err := os.MkdirTemp("", "haven-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := testbed.Build(dir, "", "haven/cmd/nodemgr", "haven/cmd/svcmgr", "haven/cmd/svcmon"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// node is one Haven node with its own root.
type node struct {
	t    *testing.T
	name string
	root string
	// bins is the directory of the binaries this node runs ("": the
	// current build; the previous release's for the upgrade tests).
	bins string
}

func newNode(t *testing.T, name, nodeToml string) *node {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	if nodeToml == "" {
		nodeToml = testbed.NodeToml{Name: name, Keys: []string{`monitor_interval = "300ms"`}}.String()
	}
	if err := testbed.WriteNodeToml(root, nodeToml); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, name: name, root: root}
	// leave no daemon or service process behind
	t.Cleanup(func() { testbed.StopDaemon(filepath.Join(binDir, "nodemgr"), root) })
	return n
}

// run runs one of the binaries against this node's root.
func (n *node) run(bin string, args ...string) testbed.Result {
	n.t.Helper()
	dir := binDir
	if n.bins != "" {
		dir = n.bins
	}
	r, err := testbed.Run(filepath.Join(dir, bin), n.root, args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return r
}

// must runs and fails the test on a non-zero exit.
func (n *node) must(bin string, args ...string) string {
	n.t.Helper()
	r := n.run(bin, args...)
	if r.Code != 0 {
		n.t.Fatalf("%s %s: %s", bin, strings.Join(args, " "), r)
	}
	return r.Out
}

func (n *node) startDaemon() {
	n.t.Helper()
	n.must("nodemgr", "daemon", "start")
}

func (n *node) status() dataset.ClusterStatus {
	n.t.Helper()
	out := n.must("svcmon", "--format", "json")
	var st dataset.ClusterStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		n.t.Fatalf("svcmon json: %v\n%s", err, out)
	}
	return st
}

// instance returns the local instance of svc as seen in the status object.
func (n *node) instance(svc string) dataset.Instance {
	return n.status().Services[svc].Instances[n.name]
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := testbed.WaitFor(d, 50*time.Millisecond, what, cond); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := testbed.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
