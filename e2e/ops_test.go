package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A daemon whose parent has not reaped it is a zombie: kill(pid, 0) still
// succeeds. `daemon stop` must wait for what the daemon releases (its lock
// on the root), not for the pid, and return at once.
func TestDaemonStopReturnsWhenTheDaemonIsAZombie(t *testing.T) {
	n := newNode(t, "n1", "")
	for _, mode := range []string{"stop", "shutdown"} {
		cmd := exec.Command(filepath.Join(binDir, "nodemgr"), "--root", n.root, "daemon", "run")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// the test does not Wait() until the end: the daemon stays a zombie
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitFor(t, 20*time.Second, "the daemon to answer", func() bool {
			return n.run("nodemgr", "daemon", "status").code == 0
		})
		t0 := time.Now()
		r := n.run("nodemgr", "daemon", mode, "--time", "15s")
		if r.code != 0 {
			t.Fatalf("daemon %s of a zombie daemon: %s", mode, r)
		}
		if el := time.Since(t0); el > 10*time.Second {
			t.Fatalf("daemon %s took %s", mode, el)
		}
		if r.out != "daemon stopped ("+mode+")\n" {
			t.Fatalf("daemon %s said %q", mode, r.out)
		}
	}
}
