package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// A missing state file is not a fresh start when the node has run
// before: with service configs on disk, or a state path that is
// a symbolic link to nothing (var/ on a disk not mounted), or a state file
// of the format without checksum, the daemon refuses to start (exit 2,
// one line naming the file and --new-state) until the sysadmin says
// --new-state. A brand-new node needs no flag.
func TestStateMissingRefusedAtStart(t *testing.T) {
	t.Parallel()
	n := newNode(t, "n1", "")
	n.startDaemon() // brand-new: no state, no config
	// its state is on disk before any config can be: a config never lies
	// there without a state file (a crash between the two)
	if _, err := os.Stat(filepath.Join(n.root, "var", "state.json")); err != nil {
		t.Fatalf("a brand-new node did not write its state at start: %v", err)
	}
	createService(t, n, "web", testbed.PidService)
	n.must("svcmgr", "-s", "web", "freeze")
	n.must("nodemgr", "daemon", "stop")
	state := filepath.Join(n.root, "var", "state.json")
	good := readFile(t, state)

	// removed
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	refused(t, n, 2, state+": missing, but 1 service config(s) exist in "+filepath.Join(n.root, "etc", "services"), "--new-state")
	if r := runBounded(t, n, "daemon", "run"); r.Code != 2 {
		t.Fatalf("daemon run: want exit 2\n%s", r)
	}

	// a dangling symbolic link (an unmounted disk)
	gone := filepath.Join(t.TempDir(), "unmounted", "state.json")
	if err := os.Symlink(gone, state); err != nil {
		t.Fatal(err)
	}
	refused(t, n, 2, state+": a symbolic link to "+gone+", which does not exist", "--new-state")
	if r := runBounded(t, n, "daemon", "run"); r.Code != 2 {
		t.Fatalf("daemon run: want exit 2\n%s", r)
	}
	os.Remove(state)

	// the format before the envelope: accepted only with --new-state
	var env struct {
		State json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal([]byte(good), &env); err != nil || len(env.State) == 0 {
		t.Fatalf("state file %s: %v\n%s", state, err, good)
	}
	writeFile(t, state, string(env.State))
	refused(t, n, 2, state+": a state file without envelope and checksum", "--new-state")
	n.must("nodemgr", "daemon", "start", "--new-state")
	if s := readFile(t, state); !strings.Contains(s, `"sha256"`) {
		t.Fatalf("the state accepted by --new-state is not written again with its checksum:\n%s", s)
	}
	if !n.status().Services["web"].Instances["n1"].Frozen {
		t.Fatal("web lost its frozen flag kept in the state accepted by --new-state")
	}
	if !strings.Contains(nodeLog(t, n), "--new-state") {
		t.Fatal("node.log does not say the state was accepted by --new-state")
	}
	n.must("nodemgr", "daemon", "stop")

	// removed, then started afresh on the sysadmin's word
	os.Remove(state)
	n.must("nodemgr", "daemon", "start", "--new-state")
	waitFor(t, 10*time.Second, "a new state file", func() bool { _, err := os.Stat(state); return err == nil })
	n.must("nodemgr", "daemon", "stop")
}

// runBounded runs nodemgr args on n, bounded: a `daemon run` that starts
// is killed at the deadline (exit -1).
func runBounded(t *testing.T, n *node, args ...string) testbed.Result {
	t.Helper()
	r, err := testbed.Command{Bin: filepath.Join(binDir, "nodemgr"), Root: n.root, Args: args, Timeout: 10 * time.Second}.Run()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
