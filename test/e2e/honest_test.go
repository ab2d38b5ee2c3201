package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// Honest results: what the
// daemons say about a service is what they know, no more.

// countLines returns the number of lines of a file (0 when missing).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// noCheckService is an app without check (status n/a) whose start appends
// the node name to counter.
func noCheckService(orchestrate, nodes, counter string) string {
	return fmt.Sprintf(`
[DEFAULT]
orchestrate = %q
nodes = %s

[app.main]
start = "sh -c 'echo {nodename} >> %s'"
`, orchestrate, nodes, counter)
}

// An app without a check that was started counts as started: neither
// orchestrate=start nor ha runs its start again, on its node or another.
func TestHonestNAStartedCountsAsUp(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	dir := t.TempDir()
	starts, has := filepath.Join(dir, "starts"), filepath.Join(dir, "has")
	createService(t, c["n1"], "nostart", noCheckService("start", `["n1", "n2"]`, starts))
	createService(t, c["n1"], "noha", noCheckService("ha", `["n1", "n2"]`, has))
	waitFor(t, 20*time.Second, "both started once", func() bool { return countLines(starts) >= 1 && countLines(has) >= 1 })
	// a start run again would be decided before both nodes settle
	settled(t, 30*time.Second, c["n1"], c["n2"])
	for _, f := range []string{starts, has} {
		if got := readFile(t, f); got != "n1\n" {
			t.Fatalf("%s: the start ran %q, want once on n1 (an n/a instance started counts as started)", filepath.Base(f), got)
		}
	}
	inst := c["n2"].status().Services["noha"].Instances["n1"]
	if inst.Avail != dataset.StatusNA || inst.Monitor.LocalExpect != dataset.ExpectStarted {
		t.Fatalf("noha on n1 seen from n2: avail %s local expect %s, want n/a, started", inst.Avail, inst.Monitor.LocalExpect)
	}
}

// causeService fails its start while FLAG is missing, and its stop while
// NOSTOP exists, each with a cause on its last output line.
func causeService(nodes, flag, nostop string) string {
	return fmt.Sprintf(`
[DEFAULT]
orchestrate = "no"
nodes = %s

[app.main]
start = "sh -c 'test -f %s || { echo boom-cause-{nodename}; exit 1; }; sleep 100000 >/dev/null 2>&1 & echo $! > {var}/main.pid'"
stop  = "sh -c 'test -f %s && { echo stop-cause-{nodename}; exit 1; }; kill $(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 $(cat {var}/main.pid) 2>/dev/null'"
timeout = "10s"
`, nodes, flag, nostop)
}

// --wait on a target that can no longer be reached answers at once, with
// the failing nodes and the resource's last line: a start failed on every
// node, a switch whose stop failed.
func TestHonestWaitReturnsTheCause(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	dir := t.TempDir()
	flag, nostop := filepath.Join(dir, "flag"), filepath.Join(dir, "nostop")
	createService(t, c["n1"], "web", causeService(`["n1", "n2"]`, flag, nostop))

	began := time.Now()
	r := c["n2"].run("svcmgr", "-s", "web", "start", "--wait", "--time", "40s")
	took := time.Since(began)
	t.Logf("start --wait on a start failing everywhere: %s after %s", strings.TrimSpace(r.Err), took.Round(10*time.Millisecond))
	if r.Code != 1 || took > 25*time.Second {
		t.Fatalf("start --wait: want exit 1 well before --time, got %s after %s", r, took)
	}
	for _, want := range []string{"n1", "n2", "start failed", "boom-cause-n1", "boom-cause-n2"} {
		if !strings.Contains(r.Err, want) {
			t.Fatalf("start --wait: the answer does not say %q:\n%s", want, r)
		}
	}

	// the target stays: fix the cause, clear, and it is reached
	writeFile(t, flag, "")
	c["n1"].must("svcmgr", "-s", "web", "clear")
	// the clear reaches n2 with the heartbeat: a --wait asked there before
	// it arrived would read the failures it clears
	waitFor(t, 10*time.Second, "n2 sees the clear", func() bool {
		for _, i := range c["n2"].status().Services["web"].Instances {
			if i.Monitor.State == dataset.StartFailed {
				return false
			}
		}
		return true
	})
	c["n2"].must("svcmgr", "-s", "web", "start", "--wait", "--time", "30s")
	waitFor(t, 10*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))

	writeFile(t, nostop, "")
	began = time.Now()
	r = c["n2"].run("svcmgr", "-s", "web", "switch", "--to", "n2", "--wait", "--time", "40s")
	took = time.Since(began)
	t.Logf("switch --wait whose stop failed: %s after %s", strings.TrimSpace(r.Err), took.Round(10*time.Millisecond))
	if r.Code != 1 || took > 25*time.Second {
		t.Fatalf("switch --wait: want exit 1 well before --time, got %s after %s", r, took)
	}
	for _, want := range []string{"stop failed", "n1", "stop-cause-n1"} {
		if !strings.Contains(r.Err, want) {
			t.Fatalf("switch --wait: the answer does not say %q:\n%s", want, r)
		}
	}
}

