package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A daemon whose parent has not reaped it is a zombie: kill(pid, 0) still
// succeeds. `daemon stop` must wait for what the daemon releases (its lock
// on the root), not for the pid, and return at once.
func TestDaemonStopReturnsWhenTheDaemonIsAZombie(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	for _, mode := range []string{"stop", "shutdown"} {
		cmd := exec.Command(filepath.Join(binDir, "nodemgr"), "--root", n.root, "daemon", "run")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// the test does not Wait() until the end: the daemon stays a zombie
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitFor(t, 20*time.Second, "the daemon to answer", func() bool {
			return n.run("nodemgr", "daemon", "status").Code == 0
		})
		t0 := time.Now()
		r := n.run("nodemgr", "daemon", mode, "--time", "15s")
		if r.Code != 0 {
			t.Fatalf("daemon %s of a zombie daemon: %s", mode, r)
		}
		if el := time.Since(t0); el > 10*time.Second {
			t.Fatalf("daemon %s took %s", mode, el)
		}
		if r.Out != "daemon stopped ("+mode+")\n" {
			t.Fatalf("daemon %s said %q", mode, r.Out)
		}
	}
}

// logrotate moves node.log away and sends SIGHUP: the daemon keeps running
// and writes a new node.log. `daemon start` appends to daemon.out (it kept
// the trace of a crashed daemon only until the next start truncated it),
// and the log is not copied there.
func TestDaemonLogsSurviveRotationAndRestart(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	out := filepath.Join(n.root, "log", "daemon.out")
	writeFile(t, out, "panic: what an earlier daemon printed\n")
	n.startDaemon()
	if got := readFile(t, out); !strings.Contains(got, "what an earlier daemon printed") || strings.Contains(got, "INFO") {
		t.Fatalf("daemon.out after a start: want the earlier content and no log lines, got:\n%s", got)
	}
	nodeLog := filepath.Join(n.root, "log", "node.log")
	if err := os.Rename(nodeLog, nodeLog+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(n.daemonPidFromStatus(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a new node.log after SIGHUP", func() bool {
		b, _ := os.ReadFile(nodeLog)
		return strings.Contains(string(b), "node log reopened")
	})
	n.must("nodemgr", "daemon", "status")
	if strings.Contains(readFile(t, nodeLog+".1"), "node log reopened") {
		t.Fatal("the moved file still receives lines after the reopen")
	}
}
