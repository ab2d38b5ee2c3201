package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
)

// durService has no resource that writes under R/var, so that it keeps
// being checked while R/var cannot be written.
const durService = `
[DEFAULT]
orchestrate = "no"

[app.main]
start = "true"
stop  = "true"
check = "true"
`

// smallVar mounts a 2 MB tmpfs on the node's R/var (before its daemon
// starts), so that the test can make it read-only or full for real. The
// daemon is stopped before the unmount.
func smallVar(t *testing.T, n *node) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("durability tests mount a tmpfs on R/var: they need root (run `make test` as root to include them)")
	}
	v := filepath.Join(n.root, "var")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", v).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		n.run("nodemgr", "daemon", "stop")
		if out, err := exec.Command("umount", v).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s (lazy unmount)", v, err, out)
			exec.Command("umount", "-l", v).Run()
		}
	})
	return v
}

func remount(t *testing.T, dir, mode string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+mode, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s %s: %v: %s", mode, dir, err, out)
	}
}

// fill writes a file until the filesystem of dir is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// the last partial pages too
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
	return path
}

// durNode starts a node with its R/var on a small tmpfs and a service x.
func durNode(t *testing.T) (*node, string) {
	n := newNode(t, "n1", "")
	v := smallVar(t, n)
	n.startDaemon()
	cfg := filepath.Join(t.TempDir(), "x.toml")
	writeFile(t, cfg, durService)
	n.must("svcmgr", "-s", "x", "create", "--config", cfg)
	waitFor(t, 20*time.Second, "x checked", func() bool { return n.instance("x").Avail == dataset.StatusUp })
	return n, v
}

// checkNotSaved runs the freezes that cannot be saved: each fails with
// exit 1 and the cause, nothing is frozen, and status still answers.
func checkNotSaved(t *testing.T, n *node, cause string) {
	t.Helper()
	for _, args := range [][]string{
		{"svcmgr", "-s", "x", "freeze", "--wait"},
		{"svcmgr", "-s", "x", "freeze", "--local"},
		{"svcmgr", "-s", "x", "stop", "--local"},
		{"nodemgr", "freeze"},
		{"nodemgr", "drain"},
	} {
		r := n.run(args[0], args[1:]...)
		if r.Code != 1 || !strings.Contains(r.Err, "state not saved") || !strings.Contains(r.Err, cause) ||
			strings.Count(strings.TrimSpace(r.Err), "\n") != 0 {
			t.Fatalf("%s with R/var %s: want exit 1 and the cause in one line, got %s", strings.Join(args, " "), cause, r)
		}
	}
	var ss dataset.ServiceStatus
	out := n.must("svcmgr", "-s", "x", "print", "status", "--format", "json")
	if err := json.Unmarshal([]byte(out), &ss); err != nil {
		t.Fatal(err)
	}
	if ss.Frozen != "thawed" || ss.Instances["n1"].Frozen {
		t.Fatalf("after freezes that were not saved, print status shows x %q (instance frozen %v), want thawed", ss.Frozen, ss.Instances["n1"].Frozen)
	}
	if st := n.status(); st.Nodes["n1"].Frozen {
		t.Fatal("after a node freeze that was not saved, the node shows frozen")
	}
	if ds := n.daemonStatus(); !strings.Contains(ds.StateError, cause) {
		t.Fatalf("daemon status does not show the state write failure: state_error %q", ds.StateError)
	}
	if !strings.Contains(n.must("nodemgr", "daemon", "status"), "not saved") {
		t.Fatal("nodemgr daemon status does not say the state is not saved")
	}
}

// checkRecovered: once the disk is back, the next freeze succeeds and
// survives a daemon restart.
func checkRecovered(t *testing.T, n *node) {
	t.Helper()
	n.must("svcmgr", "-s", "x", "freeze", "--wait")
	n.must("nodemgr", "freeze")
	var ds api.DaemonStatus
	if err := json.Unmarshal([]byte(n.must("nodemgr", "daemon", "status", "--format", "json")), &ds); err != nil {
		t.Fatal(err)
	}
	if ds.StateError != "" {
		t.Fatalf("the state was saved again, but daemon status still says %q", ds.StateError)
	}
	n.must("nodemgr", "daemon", "stop")
	n.startDaemon()
	st := n.status()
	if st.Services["x"].Frozen != "frozen" || !st.Nodes["n1"].Frozen {
		t.Fatalf("after a restart: x %q, node frozen %v; want both frozen", st.Services["x"].Frozen, st.Nodes["n1"].Frozen)
	}
}