// With the daemon of n2 dead and its service still running there, neither
// takeover --wait nor stop --wait says "reached": n2's state is unknown.
func TestHonestWaitWithADeadDaemon(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n2", "n1"]`, ""))
	waitFor(t, 15*time.Second, "web up on n2", upOnlyOn(c["n1"], "web", "n2"))
	syscallKill(daemonPid(t, c["n2"]))
	waitFor(t, 10*time.Second, "n1 sees n2 down", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeDown })

	for _, action := range []string{"takeover", "stop"} {
		r := c["n1"].run("svcmgr", "-s", "web", action, "--wait", "--time", "6s")
		t.Logf("%s --wait with n2's daemon dead: exit %d: %s%s", action, r.Code, r.Out, r.Err)
		if r.Code != 1 || strings.Contains(r.Out, "reached") {
			t.Fatalf("%s --wait said the target was reached although n2 is unknown: %s", action, r)
		}
		if !strings.Contains(r.Err, "n2") || !strings.Contains(r.Err, "unknown") {
			t.Fatalf("%s --wait: the answer does not name n2 as unknown: %s", action, r)
		}
		c["n1"].must("svcmgr", "-s", "web", "abort")
	}
}

// After the owner crashed, its last data is shown as stale (with its age),
// it is never a second leader, and when it comes back its peers do not warn
// about a service up twice from its pre-crash data.
func TestHonestStaleDataOfACrashedNode(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 15*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	syscallKill(daemonPid(t, c["n1"]))
	killService(t, c["n1"], "web")
	waitFor(t, 20*time.Second, "web failed over to n2", upOnlyOn(c["n2"], "web", "n2"))

	var ss dataset.ServiceStatus
	if err := json.Unmarshal([]byte(c["n2"].must("svcmgr", "-s", "web", "print", "status", "--format", "json")), &ss); err != nil {
		t.Fatal(err)
	}
	n1 := ss.Instances["n1"]
	if !n1.Stale || n1.PlacementLeader || n1.AgeMs < 1000 {
		t.Fatalf("n1's instance seen from n2 after the crash: stale %v leader %v age %dms; want stale, not leader, age >= 1s", n1.Stale, n1.PlacementLeader, n1.AgeMs)
	}
	tree := c["n2"].must("svcmgr", "-s", "web", "print", "status")
	t.Logf("print status on n2 after the crash of n1:\n%s", tree)
	if strings.Count(tree, "leader") > 1 || !strings.Contains(tree, "stale") {
		t.Fatalf("print status shows two leaders or no stale mark:\n%s", tree)
	}
	if mon := c["n2"].must("svcmon"); !strings.Contains(mon, "stale") {
		t.Fatalf("svcmon does not mark n1's instance stale:\n%s", mon)
	}

	// n1 comes back: its check finds web down; no warning on n2
	c["n1"].startDaemon()
	waitFor(t, 15*time.Second, "n2 sees web down on n1", func() bool {
		i := c["n2"].status().Services["web"].Instances["n1"]
		return !i.Stale && i.Avail == dataset.StatusDown
	})
	settled(t, 30*time.Second, c["n1"], c["n2"])
	for _, n := range []string{"n1", "n2"} {
		if log := nodeLog(t, c[n]); strings.Contains(log, "more than one node") {
			t.Fatalf("%s warned about web up on more than one node from n1's pre-crash data:\n%s", n, log)
		}
	}
}

// Resources that misbehave: a start of an up instance does nothing, a stop
// that leaves the resource up is "stop failed" (once, not a loop), and
// delete refuses while the stop fails. (What a stop leaves of the
// processes is killed with the instance's cgroup once the stop ended: here
// the check reads a file the stop leaves.)
func TestHonestMisbehavingResources(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	dir := t.TempDir()
	starts, stops := filepath.Join(dir, "starts"), filepath.Join(dir, "stops")
	createService(t, n, "web", fmt.Sprintf(`
[DEFAULT]
orchestrate = "no"

[app.main]
start = "sh -c 'echo x >> %s; sleep 100000 >/dev/null 2>&1 & echo $! > {var}/main.pid'"
stop  = "sh -c 'echo x >> %s'"
check = "sh -c 'test -f {var}/main.pid'"
timeout = "10s"
`, starts, stops))
	n.must("svcmgr", "-s", "web", "start", "--local")
	r := n.run("svcmgr", "-s", "web", "start", "--local")
	if r.Code != 0 || countLines(starts) != 1 {
		t.Fatalf("start --local of an up instance: %s; start ran %d times, want once", r, countLines(starts))
	}

	began := time.Now()
	// a short --time: the node settles once its deadline passed
	r = n.run("svcmgr", "-s", "web", "stop", "--wait", "--time", "8s")
	took := time.Since(began)
	t.Logf("stop --wait of a stop that leaves the app up: %s after %s", strings.TrimSpace(r.Err), took.Round(10*time.Millisecond))
	if r.Code != 1 || took > 5*time.Second || !strings.Contains(r.Err, "stop failed") || !strings.Contains(r.Err, "app#main") {
		t.Fatalf("stop --wait: want exit 1 at once with stop failed and the resource, got %s after %s", r, took)
	}
	settled(t, 30*time.Second, n)
	if k := countLines(stops); k != 1 {
		t.Fatalf("the stop ran %d times, want once (then stop failed)", k)
	}
	if st := n.instance("web").Monitor.State; st != dataset.StopFailed {
		t.Fatalf("monitor state %q, want stop failed", st)
	}
	n.must("svcmgr", "-s", "web", "abort")
	if ge := n.status().Services["web"].GlobalExpect; ge != dataset.ExpectNone {
		t.Fatalf("after abort the status shows global expect %q, want none", ge)
	}
	r = n.run("svcmgr", "-s", "web", "delete")
	if r.Code != 1 || !strings.Contains(r.Err, "app#main") {
		t.Fatalf("delete with a stop that fails: want exit 1 with the cause, got %s", r)
	}
	if _, err := os.Stat(filepath.Join(n.root, "etc", "services", "web.toml")); err != nil {
		t.Fatalf("delete refused but the config is gone: %v", err)
	}
}
