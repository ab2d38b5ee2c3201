package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "haven-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "haven/cmd/nodemgr", "haven/cmd/svcmgr", "haven/cmd/svcmon")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
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
}

func newNode(t *testing.T, name, nodeToml string) *node {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if nodeToml == "" {
		nodeToml = fmt.Sprintf("[node]\nname = %q\nmonitor_interval = \"300ms\"\n", name)
	}
	writeFile(t, filepath.Join(root, "etc", "node.toml"), nodeToml)
	n := &node{t: t, name: name, root: root}
	t.Cleanup(func() {
		n.run("nodemgr", "daemon", "stop")
		// leave no service process behind: the daemon stop leaves them
		// running, and their command lines do not name the root
		pids, _ := filepath.Glob(filepath.Join(root, "var", "services", "*", "*.pid"))
		for _, f := range pids {
			var pid int
			if b, err := os.ReadFile(f); err == nil {
				fmt.Sscan(string(b), &pid)
			}
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		exec.Command("pkill", "-f", root).Run()
	})
	return n
}

type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
}

// run runs one of the binaries against this node's root.
func (n *node) run(bin string, args ...string) result {
	n.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, bin), append([]string{"--root", n.root}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		n.t.Fatalf("run %s: %v", bin, err)
	}
	return result{o.String(), e.String(), code}
}

// must runs and fails the test on a non-zero exit.
func (n *node) must(bin string, args ...string) string {
	n.t.Helper()
	r := n.run(bin, args...)
	if r.code != 0 {
		n.t.Fatalf("%s %s: %s", bin, strings.Join(args, " "), r)
	}
	return r.out
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

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pidService is a service whose app runs a sleep process with its pid in {var}.
const pidService = `
[DEFAULT]
orchestrate = "no"

[app.main]
start = "sh -c 'sleep 100000 >/dev/null 2>&1 & echo $! > {var}/main.pid'"
stop  = "sh -c 'kill $(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 $(cat {var}/main.pid) 2>/dev/null'"
monitor = true
timeout = "10s"
`

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
