package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Flex services (docs/behaviour.md 10) with real daemons in network
// namespaces, quorum on, the node guard armed: 3 nodes, flex_target 2.
// The watcher of guard_test.go samples each node's app process in /proc
// every 20 ms, outside the cluster: it never sees more than flex_max (2)
// processes alive at once.

// flexService is the journaled test app as a flex service of target on
// nodes.
func (q *quorumBed) flexService(target int, nodes ...string) string {
	return strings.Replace(q.service(nodes...), "orchestrate = \"ha\"\n",
		fmt.Sprintf("orchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = %d\n", target), 1)
}

// flexPids are the pid files of the flex service app on each node.
func (q *quorumBed) flexPids(names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = filepath.Join(q.nodes[n].root, "var", "services", "app", "app.pid")
	}
	return out
}

// peak is the most nodes whose process the watcher saw alive in one
// sampling round, and when.
func (w *procWatch) peak() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at := map[time.Time][]string{}
	for n, ts := range w.alive {
		for _, t := range ts {
			at[t] = append(at[t], n)
		}
	}
	most, when := 0, ""
	for t, ns := range at {
		if len(ns) > most {
			slices.Sort(ns)
			most, when = len(ns), t.Format("15:04:05.000")+" "+strings.Join(ns, ",")
		}
	}
	return most, when
}

