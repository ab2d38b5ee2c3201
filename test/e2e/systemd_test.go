package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `nodemgr daemon run` as haven.service runs it: Type=notify (READY=1 once
// the API answers, WATCHDOG=1 pings, STOPPING=1), stderr connected to the
// journal (JOURNAL_STREAM names it: the log goes there, not to node.log),
// and ExecStop's `nodemgr daemon stop` returning only once the daemon has
// exited.
func TestSystemdUnitRun(t *testing.T) {
	t.Parallel() // one daemon of its own root, its own notify socket, no port
	n := newNode(t, "n1", "")
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			k, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:k])
		}
	}()
	await := func(what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("notify socket closed before %s", what)
				}
				if strings.Contains("\n"+m+"\n", "\n"+what+"\n") {
					return
				}
			case <-deadline:
				t.Fatalf("no %s from the daemon within 30s", what)
			}
		}
	}

	journal, err := os.Create(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(journal.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "nodemgr"), "--root", n.root, "daemon", "run")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=2000000",
		fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino))
	cmd.Stdout, cmd.Stderr = journal, journal
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	await("READY=1")
	n.must("nodemgr", "daemon", "status")
	await("WATCHDOG=1")
	log := readFile(t, journal.Name())
	if !strings.Contains(log, "<6>INFO\tdaemon\tdaemon started (compat ") {
		t.Fatalf("the journal stream lacks the start line with its priority:\n%s", log)
	}
	// node.log stays open for crash output only
	if b, err := os.ReadFile(filepath.Join(n.root, "log", "node.log")); len(b) > 0 {
		t.Fatalf("node.log written while stderr is the journal (%v):\n%s", err, b)
	}

	out := n.must("nodemgr", "daemon", "stop")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("daemon exit: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatalf("`nodemgr daemon stop` returned (%q) while the daemon still runs", out)
	}
	await("STOPPING=1")
}