// With R/var read-only, a freeze is not acknowledged.
func TestStateReadOnlyVar(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port; a tmpfs of its own
	n, v := durNode(t)
	remount(t, v, "ro")
	checkNotSaved(t, n, "read-only file system")
	remount(t, v, "rw")
	checkRecovered(t, n)
}

// With R/var full, a freeze is not acknowledged.
func TestStateFullVar(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port; a tmpfs of its own
	n, v := durNode(t)
	filler := fill(t, v)
	checkNotSaved(t, n, "no space left on device")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, n)
}

// A target heard from a peer while this node's disk is full is undone with
// the failed write; once space is freed, the node adopts it again from the
// peer's data (which does not change meanwhile) and applies it: n1's
// freeze reaches n2 without an abort, and a new freeze --wait succeeds.
func TestStateFullVarTargetRetried(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own; a tmpfs of its own
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{})
	v := smallVar(t, c["n2"])
	startNodes(t, c, names)
	createService(t, c["n1"], "x", strings.Replace(durService, `orchestrate = "no"`, `orchestrate = "no"`+"\nnodes = [\"n1\", \"n2\"]", 1))
	for _, n := range names {
		waitFor(t, 20*time.Second, "x checked on "+n, func() bool { return c[n].instance("x").Avail == dataset.StatusUp })
	}

	filler := fill(t, v)
	if r := c["n1"].run("svcmgr", "-s", "x", "freeze", "--wait", "--time", "5s"); r.Code == 0 {
		t.Fatalf("freeze --wait succeeded while n2 cannot save its state: %s", r)
	}
	if st := c["n2"].status(); st.Services["x"].Instances["n2"].Frozen {
		t.Fatal("n2 shows x frozen although its state could not be saved")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// nothing new is said: n2 adopts the freeze held in n1's data
	waitFor(t, 10*time.Second, "n2 freezes x once its disk takes writes again", func() bool {
		return c["n2"].status().Services["x"].Instances["n2"].Frozen
	})
	c["n1"].must("svcmgr", "-s", "x", "freeze", "--wait", "--time", "10s")
	// the freeze is on n2's disk: it survives a restart of its daemon
	c["n2"].must("nodemgr", "daemon", "stop")
	c["n2"].startDaemon()
	if st := c["n2"].status(); !st.Services["x"].Instances["n2"].Frozen {
		t.Fatal("after a restart of n2's daemon, x is not frozen there")
	}
}

// A damaged state file stops the daemon from starting (exit 2,
// the file and the remedy in one line); it is never read as an empty state.
func TestStateDamagedRefusedAtStart(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	n.must("nodemgr", "freeze")
	n.must("nodemgr", "daemon", "stop")
	state := filepath.Join(n.root, "var", "state.json")
	good := readFile(t, state)
	for _, bad := range []string{"null", strings.Replace(good, `"services"`, `"servicez"`, 1), strings.Replace(good, `"node_frozen": true`, `"node_frozen": false`, 1)} {
		writeFile(t, state, bad)
		r := n.run("nodemgr", "daemon", "start")
		if r.Code != 2 || !strings.Contains(r.Err, state) || !strings.Contains(r.Err, "move it away") ||
			strings.Count(strings.TrimSpace(r.Err), "\n") != 0 {
			t.Fatalf("daemon start on a damaged state (%q...): want exit 2 naming %s with the remedy, got %s", bad[:min(len(bad), 40)], state, r)
		}
	}
	writeFile(t, state, good)
	n.startDaemon()
	if !n.status().Nodes["n1"].Frozen {
		t.Fatal("the restored state was not read: the node is not frozen")
	}
}
