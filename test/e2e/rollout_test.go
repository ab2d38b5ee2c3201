package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Rollouts (docs/behaviour.md 11) with real daemons on loopback: a flex
// service of 3 instances whose app journals the version it starts with,
// watched from outside the cluster (procWatch samples each node's process
// every 20 ms).

// versionStart is the start command of the journaled app at version v.
func versionStart(journal, v string) string {
	return fmt.Sprintf("sh -c 'echo start {nodename} %s >> %s; sleep 100000 >/dev/null 2>&1 & echo $! > {var}/main.pid'", v, journal)
}

// trough is the fewest nodes whose process ran in one sampling round
// after t, and when.
func (w *procWatch) trough(after time.Time) (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	least, when := len(w.probes)+1, ""
	for _, at := range w.at {
		if !at.After(after) {
			continue
		}
		var on []string
		for n, ts := range w.alive {
			for _, s := range ts {
				if s.Equal(at) {
					on = append(on, n)
					break
				}
			}
		}
		if len(on) < least {
			least, when = len(on), at.Format("15:04:05.000")+" "+strings.Join(on, ",")
		}
	}
	return least, when
}

// journaledFlex is a flex service of 3 instances on n1, n2, n3 whose app
// journals the version it starts with (v1).
func journaledFlex(journal string) string {
	return journaledFlexOf(journal, `nodes = ["n1", "n2", "n3"]
flex_target = 3`)
}

// journaledFlexOf is journaledFlex with the nodes and flex keywords of
// head.
func journaledFlexOf(journal, head string) string {
	return fmt.Sprintf(`[DEFAULT]
orchestrate = "ha"
topology = "flex"
update_monitor = "1s"
`+head+`

[app.main]
start = "%s"
stop  = "sh -c 'kill $(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 $(cat {var}/main.pid) 2>/dev/null'"
monitor = true
timeout = "10s"
`, strings.ReplaceAll(versionStart(journal, "v1"), `"`, `\"`))
}

// lastStarts is the version of the last start journaled by each node.
func lastStarts(t *testing.T, journal string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, journal)), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "start" {
			out[f[1]] = f[2]
		}
	}
	return out
}

