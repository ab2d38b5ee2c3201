package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"haven/test/testbed"
)

// The node guard (docs/behaviour.md 3.1), in network namespaces: the
// owner's daemon is killed or paused while its service runs; its guard
// ends the service before any survivor starts it. The observer is a
// watcher outside the cluster: every 20 ms it reads each node's pid file
// of the service and looks the process up in /proc. It trusts nothing the
// daemons say.

// procWatch samples, every 20 ms, whether the process named by each
// node's pid file runs.
type procWatch struct {
	t     *testing.T
	files map[string]string // node -> pid file
	mu    sync.Mutex
	// alive are the samples where a node's process ran: node -> times
	alive map[string][]time.Time
	// both are the samples where it ran on two nodes at once
	both []string
	stop chan struct{}
	done chan struct{}
}

func watchProcs(t *testing.T, files map[string]string) *procWatch {
	w := &procWatch{t: t, files: files, alive: map[string][]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.close)
	return w
}

func (w *procWatch) run() {
	defer close(w.done)
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	for {
		now := time.Now()
		var on []string
		for node, f := range w.files {
			if pid := testbed.ReadPID(f); pid > 0 && testbed.Alive(pid) {
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
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-tk.C:
		}
	}
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
func (w *procWatch) runs(node string) bool {
	pid := testbed.ReadPID(w.files[node])
	return pid > 0 && testbed.Alive(pid)
}

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
	time.Sleep(100 * time.Millisecond) // a few more samples
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
	w := watchProcs(t, q.appPids(names...))
	var ended, started, margins []time.Duration
	for run := 0; run < guardRuns(); run++ {
		e, s, m := q.guardRun(t, w, "n1", []string{"n2", "n3"}, func(pid int) { syscall.Kill(pid, syscall.SIGKILL) })
		t.Logf("run %d: n1's process last seen %s after the kill, a survivor's %s after, margin %s", run+1, e.Round(time.Millisecond), s.Round(time.Millisecond), m.Round(time.Millisecond))
		ended, started, margins = append(ended, e), append(started, s), append(margins, m)
		rec := readFile(t, filepath.Join(c["n1"].root, "var", "guard.json"))
		if !strings.Contains(rec, `"service": "web"`) {
			t.Fatalf("n1's guard record does not name web:\n%s", rec)
		}
		q.back(t, "n1", names)
		if !strings.Contains(nodeLog(t, c["n1"]), "guard_fired") {
			t.Fatal("the restarted daemon of n1 did not say guard_fired")
		}
	}
	guardFigures(t, "kill -9 of the owner's daemon, 3 nodes, quorum on", ended, started, margins)
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
	w := watchProcs(t, q.appPids("n1", "n2"))
	var ended, started, margins []time.Duration
	for run := 0; run < guardRuns(); run++ {
		e, s, m := q.guardRun(t, w, "n1", []string{"n2"}, func(pid int) { syscall.Kill(pid, syscall.SIGKILL) })
		t.Logf("run %d: n1's process last seen %s after the kill, n2's %s after, margin %s", run+1, e.Round(time.Millisecond), s.Round(time.Millisecond), m.Round(time.Millisecond))
		ended, started, margins = append(ended, e), append(started, s), append(margins, m)
		if run+1 < guardRuns() {
			q.back(t, "n1", []string{"n1", "n2"})
		}
	}
	guardFigures(t, "kill -9 of the owner's daemon, 2 nodes, one-vote arbitrator", ended, started, margins)
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
