package chaos

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"haven/test/testbed"
)

// An app killed behind the scripts' back (as the node guard does, with
// SIGKILL) is journaled as stopped by the reaper, the observer outside the
// cluster; one whose service was journaled started again on its node
// meanwhile is not (that start's process may not be found yet).
func TestReaperJournalsAnAppKilledBehindTheScripts(t *testing.T) {
	if why := NetnsUnavailable(); why != "" {
		t.Skip("the reaper watches apps in the bed's namespaces: " + why)
	}
	c, err := NewCluster(Config{Nodes: 2, Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// the service's scripts without its daemons
	svc := "svc1"
	c.Services = []Service{{Name: svc, Nodes: c.Names}}
	if err := c.writeScripts(); err != nil {
		t.Fatal(err)
	}
	up := func() []string {
		ev, err := ReadJournal(c.Journal)
		if err != nil {
			t.Fatal(err)
		}
		return UpAt(ev)[svc]
	}
	// start runs the start script in n1's namespace, as the daemon would,
	// and waits for the reaper to find the app
	start := func() int {
		t.Helper()
		v := filepath.Join(c.Nodes["n1"].Var(), "services", svc)
		if err := os.MkdirAll(v, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := c.Bed.Command("n1", filepath.Join(c.Work, "start.sh"), svc, "n1", v).CombinedOutput(); err != nil {
			t.Fatalf("start.sh: %v: %s", err, out)
		}
		var pid int
		if err := testbed.WaitFor(5*time.Second, 20*time.Millisecond, "", func() bool {
			pid = c.appPid(svc, "n1")
			c.reaper.mu.Lock()
			defer c.reaper.mu.Unlock()
			return pid != 0 && c.reaper.seen[pid] != nil
		}); err != nil {
			t.Fatalf("the reaper did not find the app of %s on n1 (pid %d)", svc, pid)
		}
		if got := up(); !slices.Equal(got, []string{"n1"}) {
			t.Fatalf("after the start the journal has %s up on %v", svc, got)
		}
		return pid
	}
	// ended waits for the reaper to have judged pid's end
	ended := func(pid int) {
		t.Helper()
		if err := testbed.WaitFor(5*time.Second, 20*time.Millisecond, "", func() bool {
			c.reaper.mu.Lock()
			defer c.reaper.mu.Unlock()
			return c.reaper.seen[pid] == nil
		}); err != nil {
			t.Fatalf("the reaper did not see pid %d end", pid)
		}
	}

	pid := start()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ended(pid)
	if got := up(); len(got) != 0 {
		t.Fatalf("an app killed with SIGKILL stays up on %v in the journal", got)
	}

	// a new start journaled before the old app's end: the reaper leaves
	// the instance up (the new start's process is the one that counts)
	pid = start()
	if err := c.journalStart("n1", svc); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ended(pid)
	if got := up(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("the reaper ended a start journaled after its process was found: up on %v", got)
	}
	// the stop script journals the ends it causes: one stop line, not a
	// second one of the reaper's
	if err := c.journalStop("n1", svc); err != nil {
		t.Fatal(err)
	}
	pid = start()
	stops := func() int {
		ev, err := ReadJournal(c.Journal)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ev {
			if e.Kind == "stop" {
				n++
			}
		}
		return n
	}
	before := stops()
	v := filepath.Join(c.Nodes["n1"].Var(), "services", svc)
	if out, err := c.Bed.Command("n1", filepath.Join(c.Work, "stop.sh"), svc, "n1", v).CombinedOutput(); err != nil {
		t.Fatalf("stop.sh: %v: %s", err, out)
	}
	ended(pid)
	if got := stops() - before; got != 1 {
		t.Fatalf("a stop by the stop script journaled %d stop lines, want 1", got)
	}
}
