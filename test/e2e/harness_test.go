package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

var binDir string

// parallelEnv, when set, is how many tests of this package run at once,
// in place of -parallel: `make test` runs every package with one
// -parallel, and these tests mostly wait (hb.timeout, ready windows,
// fences, leases) on daemons that use little CPU, so it runs more of them
// at once here than in the other packages (README, "The CI time budget").
const parallelEnv = "HAVEN_E2E_PARALLEL"

func TestMain(m *testing.M) {
	if os.Getenv(chaos.DiskAttackEnv) != "" {
		os.Exit(chaos.DiskAttackerMain()) // a disk attacker's process (disk_test.go)
	}
	flag.Parse()
	if v := os.Getenv(parallelEnv); v != "" {
		if k, err := strconv.Atoi(v); err != nil || k < 1 {
			fmt.Fprintf(os.Stderr, "%s=%q: want a number of tests, 1 or more\n", parallelEnv, v)
			os.Exit(2)
		}
		flag.Set("test.parallel", v)
	}
	dir, err := os.MkdirTemp("", "haven-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := testbed.BuildNode(dir, ""); err != nil {
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
	return n.runEnv(nil, bin, args...)
}

// runEnv is run with env (KEY=VALUE) added to the command's environment.
// A test gives a command its environment this way, never with os.Setenv
// or t.Setenv: the tests run side by side (t.Parallel) in one process.
func (n *node) runEnv(env []string, bin string, args ...string) testbed.Result {
	n.t.Helper()
	dir := binDir
	if n.bins != "" {
		dir = n.bins
	}
	r, err := testbed.Command{Bin: filepath.Join(dir, bin), Root: n.root, Args: args, Env: env}.Run()
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

// daemonStatus is the daemon's status object (nodemgr daemon status).
func (n *node) daemonStatus() api.DaemonStatus {
	n.t.Helper()
	var ds api.DaemonStatus
	if err := json.Unmarshal([]byte(n.must("nodemgr", "daemon", "status", "--format", "json")), &ds); err != nil {
		n.t.Fatal(err)
	}
	return ds
}

// afterPasses returns once each of nodes ran k decision passes more than
// when it was called (each a look at the whole view that could have
// acted), within d: what a test then finds not done, the nodes decided
// not to do, however slow the machine. A time slept proves nothing of
// the kind: a loaded machine may run no pass in it.
func afterPasses(t *testing.T, k uint64, d time.Duration, nodes ...*node) {
	t.Helper()
	afterCount(t, "decision passes", func(ds api.DaemonStatus) uint64 { return ds.Passes }, k, d, nodes...)
}

// afterChecks returns once each of nodes ended k status checks more than
// when it was called, within d: what a check of a local instance would
// have done (a restart ladder acts on a check's result), it did not.
func afterChecks(t *testing.T, k uint64, d time.Duration, nodes ...*node) {
	t.Helper()
	afterCount(t, "status checks", func(ds api.DaemonStatus) uint64 { return ds.Checks }, k, d, nodes...)
}

// afterCount returns once count, read in each node's daemon status, grew
// by k on each of nodes, within d.
func afterCount(t *testing.T, what string, count func(api.DaemonStatus) uint64, k uint64, d time.Duration, nodes ...*node) {
	t.Helper()
	from := make([]uint64, len(nodes))
	for i, n := range nodes {
		from[i] = count(n.daemonStatus())
	}
	for i, n := range nodes {
		waitFor(t, d, fmt.Sprintf("%s runs %d %s", n.name, k, what), func() bool {
			return count(n.daemonStatus()) >= from[i]+k
		})
	}
}

// settled returns once nodes are quiet and agree, within d: each acted on
// all it knows (no decision pass due, no action running, no wake-up
// armed, no quorum or rejoin watching the clock: api.DaemonStatus.Quiet;
// with the quorum on a node is never quiet), each holds the data of the
// others as they are, and two looks in a row find the same passes and
// data. What a
// test then finds not done, the nodes decided not to do: none of them
// does anything more until an input comes. A time slept proves nothing of
// the kind: on a loaded machine a pass may not have run in it, and on an
// idle cluster nothing makes a pass that would show a wrong decision.
func settled(t *testing.T, d time.Duration, nodes ...*node) {
	t.Helper()
	why := ""
	look := func() (string, bool) {
		var b strings.Builder
		gens := map[string]uint64{}
		peers := map[string][]api.PeerStatus{}
		for _, n := range nodes {
			ds := n.daemonStatus()
			if !ds.Quiet {
				why = n.name + " not quiet (a pass due, its data not sent, a write pending, an action running, a wake-up armed, or the quorum or rejoin watching the clock)"
				return "", false
			}
			gens[n.name], peers[n.name] = ds.Gen, ds.Peers
			fmt.Fprintf(&b, "%s %d %d;", n.name, ds.Passes, ds.Gen)
		}
		for _, n := range nodes {
			for _, p := range peers[n.name] {
				if g, ok := gens[p.Name]; ok && p.Gen != g {
					why = fmt.Sprintf("%s holds %s's data of generation %d, %s is at %d", n.name, p.Name, p.Gen, p.Name, g)
					return "", false
				}
			}
		}
		return b.String(), true
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.name
	}
	if err := testbed.WaitFor(d, 50*time.Millisecond, strings.Join(names, ", ")+" quiet and agreed", func() bool {
		a, ok := look()
		if !ok {
			return false
		}
		b, ok := look()
		if ok && a != b {
			why = "something changed between two looks: " + a + " then " + b
		}
		return ok && a == b
	}); err != nil {
		t.Fatalf("%v: %s", err, why)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := testbed.WaitFor(d, 50*time.Millisecond, what, cond); err != nil {
		t.Fatal(err)
	}
}

// holdsFor samples bad every 100 ms for d and fails the test, saying
// what, as soon as it is true: a property that must hold over a window
// (nothing starts, nothing is obeyed), not a wait for an event.
func holdsFor(t *testing.T, d time.Duration, what string, bad func() bool) {
	t.Helper()
	for end := time.Now().Add(d); ; {
		if bad() {
			t.Fatal(what)
		}
		if !time.Now().Before(end) {
			return
		}
		time.Sleep(100 * time.Millisecond) // the sampling period of the window
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

// binCopy puts the program name of binDir into dir and returns its path:
// a hard link, so that no file is open for writing (a copy written here
// and run at once can fail with "text file busy" while the tests running
// beside it fork: their children hold its descriptor until they exec), or
// a copy where no link can be made (another filesystem).
func binCopy(t *testing.T, name, dir string) string {
	t.Helper()
	dst := filepath.Join(dir, name)
	if err := os.Link(filepath.Join(binDir, name), dst); err == nil {
		return dst
	}
	b, err := os.ReadFile(filepath.Join(binDir, name))
	if err == nil {
		err = os.WriteFile(dst, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