// running returns the nodes whose process runs now (the watcher's probes).
func (w *procWatch) running() []string {
	var out []string
	for n, p := range w.probes {
		if p() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// kill -9 of the daemon of a node that hosts an instance: its guard ends
// the app when the lease runs out, the survivors' gate opens after it,
// and the third node takes the free slot: back to 2 up, never 3 at once.
// The restarted daemon says guard_fired and starts nothing (the target is
// up without it). Then scale --to 3 --wait (flex_target through the
// config path): the third instance starts; scale --to 1 --wait: the
// two least preferred stop.
func TestNetnsFlexKilledDaemonNeverAboveMax(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBed(t, names, nil, nil)
	c := q.nodes
	w := watchProcs(t, q.flexPids(names...))
	createService(t, c["n1"], "app", q.flexService(2, names...))
	q.waitFor(40*time.Second, "app up on 2 nodes", func() bool { return len(w.running()) == 2 })
	st := c["n3"].status().Services["app"]
	if st.Flex == nil || st.Flex.Target != 2 || st.Flex.Max != 2 {
		t.Fatalf("the status object's flex of app: %+v", st.Flex)
	}
	q.waitFor(20*time.Second, "n3 shows app up 2/2", func() bool {
		f := c["n3"].status().Services["app"].Flex
		return f != nil && f.Up == 2
	})
	if out := c["n3"].must("svcmon"); !strings.Contains(out, "up 2/2") {
		t.Fatalf("svcmon does not show app up 2/2:\n%s", out)
	}
	if out := c["n3"].must("svcmgr", "-s", "app", "explain"); !strings.Contains(out, "flex: 2 of 2 running (min 1, max 2)") {
		t.Fatalf("explain:\n%s", out)
	}
	// the refusals that say what to use
	if r := c["n2"].run("svcmgr", "-s", "app", "switch", "--to", "n3"); r.Code != 2 || !strings.Contains(r.Out+r.Err, "does not apply to a flex service") {
		t.Fatalf("switch of a flex service: %s", r)
	}

	up := w.running()
	owner := up[0]
	var free string
	for _, n := range names {
		if !slices.Contains(up, n) {
			free = n
		}
	}
	at := time.Now()
	if err := syscall.Kill(daemonPid(t, c[owner]), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	q.waitFor(90*time.Second, free+" runs app, "+owner+"'s app ended (watcher)", func() bool {
		return w.runs(free) && !w.runs(owner)
	})
	w.moreRounds(5)
	ended, _ := w.last(owner, time.Now())
	started, _ := w.first(free, at)
	t.Logf("kill -9 of %s's daemon: its app last seen %s after, %s's start seen %s after (margin %s)", owner,
		ended.Sub(at).Round(time.Millisecond), free, started.Sub(at).Round(time.Millisecond), started.Sub(ended).Round(time.Millisecond))
	if n := len(w.running()); n != 2 {
		t.Fatalf("%d instances run after the takeover, want 2: %v", n, w.running())
	}
	if most, when := w.peak(); most > 2 {
		q.dump()
		q.guardLogs()
		t.Fatalf("the watcher saw %d instances alive at once (%s), flex_max is 2", most, when)
	}

	// the owner's daemon back: guard_fired, nothing started there
	q.startDaemon(owner)
	q.converge(names, 30*time.Second)
	if frozen(c[owner]) {
		c[owner].must("nodemgr", "thaw")
	}
	if !strings.Contains(nodeLog(t, c[owner]), "guard_fired") {
		t.Fatalf("the restarted daemon of %s did not say guard_fired", owner)
	}
	q.waitFor(30*time.Second, free+" sees "+owner+"'s instance of app down", func() bool {
		i, ok := c[free].status().Services["app"].Instances[owner]
		return ok && i.Avail == "down"
	})
	// a check of its instance now (an input): the pass after it decides
	// on the whole view
	passes := c[owner].daemonStatus().Passes
	c[owner].must("svcmgr", "-s", "app", "print", "status", "-r")
	waitFor(t, 90*time.Second, owner+" runs a decision pass after its check", func() bool { return c[owner].daemonStatus().Passes > passes })
	if got := w.running(); len(got) != 2 || slices.Contains(got, owner) {
		t.Fatalf("after %s came back: app runs on %v, want the 2 others", owner, got)
	}

	// scale to 3 through the config path, from any node
	if out := c[free].must("svcmgr", "-s", "app", "scale", "--to", "3", "--wait", "--time", "60s"); !strings.Contains(out, "app: 3 instances up") {
		t.Fatalf("scale --to 3 --wait: %s", out)
	}
	if got := w.running(); len(got) != 3 {
		t.Fatalf("after scale --to 3 --wait: app runs on %v (watcher)", got)
	}
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the watcher saw %d instances alive at once (%s), flex_max is 3", most, when)
	}
	// and down to 1: the two least preferred stop
	c["n2"].must("svcmgr", "-s", "app", "scale", "--to", "1", "--wait", "--time", "60s")
	q.waitFor(30*time.Second, "app's processes end on 2 nodes (watcher)", func() bool { return len(w.running()) == 1 })
	if got := w.running(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("after scale --to 1: app runs on %v, want n1 (the first of nodes)", got)
	}
}

// The global mode (flex_target = "all", docs/behaviour.md 10.8) with real
// daemons in network namespaces, quorum on: an instance on each of the 3
// nodes; a drained node stops its own and gets none until thawed, the
// others never move; a node that leaves (daemon shutdown) and joins again
// starts its own at once (no window); stop --node and start --node, given
// on another node, stop and hold one node's instance, then let it run
// again. The watcher outside the cluster
// never sees more than one process per node, nor more than 3.
func TestNetnsFlexGlobal(t *testing.T) {
	t.Parallel()
	began := time.Now()
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBed(t, names, nil, nil)
	c := q.nodes
	w := watchProcs(t, q.flexPids(names...))
	createService(t, c["n1"], "app", strings.Replace(q.flexService(1, names...), "flex_target = 1", `flex_target = "all"`, 1))
	q.waitFor(30*time.Second, "app up on the 3 nodes", func() bool { return len(w.running()) == 3 })
	flexIs := func(n string, up, target int) func() bool {
		return func() bool {
			f := c[n].status().Services["app"].Flex
			return f != nil && f.Global && f.Up == up && f.Target == target && f.Max == 3
		}
	}
	q.waitFor(20*time.Second, "n3 shows app up 3/3", flexIs("n3", 3, 3))

	c["n2"].must("nodemgr", "drain")
	q.waitFor(20*time.Second, "n2's app ended (watcher)", func() bool { return !w.runs("n2") })
	q.waitFor(20*time.Second, "n1 shows app up 2/2 (n2 drained: no instance belongs there)", flexIs("n1", 2, 2))
	if got := w.running(); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Fatalf("n2 drained: app runs on %v, want n1 n3", got)
	}
	c["n2"].must("nodemgr", "thaw")
	q.waitFor(20*time.Second, "n2 runs app again once thawed", func() bool { return w.runs("n2") })

	// one node's instance, from another node: held stopped, then back
	if out := c["n3"].must("svcmgr", "-s", "app", "stop", "--node", "n2", "--wait", "--time", "30s"); !strings.Contains(out, "target stopped@n2 reached") {
		t.Fatalf("stop --node n2 --wait: %s", out)
	}
	if w.runs("n2") || !c["n1"].status().Services["app"].Instances["n2"].Frozen {
		t.Fatalf("after stop --node n2 --wait: n2 runs app %v, its instance frozen %v", w.runs("n2"), c["n1"].status().Services["app"].Instances["n2"].Frozen)
	}
	c["n1"].must("svcmgr", "-s", "app", "start", "--node", "n2", "--wait", "--time", "30s")
	q.waitFor(20*time.Second, "n2 runs app again after start --node n2", func() bool { return w.runs("n2") })

	c["n3"].must("nodemgr", "daemon", "shutdown")
	q.waitFor(20*time.Second, "n3's app ended with its daemon", func() bool { return !w.runs("n3") })
	q.startDaemon("n3")
	q.converge(names, 30*time.Second)
	if frozen(c["n3"]) {
		c["n3"].must("nodemgr", "thaw")
	}
	q.waitFor(30*time.Second, "n3 runs app again once back", func() bool { return w.runs("n3") })
	q.waitFor(20*time.Second, "n1 shows app up 3/3", flexIs("n1", 3, 3))
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the watcher saw %d instances alive at once (%s), 3 nodes", most, when)
	}
	t.Logf("global mode on 3 nodes: %s", time.Since(began).Round(100*time.Millisecond))
}