// A good version rolls out one node at a time (never fewer than 2 of the 3
// up, never more than 3), and rollout --wait exits 0 once every instance
// started it; an edit of keywords that only orchestrate (priority,
// flex_min) shows no instance on an old config and leaves nothing to roll
// out; a bad version (its start fails) fails the rollout at the
// first node and is rolled back by itself (update_failure_action rollback,
// the default): --wait exits 1 naming that node, the cause and the
// rollback, every node holds the good config again and every instance runs
// it (the failed one started again on it, the other two never restarted).
func TestRolloutFlex(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	journal := filepath.Join(t.TempDir(), "journal")
	svc := journaledFlex(journal)
	createService(t, c["n1"], "app", svc)
	pids := map[string]string{}
	for _, n := range names {
		pids[n] = filepath.Join(c[n].root, "var", "services", "app", "main.pid")
	}
	w := watchProcs(t, pids)
	waitFor(t, 40*time.Second, "app up on 3 nodes", func() bool { return len(w.running()) == 3 })

	c["n2"].must("svcmgr", "-s", "app", "set", "--kw", "app#main.start="+versionStart(journal, "v2"))
	waitFor(t, 20*time.Second, "svcmon on n3 shows the old config", func() bool {
		return strings.Count(c["n3"].must("svcmon"), "(old config)") == 3
	})
	// what the rollout would do, in the simulation of the live cluster
	// (svcmgr simulate --rollout): nothing is restarted by it
	sim := c["n3"].must("svcmgr", "-s", "app", "rollout", "--dry-run")
	for _, want := range []string{"running an older config than their node holds (a rollout restarts them): app@n1, app@n2, app@n3",
		"of app, batch by batch: done", "  batch 1: n1 ok (restart +", "  batch 3: n3 ok",
		"instances up at once: fewest 2 since the request (bound 2, flex_target - update_parallelism), most 3 (at most 3)"} {
		if !strings.Contains(sim, want) {
			t.Fatalf("rollout --dry-run: no %q in\n%s", want, sim)
		}
	}
	if n := strings.Count(readFile(t, journal), "start "); n != 3 {
		t.Fatalf("after the dry run, %d starts journaled, want the 3 first:\n%s", n, readFile(t, journal))
	}
	from := time.Now()
	out := c["n3"].must("svcmgr", "-s", "app", "rollout", "--wait", "--time", "60s")
	took := time.Since(from)
	if !strings.Contains(out, "done") {
		t.Fatalf("rollout --wait:\n%s", out)
	}
	for _, n := range names {
		if v := lastStarts(t, journal)[n]; v != "v2" {
			t.Fatalf("%s last started %q after the rollout, want v2:\n%s", n, v, readFile(t, journal))
		}
	}
	w.moreRounds(5)
	if least, when := w.trough(from); least < 2 {
		t.Fatalf("the watcher saw %d instances up at once during the rollout (%s): parallelism 1 keeps 2 of 3", least, when)
	}
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the watcher saw %d instances at once (%s), flex_max is 3", most, when)
	}
	t.Logf("rollout of 3 instances, parallelism 1, update_monitor 1s: %s", took.Round(10*time.Millisecond))

	// an edit of keywords that only orchestrate leaves every instance on
	// the current config: nothing shown old, nothing to roll out
	c["n1"].must("svcmgr", "-s", "app", "set", "--kw", "priority=20", "--kw", "flex_min=2")
	waitFor(t, 20*time.Second, "the priority edit on n3", func() bool {
		return strings.TrimSpace(c["n3"].must("svcmgr", "-s", "app", "get", "--kw", "priority")) == "20"
	})
	if mon := c["n3"].must("svcmon"); strings.Contains(mon, "(old config)") {
		t.Fatalf("a priority and flex_min edit shows the instances on an old config:\n%s", mon)
	}
	if out := c["n3"].must("svcmgr", "-s", "app", "rollout"); !strings.Contains(out, "nothing to do") {
		t.Fatalf("rollout after a priority edit: %s", out)
	}

	// a bad version: its start fails
	c["n1"].must("svcmgr", "-s", "app", "set", "--kw", "app#main.start=sh -c 'exit 1'")
	waitFor(t, 20*time.Second, "svcmon on n2 shows the old config", func() bool {
		return strings.Count(c["n2"].must("svcmon"), "(old config)") == 3
	})
	from = time.Now()
	r := c["n2"].run("svcmgr", "-s", "app", "rollout", "--wait", "--time", "60s")
	if r.Code != 1 || !strings.Contains(r.Err, "n1: restart failed") || !strings.Contains(r.Err, "rolled back") {
		t.Fatalf("rollout --wait of a bad version: want exit 1 naming n1, the failed restart and the rollback: %s", r)
	}
	// every node holds the good config again, and every instance runs it
	defer func() {
		if t.Failed() {
			t.Logf("n1 node log:\n%s\nsvcmon:\n%s", readFile(t, filepath.Join(c["n1"].root, "log", "node.log")), c["n1"].must("svcmgr", "-s", "app", "print", "status"))
		}
	}()
	waitFor(t, 30*time.Second, "app up on 3 nodes on v2 again", func() bool {
		starts := lastStarts(t, journal)
		return len(w.running()) == 3 && starts["n1"] == "v2" && starts["n2"] == "v2" && starts["n3"] == "v2"
	})
	t.Logf("bad version rolled back, from rollout --wait to 3 instances up on v2 again (update_monitor 1s): %s", time.Since(from).Round(10*time.Millisecond))
	st := c["n3"].must("svcmgr", "-s", "app", "rollout", "status")
	if !strings.Contains(st, "rollback of ") || !strings.Contains(st, "done") || strings.Contains(st, "(old)") {
		t.Fatalf("rollout status after the rollback:\n%s", st)
	}
	for _, n := range names {
		if got := c[n].must("svcmgr", "-s", "app", "get", "--kw", "app#main.start"); !strings.Contains(got, "v2") {
			t.Fatalf("%s holds app#main.start %q after the rollback, want the v2 start", n, got)
		}
	}
	w.moreRounds(5)
	if least, when := w.trough(from); least < 2 {
		t.Fatalf("the watcher saw %d instances up at once during the bad rollout and its rollback (%s)", least, when)
	}
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the watcher saw %d instances at once (%s), flex_max is 3", most, when)
	}
	if j := readFile(t, journal); strings.Count(j, "start n2 v2") != 1 || strings.Count(j, "start n3 v2") != 1 {
		t.Fatalf("n2 or n3 restarted by the rollback (they never left v2):\n%s", j)
	}
}

