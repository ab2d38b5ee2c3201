package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// daemonRunPid scans /proc for the `nodemgr --root root daemon run`
// process, 0 when there is none yet.
func daemonRunPid(root string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte(root+"\x00")) && bytes.Contains(b, []byte("\x00run\x00")) {
			return pid
		}
	}
	return 0
}

// A SIGHUP (logrotate's postrotate, `pkill -HUP`) that
// reached `nodemgr daemon run` in its first milliseconds ended it with
// status 129: its handler was installed only after the flags were parsed.
// The daemon of `daemon start` is signalled as soon as it shows in /proc
// (its exec), then every millisecond for 50 ms: the start must succeed.
// (A daemon exec'd directly, as systemd does, catches SIGHUP from its
// first package init on; the Go runtime's own start, before that, cannot
// be covered, see docs/operations.md.)
func TestDaemonSurvivesASIGHUPAtItsStart(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	for try := 0; try < 3; try++ {
		start := exec.Command(filepath.Join(binDir, "nodemgr"), "--root", n.root, "daemon", "start")
		var out bytes.Buffer
		start.Stdout, start.Stderr = &out, &out
		if err := start.Start(); err != nil {
			t.Fatal(err)
		}
		pid := 0
		for deadline := time.Now().Add(15 * time.Second); pid == 0 && time.Now().Before(deadline); {
			pid = daemonRunPid(n.root)
		}
		if pid == 0 {
			start.Process.Kill()
			start.Wait()
			t.Fatalf("try %d: no `daemon run` process seen within 15s: %s", try, out.String())
		}
		for t0 := time.Now(); time.Since(t0) < 50*time.Millisecond; time.Sleep(time.Millisecond) {
			syscall.Kill(pid, syscall.SIGHUP)
		}
		if err := start.Wait(); err != nil {
			t.Fatalf("try %d: daemon start after early SIGHUPs: %v: %s", try, err, out.String())
		}
		n.must("nodemgr", "daemon", "status")
		n.must("nodemgr", "daemon", "stop")
	}
}
