package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// Node is one Haven node of the chaos cluster: its root on the host, its
// daemon in its namespace of the bed.
type Node struct {
	Name string
	Root string
	// Bin is the directory of the binaries this node runs ("": the
	// round's, Config.Bin; Config.Previous for the node on the previous
	// release, mixed.go).
	Bin string
	c   *Cluster
}

// Result is what a command printed and its exit status (-1: it could not
// run or was killed at its deadline, see TimedOut).
type Result struct{ testbed.Result }

func (r Result) String() string {
	s := fmt.Sprintf("exit %d", r.Code)
	if r.TimedOut {
		s += " (killed at its deadline)"
	}
	if o := strings.TrimSpace(r.Out); o != "" {
		s += ": " + o
	}
	if e := strings.TrimSpace(r.Err); e != "" {
		s += ": " + e
	}
	return s
}

// Run runs one of the binaries against this node's root from the root
// namespace (the CLIs talk to the daemon over its unix socket), killed
// after timeout.
func (n *Node) Run(timeout time.Duration, bin string, args ...string) Result {
	return n.run(timeout, false, bin, args...)
}

func (n *Node) run(timeout time.Duration, inNS bool, bin string, args ...string) Result {
	dir := n.c.cfg.Bin
	if n.Bin != "" {
		dir = n.Bin
	}
	c := testbed.Command{Bin: filepath.Join(dir, bin), Root: n.Root, Args: args, Timeout: timeout}
	if inNS {
		// with containers, the host's cgroup mounts (Config.Podman)
		c.NS, c.NetOnly = n.c.Bed.NS[n.Name], n.c.cfg.Podman
	}
	r, err := c.Run()
	if err != nil {
		r.Code, r.Err = -1, err.Error()
	}
	return Result{r}
}

// must runs a command and turns a non-zero exit into an error.
func (n *Node) must(timeout time.Duration, bin string, args ...string) error {
	if r := n.Run(timeout, bin, args...); r.Code != 0 {
		return fmt.Errorf("%s: %s %s: %s", n.Name, bin, strings.Join(args, " "), r)
	}
	return nil
}

// Status is the cluster status object as this node's daemon sees it.
func (n *Node) Status() (dataset.ClusterStatus, error) {
	var st dataset.ClusterStatus
	r := n.Run(10*time.Second, "svcmon", "--format", "json")
	if r.Code != 0 {
		return st, fmt.Errorf("%s: svcmon: %s", n.Name, r)
	}
	if err := json.Unmarshal([]byte(r.Out), &st); err != nil {
		return st, fmt.Errorf("%s: svcmon json: %w", n.Name, err)
	}
	return st, nil
}

// StartDaemon starts the daemon inside the node's namespace.
func (n *Node) StartDaemon() error {
	if r := n.run(30*time.Second, true, "nodemgr", "daemon", "start"); r.Code != 0 {
		return fmt.Errorf("start the daemon of %s: %s", n.Name, r)
	}
	return nil
}

// StopDaemon is a clean stop (the services keep running); Shutdown stops
// the node's instances first.
func (n *Node) StopDaemon() error {
	return n.must(60*time.Second, "nodemgr", "daemon", "stop", "--time", "50s")
}
func (n *Node) Shutdown() error {
	return n.must(90*time.Second, "nodemgr", "daemon", "shutdown", "--time", "80s")
}

// DaemonPid is the pid in the daemon's pid file (0 when none).
func (n *Node) DaemonPid() int { return testbed.DaemonPID(n.Root) }

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool { return testbed.Alive(pid) }

// DaemonAlive reports whether the daemon of the pid file runs.
func (n *Node) DaemonAlive() bool { return alive(n.DaemonPid()) }

// Signal sends sig to the daemon.
func (n *Node) Signal(sig syscall.Signal) error {
	pid := n.DaemonPid()
	if !alive(pid) {
		return fmt.Errorf("%s: no daemon running (pid file: %d)", n.Name, pid)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("%s: kill -%d %d: %w", n.Name, sig, pid, err)
	}
	return nil
}

// Kill9 kills the daemon with SIGKILL and waits for it to be gone.
func (n *Node) Kill9() error {
	pid := n.DaemonPid()
	if err := n.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	return waitUntil(5*time.Second, func() bool { return !alive(pid) }, "%s: daemon %d still alive after SIGKILL", n.Name, pid)
}

// RSS is the daemon's resident set in KiB (0 when not running).
func (n *Node) RSS() int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.DaemonPid()))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	return 0
}

// Var is the node's state directory (a tmpfs of its own, see VarFull).
func (n *Node) Var() string { return filepath.Join(n.Root, "var") }

// logs are the files whose lines the audits read.
func (n *Node) logs() []string {
	return []string{filepath.Join(n.Root, "log", "node.log"), filepath.Join(n.Root, "log", "daemon.out")}
}

// waitUntil polls cond every 100ms until it holds, or returns the error
// made of format and args after d.
func waitUntil(d time.Duration, cond func() bool, format string, args ...any) error {
	if testbed.WaitFor(d, 100*time.Millisecond, "", cond) != nil {
		return fmt.Errorf(format, args...)
	}
	return nil
}