// With admin keys, a signed set --rollout --wait edits and rolls out in
// one go; the rollback of a bad signed config installs the
// previous signed text again, signature included, and every node accepts
// it (its serial is the replay floor: one config back); every instance
// ends on it.
func TestRolloutRollbackSigned(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3"}
	c := newCluster(t, names, clusterOpts{})
	ws := t.TempDir() // the admin's workstation
	key := filepath.Join(ws, "alice.key")
	line := c["n1"].must("svcmgr", "key", "generate", "--name", "alice", "--key", key)
	signedConf := readFile(t, c["n1"].root+"/etc/cluster.toml") + "\n[admin_keys]\n" + line
	for _, n := range names {
		writeClusterToml(t, c[n], signedConf)
	}
	startNodes(t, c, names)
	journal := filepath.Join(t.TempDir(), "journal")
	file := filepath.Join(ws, "app.toml")
	writeFile(t, file, journaledFlex(journal))
	c["n1"].must("svcmgr", "-s", "app", "sign", file, "--key", key, "--cluster", "test")
	c["n2"].must("svcmgr", "-s", "app", "create", "--config", file)
	pids := map[string]string{}
	for _, n := range names {
		pids[n] = filepath.Join(c[n].root, "var", "services", "app", "main.pid")
	}
	w := watchProcs(t, pids)
	waitFor(t, 40*time.Second, "app up on 3 nodes", func() bool { return len(w.running()) == 3 })

	// the signed edit and its rollout in one go
	if out := c["n2"].must("svcmgr", "-s", "app", "set", "--kw", "app#main.start="+versionStart(journal, "v2"), "--key", key, "--rollout", "--wait", "--time", "60s"); !strings.Contains(out, "done") {
		t.Fatalf("set --rollout --wait:\n%s", out)
	}
	if starts := lastStarts(t, journal); starts["n1"] != "v2" || starts["n2"] != "v2" || starts["n3"] != "v2" {
		t.Fatalf("after set --rollout --wait, the last starts are %v, want v2 everywhere", starts)
	}
	good := readFile(t, c["n1"].root+"/etc/services/app.toml")
	if !strings.Contains(good, "v2") {
		t.Fatalf("the config after the signed set:\n%s", good)
	}
	c["n1"].must("svcmgr", "-s", "app", "set", "--kw", "app#main.start=sh -c 'exit 1'", "--key", key)
	r := c["n2"].run("svcmgr", "-s", "app", "rollout", "--wait", "--time", "60s")
	if r.Code != 1 || !strings.Contains(r.Err, "restart failed") || !strings.Contains(r.Err, "rolled back") {
		t.Fatalf("rollout --wait of a bad signed version: want exit 1 naming the failed restart and the rollback: %s", r)
	}
	waitFor(t, 30*time.Second, "app up on 3 nodes on v2 again", func() bool {
		starts := lastStarts(t, journal)
		return len(w.running()) == 3 && starts["n1"] == "v2" && starts["n2"] == "v2" && starts["n3"] == "v2"
	})
	for _, n := range names {
		if got := readFile(t, c[n].root+"/etc/services/app.toml"); got != good {
			t.Fatalf("%s holds after the rollback:\n%s\nwant the previous signed text:\n%s", n, got, good)
		}
		if lg := readFile(t, filepath.Join(c[n].root, "log", "node.log")); strings.Contains(lg, "config_refused") {
			t.Fatalf("%s refused a config during the rollback:\n%s", n, lg)
		}
	}
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the watcher saw %d instances at once (%s), flex_max is 3", most, when)
	}
}

