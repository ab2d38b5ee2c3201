package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leftBehind lists the live processes whose working directory or command
// line is below dir.
func leftBehind(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if strings.HasPrefix(cwd, dir+"/") || strings.Contains(string(cmd), dir+"/") {
			out = append(out, filepath.Base(p)+" "+strings.ReplaceAll(string(cmd), "\x00", " ")+" (cwd "+cwd+")")
		}
	}
	return out
}

// `make demo` says every daemon stopped: nothing it started may be left
// running (its `sleep 100000` was, the cleanup's name pattern did not
// match it). Written into a pipe, it has no colour codes. Its giveback
// brings the service back to n1 (it left it on n2 while n1 was in rejoin).
func TestDemoLeavesNoProcessBehind(t *testing.T) {
	t.Parallel() // the demo's own directory and ports (cmd/freeport); mostly waits
	if testing.Short() {
		t.Skip("the demo takes about 30 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "demo", "demo.sh"))
	cmd.Env = append(os.Environ(), "HAVEN_BIN="+binDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	// the giveback brings web back to n1, as the README says
	if !strings.Contains(string(out), "web is back on n1") {
		t.Fatalf("the demo's giveback did not bring web back to n1:\n%s", out)
	}
	// its output is a pipe here: no terminal escape, as svcmon
	if i := strings.IndexByte(string(out), 0x1b); i >= 0 {
		t.Fatalf("the demo wrote a terminal escape into a pipe at byte %d: %q", i, out[i:min(len(out), i+40)])
	}
	m := regexp.MustCompile(`every daemon stopped, (/tmp/haven-demo\.\S+) removed`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the demo did not say where it ran:\n%s", out)
	}
	top := string(m[1])
	var left []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		if left = leftBehind(top); len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, l := range left { // leave nothing behind for the next test
				var pid int
				fmt.Sscan(l, &pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("the demo left processes running below %s:\n%s", top, strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(top); !os.IsNotExist(err) {
		t.Fatalf("%s still exists", top)
	}
}