// A member added to the cluster gets its instance of a global service
// (docs/operations.md, "Adding a member"): 3 nodes run app on nodes =
// ["*"]; cluster.toml with a 4th member is put on every node, n4's daemon
// starts and the others restart one at a time (`nodemgr daemon restart`:
// their instances keep running). n4 then starts its own instance and every
// node shows 4/4. The watcher outside the cluster sees the 3 first
// instances never end (the same pid throughout), and never more than 4.
func TestNetnsFlexGlobalMemberAdded(t *testing.T) {
	t.Parallel()
	began := time.Now()
	names := []string{"n1", "n2", "n3"}
	all := append(slices.Clone(names), "n4")
	q := newQuorumBedOpts(t, names, quorumOpts{nodeExtra: stopOnSplit, links: 1, joins: []string{"n4"}})
	c := q.nodes
	pids := q.flexPids(all...)
	w := watchProcs(t, pids)
	svc := strings.Replace(q.flexService(1), "flex_target = 1", `flex_target = "all"`, 1)
	svc = strings.Replace(svc, `nodes = [""]`, `nodes = ["*"]`, 1)
	createService(t, c["n1"], "app", svc)
	q.waitFor(30*time.Second, "app up on the 3 members", func() bool { return len(w.running()) == 3 })
	first := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(pids[n])
		q.ok(err)
		first[n] = strings.TrimSpace(string(b))
	}

	q.writeCluster(all)
	q.startDaemon("n4")
	for _, n := range names {
		q.restartDaemon(n)
	}
	q.converge(all, 40*time.Second)
	for _, n := range all {
		if frozen(c[n]) {
			t.Fatalf("%s froze itself during the member's addition", n)
		}
	}
	q.waitFor(30*time.Second, "n4 runs its instance", func() bool { return w.runs("n4") })
	for _, n := range all {
		q.waitFor(20*time.Second, n+" shows app up 4/4", func() bool {
			f := c[n].status().Services["app"].Flex
			return f != nil && f.Global && f.Up == 4 && f.Target == 4
		})
	}
	for _, n := range names {
		b, err := os.ReadFile(pids[n])
		q.ok(err)
		if got := strings.TrimSpace(string(b)); got != first[n] || !w.runs(n) {
			t.Fatalf("%s's instance did not keep running through the addition: pid %s, then %s (running %v)", n, first[n], got, w.runs(n))
		}
	}
	if most, when := w.peak(); most > 4 {
		t.Fatalf("the watcher saw %d instances alive at once (%s), 4 nodes", most, when)
	}
	t.Logf("a member added to a global service: %s", time.Since(began).Round(100*time.Millisecond))
}
