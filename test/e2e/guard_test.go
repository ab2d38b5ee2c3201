package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"haven/dataset"
	"haven/test/testbed"
)

// The node guard (docs/behaviour.md 3.1), in network namespaces: the
// owner's daemon is killed or paused while its service runs; its guard
// ends the service before any survivor starts it. The observer is a
// watcher outside the cluster: every 20 ms it reads each node's pid file
// of the service and looks the process up in /proc. It trusts nothing the
// daemons say.

// procWatch samples, every 20 ms, a probe of each node: whether the
// process named by its pid file runs (pidProbe), whether it holds an
// address (addrProbe).
type procWatch struct {
	t      *testing.T
	probes map[string]func() bool // node -> probe
	mu     sync.Mutex
	// alive are the samples where a node's process ran: node -> times
	alive map[string][]time.Time
	// both are the samples where it ran on two nodes at once
	both []string
	// rounds counts the sampling rounds done, at their times
	rounds int
	at     []time.Time
	stop   chan struct{}
	done   chan struct{}
}

// watchProcs watches the pid files of each node.
func watchProcs(t *testing.T, files map[string]string) *procWatch {
	probes := map[string]func() bool{}
	for n, f := range files {
		probes[n] = pidProbe(f)
	}
	return watchProbes(t, probes)
}

func watchProbes(t *testing.T, probes map[string]func() bool) *procWatch {
	w := &procWatch{t: t, probes: probes, alive: map[string][]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.close)
	return w
}

// pidProbe: the process named by the pid file runs.
func pidProbe(file string) func() bool {
	return func() bool {
		pid := testbed.ReadPID(file)
		return pid > 0 && testbed.Alive(pid)
	}
}

// addrProbe: addr is on dev in the network namespace ns, as a goroutine
// in that namespace (a thread of its own, never given back) reads every
// 10 ms through rtnetlink; it ends with the test.
func addrProbe(t *testing.T, ns, dev, addr string) func() bool {
	var held atomic.Bool
	stop := make(chan struct{})
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		ready <- err
		if err != nil {
			return
		}
		for {
			on := false
			if ifi, err := net.InterfaceByName(dev); err == nil {
				as, _ := ifi.Addrs()
				for _, a := range as {
					if p, ok := a.(*net.IPNet); ok && p.IP.String() == addr {
						on = true
					}
				}
			}
			held.Store(on)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("watch %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { close(stop) })
	return held.Load
}

func (w *procWatch) run() {
	defer close(w.done)
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	for {
		now := time.Now()
		var on []string
		for node, probe := range w.probes {
			if probe() {
				on = append(on, node)
			}
		}
		w.mu.Lock()
		for _, n := range on {
			w.alive[n] = append(w.alive[n], now)
		}
		if len(on) > 1 {
			slices.Sort(on)
			w.both = append(w.both, fmt.Sprintf("%s: %v", now.Format("15:04:05.000"), on))
		}
		w.rounds++
		w.at = append(w.at, now)
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-tk.C:
		}
	}
}

// moreRounds waits until the watcher sampled k more rounds (a barrier on
// its own count, not a time slept: on a loaded host a sleep may hold no
// sample at all).
func (w *procWatch) moreRounds(k int) {
	w.t.Helper()
	w.mu.Lock()
	from := w.rounds
	w.mu.Unlock()
	waitFor(w.t, 10*time.Second, fmt.Sprintf("the watcher samples %d more rounds", k), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.rounds >= from+k
	})
}

func (w *procWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// last is the last sample where node's process ran at or before t.
func (w *procWatch) last(node string, before time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out time.Time
	for _, s := range w.alive[node] {
		if !s.After(before) {
			out = s
		}
	}
	return out, !out.IsZero()
}

// first is the first sample after t where node's process ran.
func (w *procWatch) first(node string, after time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.alive[node] {
		if s.After(after) {
			return s, true
		}
	}
	return time.Time{}, false
}

// runs reports whether node's process ran at the last sample.
func (w *procWatch) runs(node string) bool { return w.probes[node]() }

func (w *procWatch) overlaps() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.both)
}

// appPids are the pid files of web's test app on each node of q.
func (q *quorumBed) appPids(names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = filepath.Join(q.nodes[n].root, "var", "services", "web", "app.pid")
	}
	return out
}

