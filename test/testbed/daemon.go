package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"haven/internal/cgroup"
)

// Commands are the programs of a node, as `make build` puts them in bin/:
// the three tools and the node guard, which the daemon finds beside
// nodemgr (a daemon without it does not start).
var Commands = []string{"haven/cmd/nodemgr", "haven/cmd/haven-guard", "haven/cmd/svcmgr", "haven/cmd/svcmon"}

// BuildNode builds Commands and the commands extra into dir, from the
// module in srcDir ("" for the current one). In another tree (an earlier
// release, a copy to compare with) the Commands it does not have are left
// out: before haven-guard, nodemgr ran the guard itself.
func BuildNode(dir, srcDir string, extra ...string) error {
	var pkgs []string
	for _, pkg := range Commands {
		if srcDir != "" {
			if _, err := os.Stat(filepath.Join(srcDir, strings.TrimPrefix(pkg, "haven/"))); err != nil {
				continue
			}
		}
		pkgs = append(pkgs, pkg)
	}
	return Build(dir, srcDir, append(pkgs, extra...)...)
}

// BuildTags are the build tags of the node's programs, as the Makefile's
// TAGS: urfave/cli without its man-page and markdown writers, which only
// cmd/gendist uses (the daemon built its tables at start-up for nothing).
const BuildTags = "urfave_cli_no_docs"

// Build builds the commands pkgs ("haven/cmd/nodemgr") into dir, from the
// module in srcDir ("" for the current directory).
func Build(dir, srcDir string, pkgs ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-tags", BuildTags, "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = srcDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s: %w", strings.Join(pkgs, " "), err)
	}
	return nil
}

// Result is how a command ended. Code is -1 when it could not run or was
// killed at its deadline (TimedOut).
type Result struct {
	Out, Err string
	Code     int
	TimedOut bool
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Out, r.Err)
}

// Run runs bin --root root args...; a non-zero exit is a Result, not an
// error.
func Run(bin, root string, args ...string) (Result, error) {
	return Command{Bin: bin, Root: root, Args: args}.Run()
}

// Command is bin --root Root Args..., run inside the network namespace NS
// when set (`ip netns exec`), killed after Timeout when set.
type Command struct {
	Bin, Root string
	Args      []string
	NS        string
	// NetOnly enters NS's network alone (nsenter --net), keeping the
	// host's mounts: `ip netns exec` mounts a sysfs of its own, which
	// hides /sys/fs/cgroup, and a container engine's runtime needs it.
	NetOnly bool
	Timeout time.Duration
	// Env is added to the environment of the command (KEY=VALUE).
	Env []string
}

// Run runs the command. A non-zero exit, or a kill at the deadline
// (TimedOut, Code -1), is a Result; an error says it could not run.
func (c Command) Run() (Result, error) {
	ctx := context.Background()
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	argv := append([]string{"--root", c.Root}, c.Args...)
	var cmd *exec.Cmd
	switch {
	case c.NS != "" && c.NetOnly:
		cmd = exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + c.NS, "--", c.Bin}, argv...)...)
	case c.NS != "":
		cmd = exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", c.NS, c.Bin}, argv...)...)
	default:
		cmd = exec.CommandContext(ctx, c.Bin, argv...)
	}
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := Result{Out: o.String(), Err: e.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Code, r.TimedOut = -1, true
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		return Result{}, fmt.Errorf("run %s: %w", filepath.Base(c.Bin), err)
	}
	return r, nil
}

// StartDaemon runs `nodemgr daemon start` on root, which returns once the
// daemon's API answers (bounded at 30 s).
func StartDaemon(nodemgr, root string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nodemgr, "--root", root, "daemon", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: daemon start: %v: %s", filepath.Base(root), err, out)
	}
	return nil
}

// DaemonPID is the pid in root/run/daemon.pid, 0 when there is none.
func DaemonPID(root string) int {
	return ReadPID(filepath.Join(root, "run", "daemon.pid"))
}

