package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/test/chaos"
	"haven/test/testbed"
)

// A bed whose process dies without its cleanup (kill -9 here; a panic in
// a goroutine ends it the same way) leaves no network namespace, process
// or mount behind: the supervising parent removes them.
func TestSupervisorRemovesTheBedOfAKilledRound(t *testing.T) {
	if why := chaos.NetnsUnavailable(); why != "" {
		t.Skip("the chaos bed: " + why)
	}
	if testing.Short() {
		t.Skip("starts a cluster: not with -short")
	}
	bin := t.TempDir()
	if err := testbed.BuildNode(bin, "", "haven/cmd/chaos"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "chaos"), "bed", "-bin", bin, "-nodes", "2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// the guide names the namespaces (hv-ID-n1) and the roots
	nsRe := regexp.MustCompile(`\bhv-([0-9a-f]+)-n1\b`)
	var id, root string
	sc := bufio.NewScanner(out)
	lines := make(chan string)
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(2 * time.Minute)
	for id == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the bed ended before it printed its guide")
			}
			if m := nsRe.FindStringSubmatch(l); m != nil && strings.HasPrefix(strings.TrimSpace(l), "n1") {
				id = m[1]
				f := strings.Fields(l)
				root = f[len(f)-1]
			}
		case <-deadline:
			t.Fatal("no guide within 2 minutes")
		}
	}
	go func() {
		for range lines {
		}
	}()
	work := filepath.Dir(root)
	if !mounted(work) {
		t.Fatalf("no tmpfs under %s while the bed runs: the test cannot tell", work)
	}
	child := maker(t, cmd.Process.Pid)
	t.Logf("bed %s (work %s): kill -9 of the process that made it, %d", id, work, child)
	syscall.Kill(child, syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the supervisor did not end within a minute of its child")
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit %d, want %d (the child's kill)", code, 128+int(syscall.SIGKILL))
	}
	if left, _ := filepath.Glob("/var/run/netns/hv-" + id + "-*"); len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if mounted(work) {
		t.Errorf("mounts left under %s", work)
	}
	os.RemoveAll(work)
}

// maker is the process that made the bed: the one child of the chaos
// command pid, or pid itself when it has none (it runs the bed itself).
func maker(t *testing.T, pid int) int {
	t.Helper()
	// a Go process forks from any of its threads: read them all
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var f []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		f = append(f, strings.Fields(string(b))...)
	}
	if len(f) == 0 {
		return pid
	}
	if len(f) != 1 {
		t.Fatalf("the chaos command %d has children %v, want one", pid, f)
	}
	c, _ := strconv.Atoi(f[0])
	return c
}

// mounted reports whether anything is mounted under dir.
func mounted(dir string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			return true
		}
	}
	return false
}