// The node that took the rollout is killed (kill -9 of its daemon) while
// the first node's turn runs: the record is already on the others' disks
// and each takes its own turn from it, so the rollout ends done without
// it. n4 holds no instance (flex_target 3 of n1..n4), so nothing waits on
// its return; the watcher outside the cluster sees every node's process
// and the journal of the versions started: never fewer than 2 up, never
// more than 3, each of n1 n2 n3 last started v2. The status's rollout
// (monitor.RolloutView) is what the test follows. n4 back, it holds the
// record as done and restarts nothing.
func TestRolloutOriginKilled(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3", "n4"}
	c := startCluster(t, names, clusterOpts{})
	journal := filepath.Join(t.TempDir(), "journal")
	svc := fmt.Sprintf(`[DEFAULT]
orchestrate = "ha"
nodes = ["n1", "n2", "n3", "n4"]
topology = "flex"
flex_target = 3
flex_max = 3
update_monitor = "2s"

[app.main]
start = "%s"
stop  = "sh -c 'kill $(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 $(cat {var}/main.pid) 2>/dev/null'"
monitor = true
timeout = "10s"
`, strings.ReplaceAll(versionStart(journal, "v1"), `"`, `\"`))
	createService(t, c["n1"], "app", svc)
	pids := map[string]string{}
	for _, n := range names {
		pids[n] = filepath.Join(c[n].root, "var", "services", "app", "main.pid")
	}
	w := watchProcs(t, pids)
	waitFor(t, 40*time.Second, "app up on n1 n2 n3", func() bool { return strings.Join(w.running(), ",") == "n1,n2,n3" })

	c["n2"].must("svcmgr", "-s", "app", "set", "--kw", "app#main.start="+versionStart(journal, "v2"))
	waitFor(t, 20*time.Second, "every node holds the new config (svcmon on n4: 3 old)", func() bool {
		return strings.Count(c["n4"].must("svcmon"), "(old config)") == 3
	})
	from := time.Now()
	out := c["n4"].must("svcmgr", "-s", "app", "rollout")
	if !strings.Contains(out, "accepted") {
		t.Fatalf("rollout on n4: %s", out)
	}
	waitFor(t, 20*time.Second, "n2 sees n1's turn under way", func() bool {
		r := c["n2"].status().Services["app"].Rollout
		return r != nil && len(r.Turns) == 3 && (r.Turns[0].State == "restarting" || r.Turns[0].State == "monitoring")
	})
	if err := syscall.Kill(daemonPid(t, c["n4"]), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var last string
	waitFor(t, 60*time.Second, "n2 and n3 see the rollout done", func() bool {
		done := true
		for _, n := range []string{"n2", "n3"} {
			r := c[n].status().Services["app"].Rollout
			if r == nil || r.State != "done" || r.OK != 3 {
				done = false
				last = fmt.Sprintf("%s: %+v", n, r)
			}
		}
		return done
	})
	if r := c["n1"].status().Services["app"].Rollout; r.Pending != 0 || r.Turns[1].State != "ok" || r.Turns[2].State != "ok" {
		t.Fatalf("n1's view of the rollout: %+v (last %s)", r, last)
	}
	t.Logf("rollout taken by n4, n4 killed %s after the request; done %s after the request", killed.Sub(from).Round(10*time.Millisecond), time.Since(from).Round(10*time.Millisecond))
	for _, n := range names[:3] {
		if v := lastStarts(t, journal)[n]; v != "v2" {
			t.Fatalf("%s last started %q after the rollout, want v2:\n%s", n, v, readFile(t, journal))
		}
	}
	w.moreRounds(5)
	if least, when := w.trough(from); least < 2 {
		t.Fatalf("the watcher saw %d instances up at once during the rollout (%s): parallelism 1 keeps 2 of 3", least, when)
	}
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the watcher saw %d instances at once (%s), flex_max is 3", most, when)
	}
	if got := strings.Join(w.running(), ","); got != "n1,n2,n3" {
		t.Fatalf("after the rollout app runs on %s, want n1,n2,n3", got)
	}

	// n4 back: it holds the record (its own, from its disk), sees it done
	// and restarts nothing
	c["n4"].startDaemon()
	waitFor(t, 30*time.Second, "n4 sees the rollout done", func() bool {
		r := c["n4"].status().Services["app"].Rollout
		return r != nil && r.State == "done"
	})
	if n := strings.Count(readFile(t, journal), "start "); n != 6 {
		t.Fatalf("%d starts journaled, want 6 (3 of v1, 3 of v2):\n%s", n, readFile(t, journal))
	}
}