// guardRun kills (or pauses, with stop) the daemon of owner while web runs
// there, and measures with w: the owner's process end, a survivor's start,
// the margin between them. It fails on any sample with web alive on two
// nodes.
func (q *quorumBed) guardRun(t *testing.T, w *procWatch, owner string, survivors []string, fault func(pid int)) (ended, started, margin time.Duration) {
	t.Helper()
	pid := daemonPid(t, q.nodes[owner])
	at := time.Now()
	fault(pid)
	var by string
	q.waitFor(60*time.Second, "a survivor's process runs (watcher)", func() bool {
		for _, s := range survivors {
			if w.runs(s) {
				by = s
				return true
			}
		}
		return false
	})
	w.moreRounds(5) // a few more samples
	if o := w.overlaps(); len(o) > 0 {
		q.dump()
		q.guardLogs()
		t.Fatalf("the watcher saw web alive on two nodes at once: %v", o)
	}
	st, _ := w.first(by, at)
	last, ok := w.last(owner, st)
	if !ok {
		t.Fatalf("the watcher never saw web on %s", owner)
	}
	if w.runs(owner) {
		t.Fatalf("web still runs on %s", owner)
	}
	return last.Sub(at), st.Sub(at), st.Sub(last)
}

// guardFigures logs the figures of the runs.
func guardFigures(t *testing.T, what string, ended, started, margins []time.Duration) {
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("%s, %d runs: owner's process last seen %s..%s (median %s) after the fault; survivor's start %s..%s (median %s); margin min %s, median %s",
		what, len(margins), slices.Min(ended).Round(time.Millisecond), slices.Max(ended).Round(time.Millisecond), med(ended).Round(time.Millisecond),
		slices.Min(started).Round(time.Millisecond), slices.Max(started).Round(time.Millisecond), med(started).Round(time.Millisecond),
		slices.Min(margins).Round(time.Millisecond), med(margins).Round(time.Millisecond))
}

// guardRuns is HAVEN_GUARD_RUNS (default 1): how many times the guard
// tests repeat their fault, for the figures.
func guardRuns() int {
	if v, err := strconv.Atoi(os.Getenv("HAVEN_GUARD_RUNS")); err == nil && v > 1 {
		return v
	}
	return 1
}

// back restarts owner's daemon after a run and gives web back to it.
func (q *quorumBed) back(t *testing.T, owner string, names []string) {
	t.Helper()
	c := q.nodes
	q.startDaemon(owner)
	q.converge(names, 30*time.Second)
	if frozen(c[owner]) {
		c[owner].must("nodemgr", "thaw")
	}
	c[owner].must("svcmgr", "-s", "web", "switch", "--to", owner, "--wait")
	q.waitFor(30*time.Second, "web up on "+owner+" only", upOnlyOn(c[owner], "web", owner))
}

// 3 nodes, quorum on, no fence: kill -9 of the owner's daemon (its
// service left running, as after a panic or the OOM killer). Its guard
// ends the service when the lease runs out, before any survivor starts
// it: the survivors' gate counts the guard's lease, not the dead daemon's
// own stop. The restarted daemon says guard_fired.
func TestNetnsGuardKilledOwnerDaemon(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBed(t, names, nil, nil)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	q.killRuns(t, names, "kill -9 of the owner's daemon, 3 nodes, quorum on", func(bool) {
		rec := readFile(t, filepath.Join(c["n1"].root, "var", "guard.json"))
		if !strings.Contains(rec, `"service": "web"`) {
			t.Fatalf("n1's guard record does not name web:\n%s", rec)
		}
		q.back(t, "n1", names)
		if !strings.Contains(nodeLog(t, c["n1"]), "guard_fired") {
			t.Fatal("the restarted daemon of n1 did not say guard_fired")
		}
	})
}

// killRuns kills n1's daemon (web running there) guardRuns() times,
// measured by a watcher of names, and logs the figures; after runs after
// each run (last: the last one): checks, and web brought back to n1.
func (q *quorumBed) killRuns(t *testing.T, names []string, what string, after func(last bool)) {
	t.Helper()
	w := watchProcs(t, q.appPids(names...))
	var ended, started, margins []time.Duration
	for run := 0; run < guardRuns(); run++ {
		e, s, m := q.guardRun(t, w, "n1", names[1:], func(pid int) { syscall.Kill(pid, syscall.SIGKILL) })
		t.Logf("run %d: n1's process last seen %s after the kill, a survivor's %s after, margin %s", run+1, e.Round(time.Millisecond), s.Round(time.Millisecond), m.Round(time.Millisecond))
		ended, started, margins = append(ended, e), append(started, s), append(margins, m)
		after(run+1 == guardRuns())
	}
	guardFigures(t, what, ended, started, margins)
}