// ReadPID is the pid in a pid file, 0 when there is none.
func ReadPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// StopDaemon stops the daemon of root (`nodemgr daemon stop`, bounded),
// SIGKILLs it if it lingers, then kills what the daemon left under root
// (KillUnder): the daemon stop leaves the services running.
func StopDaemon(nodemgr, root string) {
	pid := DaemonPID(root)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	exec.CommandContext(ctx, nodemgr, "--root", root, "daemon", "stop").Run()
	cancel()
	if pid > 0 && WaitFor(10*time.Second, 50*time.Millisecond, "daemon exit", gone(pid)) != nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	KillUnder(root)
}

// Crash SIGKILLs the daemon of root, then the service processes under it
// (a host crash), and returns once the daemon is gone (or after 5 s), with
// the time of the kill.
func Crash(root string) (time.Time, error) {
	pid := DaemonPID(root)
	if pid == 0 {
		return time.Time{}, fmt.Errorf("%s: no daemon pid", filepath.Base(root))
	}
	t := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return t, err
	}
	KillUnder(root)
	// reaped by init
	WaitFor(5*time.Second, 50*time.Millisecond, "the killed daemon to vanish", gone(pid))
	return t, nil
}

func gone(pid int) func() bool { return func() bool { return !Alive(pid) } }

// Alive reports whether pid runs: a zombie (killed, not reaped yet: init
// reaps late in a container) does not.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "State:") {
			return !strings.Contains(l, "Z")
		}
	}
	return true
}

// KillUnder SIGKILLs the processes this harness caused under dir: those
// recorded in dir's var/services/*/*.pid files (the service commands
// whose command lines do not name the root), and those whose working
// directory or an argument lies under dir (daemons, service commands
// running in {var}).
func KillUnder(dir string) {
	pidFiles, _ := filepath.Glob(filepath.Join(dir, "var", "services", "*", "*.pid"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "var", "services", "*", "*.pid"))
	for _, f := range append(pidFiles, more...) {
		b, err := os.ReadFile(f)
		fi, serr := os.Stat(f)
		if err != nil || serr != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 && pid != os.Getpid() && startedBy(pid, fi.ModTime()) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	under := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		hit := false
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && under(cwd) {
			hit = true
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && !hit {
			for _, arg := range strings.Split(string(b), "\x00") {
				if under(arg) {
					hit = true
					break
				}
			}
		}
		if hit {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// the cgroups of the node roots dir and dir/*
	roots, _ := filepath.Glob(filepath.Join(dir, "*"))
	RemoveCgroups(append([]string{dir}, roots...)...)
}

// startedBy reports whether process pid started no later than t (a pid
// file's time): the process a pid file names, not one that took its
// number after it died. A stale pid file of a killed service (a crash's
// KillUnder leaves them) otherwise names whatever runs under that number
// now: another cluster's daemon on a host shared by several test runs was
// killed so.
func startedBy(pid int, t time.Time) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// the fields after the command name, in parentheses; starttime is
	// field 22, in clock ticks since boot
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 20 {
		return false
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return false
	}
	boot, ok := bootTime()
	if !ok {
		return false
	}
	const hz = 100 // USER_HZ
	start := boot.Add(time.Duration(ticks) * time.Second / hz)
	// btime is truncated to a second: start is up to a second early, never
	// late (the process it names is never spared); a file's time comes
	// from a coarse clock, a few ms behind: 100 ms of slack
	return !start.After(t.Add(100 * time.Millisecond))
}

// bootTime is the host's boot time (btime of /proc/stat).
func bootTime() (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(s, 0), true
			}
		}
	}
	return time.Time{}, false
}

// RemoveCgroups kills what runs in the cgroups of the nodes of roots (a
// service that left its process group, the node guard) and removes them.
func RemoveCgroups(roots ...string) {
	for _, root := range roots {
		for _, g := range cgroup.NodeDirs(root) {
			cgroup.KillWait(g, 5*time.Second)
			cgroup.Remove(g)
		}
	}
}

// WaitFor polls cond every period until it holds; after d it gives up
// with an error naming what it waited for.
func WaitFor(d, every time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(every)
	}
	return nil
}