// update_order = "start-first" (behaviour.md 11.5) on 4 nodes, flex
// target 2, max 3: each turn's old instance runs on until a replacement
// started on a spare node is up, then stops. The watcher outside the
// cluster never sees fewer than 2 processes up from the request on, nor
// more than 3; at the end 2 instances run v2, on other nodes than the
// first two (each replaced node is the spare of the next turn).
func TestRolloutStartFirst(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3", "n4"}
	c := startCluster(t, names, clusterOpts{})
	journal := filepath.Join(t.TempDir(), "journal")
	createService(t, c["n1"], "app", journaledFlexOf(journal, `nodes = ["n1", "n2", "n3", "n4"]
flex_target = 2
flex_max = 3
update_order = "start-first"`))
	pids := map[string]string{}
	for _, n := range names {
		pids[n] = filepath.Join(c[n].root, "var", "services", "app", "main.pid")
	}
	w := watchProcs(t, pids)
	waitFor(t, 40*time.Second, "app up on 2 nodes", func() bool { return len(w.running()) == 2 })
	first := w.running()

	c["n2"].must("svcmgr", "-s", "app", "set", "--kw", "app#main.start="+versionStart(journal, "v2"))
	waitFor(t, 20*time.Second, "svcmon on n3 shows the old config", func() bool {
		return strings.Count(c["n3"].must("svcmon"), "(old config)") == 2
	})
	sim := c["n3"].must("svcmgr", "-s", "app", "rollout", "--dry-run")
	if want := "fewest 2 since the request (bound 2, flex_target: start-first, while a spare starts for each turn), most 3 (at most 3)"; !strings.Contains(sim, want) {
		t.Fatalf("rollout --dry-run: no %q in\n%s", want, sim)
	}
	from := time.Now()
	out := c["n3"].must("svcmgr", "-s", "app", "rollout", "--wait", "--time", "60s")
	took := time.Since(from)
	if !strings.Contains(out, "done") {
		t.Fatalf("rollout --wait:\n%s", out)
	}
	waitFor(t, 20*time.Second, "2 instances up, both on v2", func() bool {
		run := w.running()
		if len(run) != 2 {
			return false
		}
		starts := lastStarts(t, journal)
		for _, n := range run {
			if starts[n] != "v2" {
				return false
			}
		}
		return true
	})
	w.moreRounds(5)
	if least, when := w.trough(from); least < 2 {
		t.Fatalf("the watcher saw %d instances up at once during the start-first rollout (%s), flex_target is 2:\n%s", least, when, readFile(t, journal))
	}
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the watcher saw %d instances at once (%s), flex_max is 3", most, when)
	}
	st := c["n1"].must("svcmgr", "-s", "app", "rollout", "status")
	if !strings.Contains(st, "done") || strings.Contains(st, "restarting") {
		t.Fatalf("rollout status after the start-first rollout:\n%s", st)
	}
	if j := readFile(t, journal); strings.Count(j, " v2") != 2 {
		t.Fatalf("%d v2 starts journaled, want 2 (one replacement per turn, none restarted in place):\n%s", strings.Count(j, " v2"), j)
	}
	t.Logf("start-first rollout of %v on 4 nodes (target 2, max 3): %s, now on %v", first, took.Round(10*time.Millisecond), w.running())
}