// The owner's daemon paused (SIGSTOP) for 25 s, then resumed: its guard
// ends the service during the pause; the survivors take it over; the
// resumed daemon learns from its guard that it acted before anything else
// (guard_fired), and never runs web again meanwhile.
func TestNetnsGuardPausedOwnerDaemon(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBed(t, names, nil, nil)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	w := watchProcs(t, q.appPids(names...))
	var pid int
	e, s, m := q.guardRun(t, w, "n1", []string{"n2", "n3"}, func(p int) {
		pid = p
		syscall.Kill(p, syscall.SIGSTOP)
	})
	t.Logf("SIGSTOP: n1's process last seen %s after the pause, a survivor's %s after, margin %s", e.Round(time.Millisecond), s.Round(time.Millisecond), m.Round(time.Millisecond))
	paused := time.Now().Add(-s)
	time.Sleep(time.Until(paused.Add(25 * time.Second)))
	resumed := time.Now()
	syscall.Kill(pid, syscall.SIGCONT)
	q.waitFor(20*time.Second, "n1's daemon says guard_fired", func() bool { return strings.Contains(nodeLog(t, c["n1"]), "guard_fired") })
	time.Sleep(5 * time.Second)
	if at, ok := w.first("n1", resumed); ok {
		q.dump()
		t.Fatalf("web ran again on n1 %s after the resume", at.Sub(resumed))
	}
	if o := w.overlaps(); len(o) > 0 {
		t.Fatalf("the watcher saw web alive on two nodes at once: %v", o)
	}
	lg := nodeLog(t, c["n1"])
	fired, stall := strings.Index(lg, "guard_fired"), strings.Index(lg, "quorum_stall")
	if stall >= 0 && fired > stall {
		t.Errorf("n1 voted on its stall before it learnt that its guard acted")
	}
}

// 2 nodes and Haven's one-vote arbitrator, no fence: kill -9 of the
// owner's daemon. The survivor gets the vote alone once the owner's
// arbitrator lease ended, then counts the owner's guard; the owner's
// service is gone before the survivor starts it.
func TestNetnsGuardOneVoteKilledOwner(t *testing.T) {
	t.Parallel()
	q := newOneVoteBed(t)
	q.webOnN1()
	names := []string{"n1", "n2"}
	q.killRuns(t, names, "kill -9 of the owner's daemon, 2 nodes, one-vote arbitrator", func(last bool) {
		if !last {
			q.back(t, "n1", names)
		}
	})
}

// guardLogs logs each node's guard log, for a failure.
func (q *quorumBed) guardLogs() {
	for _, n := range q.bed.Names() {
		if nd := q.nodes[n]; nd != nil {
			b, _ := os.ReadFile(filepath.Join(nd.root, "log", "guard.log"))
			q.t.Logf("%s's guard log:\n%s", n, b)
		}
	}
}

// A daemon restarted within the guard's lease (kill -9, then a start 2 s
// later, as systemd's Restart= with RestartSec=2s) renews it at once:
// its service keeps running, the same process (no stop, no second
// start), the guard ends nothing and no peer starts it.
func TestGuardDaemonRestartWithinLease(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own; mostly waits
	names := []string{"n1", "n2"}
	// hb.timeout 10s: a restart slowed by a loaded host is still heard by
	// n2 before it declares n1 down (without quorum n2 would then start
	// web too: that is not what this test is about)
	c := startCluster(t, names, clusterOpts{timeout: "10s", interval: "2s"})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 10*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	pidFile := func(n string) string { return filepath.Join(c[n].root, "var", "services", "web", "main.pid") }
	pid := testbed.ReadPID(pidFile("n1"))
	w := watchProcs(t, map[string]string{"n1": pidFile("n1"), "n2": pidFile("n2")})
	begin := time.Now()
	for run := 0; run < 3; run++ {
		syscallKill(daemonPid(t, c["n1"]))
		time.Sleep(2 * time.Second)
		c["n1"].startDaemon()
	}
	time.Sleep(10 * time.Second) // longer than the lease (7s): a guard not renewed would have acted
	if got := testbed.ReadPID(pidFile("n1")); got != pid || !testbed.Alive(pid) {
		t.Fatalf("web's process on n1: pid %d (alive %v), want the first one, %d, still running", got, testbed.Alive(got), pid)
	}
	if _, ok := w.first("n2", begin); ok {
		t.Fatal("web ran on n2 meanwhile")
	}
	if last, _ := w.last("n1", time.Now()); time.Since(last) > time.Second {
		t.Fatal("the watcher lost web on n1")
	}
	if _, err := os.Stat(filepath.Join(c["n1"].root, "var", "guard.json")); err == nil {
		t.Fatalf("the guard acted:\n%s", readFile(t, filepath.Join(c["n1"].root, "var", "guard.json")))
	}
	lg := readFile(t, filepath.Join(c["n1"].root, "log", "services", "web.log"))
	if n, m := strings.Count(lg, " - start: "), strings.Count(lg, " - stop: "); n != 1 || m != 0 {
		t.Fatalf("web's log has %d starts and %d stops, want 1 and 0:\n%s", n, m, lg)
	}
	if st := c["n1"].must("nodemgr", "guard", "status"); !strings.Contains(st, "armed") || !strings.Contains(st, "last fired: never") {
		t.Fatalf("guard status:\n%s", st)
	}
}

// An app that forks twice and calls setsid, with a VIP, 3 nodes, quorum
// on: kill -9 of the owner's daemon. The guard kills the escaped process
// (it is in the instance's cgroup) and removes the VIP from the owner's
// interface, both before the survivor starts the app or adds the VIP.
func TestNetnsGuardDoubleForkAndVIP(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBed(t, names, nil, nil)
	c := q.nodes
	app := `[app.main]
start = "sh -c 'rm -f {var}/app.pid; (setsid sh -c \"echo \\$\\$ > {var}/app.pid; exec sleep 100000\" >/dev/null 2>&1 &); while ! test -s {var}/app.pid; do sleep 0.05; done'"
stop = "sh -c 'kill $(cat {var}/app.pid) 2>/dev/null; rm -f {var}/app.pid'"
check = "sh -c 'test -f {var}/app.pid && kill -0 $(cat {var}/app.pid) 2>/dev/null'"
timeout = "3s"
`
	svc := fmt.Sprintf("[DEFAULT]\norchestrate = \"ha\"\nnodes = [\"n1\", \"n2\", \"n3\"]\n\n%s\n[ip.vip]\nipname = %q\nipdev = %q\nnetmask = \"24\"\n", app, vip, bedDev)
	createService(t, c["n1"], "web", svc)
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	pidOf := func(n string) string { return filepath.Join(c[n].root, "var", "services", "web", "app.pid") }
	escaped := testbed.ReadPID(pidOf("n1"))
	if sid, _ := unix.Getsid(escaped); sid != escaped {
		t.Fatalf("the app's process %d is not a session leader of its own (sid %d)", escaped, sid)
	}
	procs := watchProcs(t, q.appPids(names...))
	addrs := map[string]func() bool{}
	for _, n := range names {
		addrs[n] = addrProbe(t, q.bed.NS[n], bedDev, vip)
	}
	vips := watchProbes(t, addrs)
	waitFor(t, 5*time.Second, "the watcher sees the VIP on n1", func() bool { return vips.runs("n1") })
	e, s, m := q.guardRun(t, procs, "n1", []string{"n2", "n3"}, func(pid int) { syscall.Kill(pid, syscall.SIGKILL) })
	t.Logf("double-forked app: n1's process last seen %s after the kill, a survivor's %s after, margin %s", e.Round(time.Millisecond), s.Round(time.Millisecond), m.Round(time.Millisecond))
	if testbed.Alive(escaped) {
		t.Fatalf("the escaped process %d outlived the guard", escaped)
	}
	var by string
	q.waitFor(10*time.Second, "a survivor holds the VIP (watcher)", func() bool {
		for _, n := range []string{"n2", "n3"} {
			if vips.runs(n) {
				by = n
				return true
			}
		}
		return false
	})
	if o := vips.overlaps(); len(o) > 0 {
		t.Fatalf("the VIP was on two nodes at once: %v", o)
	}
	added, _ := vips.first(by, time.Now().Add(-time.Minute))
	gone, _ := vips.last("n1", added)
	if vips.runs("n1") || !gone.Before(added) {
		t.Fatalf("the VIP left n1 at %s, %s added it at %s", gone.Format("15:04:05.000"), by, added.Format("15:04:05.000"))
	}
	t.Logf("VIP: last seen on n1 %s before %s added it", added.Sub(gone).Round(time.Millisecond), by)
}

// node.guard = false on a node whose earlier run had a guard: the daemon
// disarms and stops that guard (armed for maintenance by the clean stop,
// it would still end the services), and says so.
func TestGuardOffStopsTheGuardOfAnEarlierRun(t *testing.T) {
	t.Parallel()
	n := newNode(t, "n1", "")
	n.startDaemon()
	createService(t, n, "web", testbed.HAService(`["n1"]`, ""))
	waitFor(t, 10*time.Second, "web up", func() bool { return n.instance("web").Avail == dataset.StatusUp })
	if st := n.must("nodemgr", "guard", "status"); !strings.Contains(st, "armed") {
		t.Fatalf("guard status:\n%s", st)
	}
	n.must("nodemgr", "daemon", "stop")
	path := filepath.Join(n.root, "etc", "node.toml")
	writeFile(t, path, readFile(t, path)+"guard = false\n")
	n.startDaemon()
	if r := n.run("nodemgr", "guard", "status"); r.Code != 1 || !strings.Contains(r.Out, "not running") {
		t.Fatalf("guard status with node.guard = false: %s", r)
	}
	if !strings.Contains(nodeLog(t, n), "the node guard of an earlier run was disarmed and stopped") {
		t.Fatal("the daemon did not say it stopped the earlier guard")
	}
	// the restarted daemon knows its instance once its first check ran (a
	// read before it finds unknown: seen on a loaded host)
	waitFor(t, 10*time.Second, "the restarted daemon's first check of web", func() bool { return n.instance("web").Avail != dataset.StatusUnknown })
	if a := n.instance("web").Avail; a != dataset.StatusUp {
		t.Fatalf("web is %s after the restart, want up", a)
	}
}

// The guard is a program of its own (haven-guard, beside nodemgr), small
// enough to lock whole: the daemon starts it, `nodemgr guard status` names
// it. A nodemgr without it beside does not start its daemon (it would run
// unguarded) and says why, as does its `guard status`; with node.guard =
// false it starts.
func TestGuardProgram(t *testing.T) {
	t.Parallel()
	n := newNode(t, "n1", "")
	n.startDaemon()
	pid := testbed.ReadPID(filepath.Join(n.root, "run", "guard.lock"))
	want := filepath.Join(binDir, "haven-guard")
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); pid == 0 || exe != want {
		t.Fatalf("the guard (pid %d) runs %q, want %s", pid, exe, want)
	}
	if st := n.must("nodemgr", "guard", "status"); !strings.Contains(st, fmt.Sprintf("pid %d (%s), armed", pid, want)) {
		t.Fatalf("guard status does not name its program:\n%s", st)
	}
	// nodemgr's 19 MB were 22.5 MB of guard, all locked; haven-guard is
	// about 5 MB (docs/benchmarks.md, figure 9)
	if rss := procKB(t, pid, "VmRSS"); rss > 12<<10 {
		t.Fatalf("the guard's RSS is %d kB: more than 12 MB", rss)
	}
	n.must("nodemgr", "daemon", "shutdown")

	// a nodemgr alone in its directory
	alone := t.TempDir()
	binCopy(t, "nodemgr", alone)
	n.bins = alone
	missing := filepath.Join(alone, "haven-guard") + " is missing"
	if r := n.run("nodemgr", "daemon", "start"); r.Code != 1 || !strings.Contains(r.Err, missing) {
		t.Fatalf("daemon start without the guard's program: want exit 1 naming %s:\n%s", filepath.Join(alone, "haven-guard"), r)
	}
	if pid := testbed.DaemonPID(n.root); pid > 0 && testbed.Alive(pid) {
		t.Fatal("a daemon runs without its guard's program")
	}
	if r := n.run("nodemgr", "guard", "status"); r.Code != 1 || !strings.Contains(r.Err, "cannot start one") || !strings.Contains(r.Err, missing) {
		t.Fatalf("guard status without the guard's program:\n%s", r)
	}
	path := filepath.Join(n.root, "etc", "node.toml")
	writeFile(t, path, readFile(t, path)+"guard = false\n")
	n.startDaemon()
}
