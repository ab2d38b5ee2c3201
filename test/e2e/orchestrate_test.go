package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

func createService(t *testing.T, n *node, name, content string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), name+".toml")
	writeFile(t, cfg, content)
	n.must("svcmgr", "-s", name, "create", "--config", cfg)
}

// where returns the nodes on which svc is up, as seen from n.
func where(n *node, svc string) []string {
	var out []string
	st := n.status()
	for node, i := range st.Services[svc].Instances {
		if i.Avail == dataset.StatusUp {
			out = append(out, node)
		}
	}
	return out
}

func upOnlyOn(n *node, svc, want string) func() bool {
	return func() bool {
		w := where(n, svc)
		return len(w) == 1 && w[0] == want
	}
}

func startCluster(t *testing.T, names []string, o clusterOpts) map[string]*node {
	t.Helper()
	c := newCluster(t, names, o)
	startNodes(t, c, names)
	return c
}

// startNodes starts the daemons of names in c and waits until every one
// sees every other up and left rejoin.
func startNodes(t *testing.T, c map[string]*node, names []string) {
	t.Helper()
	for _, n := range names {
		c[n].startDaemon()
	}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				waitFor(t, 10*time.Second, a+" sees "+b+" up", func() bool { return peerStatus(c[a], b) == dataset.NodeUp })
			}
		}
		waitFor(t, 10*time.Second, a+" out of rejoin", func() bool { return c[a].status().Nodes[a].Monitor == dataset.NodeIdle })
	}
}

// An ha service starts on the placement leader after the ready window, and
// fails over to the next node after a kill -9 of the owner's daemon host.
func TestHAStartAndFailoverAfterCrash(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2", "n3"]`, ""))
	waitFor(t, 10*time.Second, "web up on n1 (the leader)", upOnlyOn(c["n2"], "web", "n1"))

	// the crash: the daemon of n1 and the service processes it runs
	killed := time.Now()
	syscallKill(daemonPid(t, c["n1"]))
	killService(t, c["n1"], "web")
	waitFor(t, 15*time.Second, "web failed over to n2", upOnlyOn(c["n3"], "web", "n2"))
	t.Logf("failover after the crash took %s (hb.timeout 3s + ready 2s)", time.Since(killed).Round(10*time.Millisecond))
	if w := where(c["n2"], "web"); len(w) != 1 {
		t.Fatalf("web up on %v after the failover, want exactly one node", w)
	}
}

// Admin actions with --wait: stop, start, switch, takeover, giveback.
func TestAdminActionsWithWait(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := startCluster(t, names, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 10*time.Second, "web up on n1", upOnlyOn(c["n1"], "web", "n1"))

	c["n2"].must("svcmgr", "-s", "web", "stop", "--wait", "--time", "20s")
	if w := where(c["n2"], "web"); len(w) != 0 {
		t.Fatalf("web up on %v after stop --wait", w)
	}
	if st := c["n1"].status().Services["web"]; st.Frozen != "frozen" {
		t.Fatalf("after stop, service frozen = %q, want frozen (it stays down)", st.Frozen)
	}

	c["n2"].must("svcmgr", "-s", "web", "start", "--wait", "--time", "20s")
	if !upOnlyOn(c["n2"], "web", "n1")() {
		t.Fatalf("after start --wait web is up on %v, want n1 (the leader)", where(c["n2"], "web"))
	}

	c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n2", "--wait", "--time", "20s")
	if !upOnlyOn(c["n1"], "web", "n2")() {
		t.Fatalf("after switch --to n2 web is up on %v", where(c["n1"], "web"))
	}
	c["n1"].must("svcmgr", "-s", "web", "takeover", "--wait", "--time", "20s")
	if !upOnlyOn(c["n2"], "web", "n1")() {
		t.Fatalf("after takeover on n1 web is up on %v", where(c["n2"], "web"))
	}
	c["n2"].must("svcmgr", "-s", "web", "switch", "--to", "n2", "--wait", "--time", "20s")
	c["n2"].must("svcmgr", "-s", "web", "giveback", "--wait", "--time", "20s")
	if !upOnlyOn(c["n2"], "web", "n1")() {
		t.Fatalf("after giveback web is up on %v, want n1", where(c["n2"], "web"))
	}
	st := c["n2"].status().Services["web"]
	if st.GlobalExpect != dataset.ExpectNone || st.Frozen != "thawed" {
		t.Fatalf("after the moves: global_expect %q frozen %q, want none, thawed", st.GlobalExpect, st.Frozen)
	}
	// a switch to a node that is not a candidate is refused as bad usage
	if r := c["n1"].run("svcmgr", "-s", "web", "switch", "--to", "n9"); r.Code != 2 {
		t.Fatalf("switch --to n9: want exit 2, got %s", r)
	}
}

// A failing start leaves "start failed" and the next node takes over; clear
// resets the state.
func TestStartFailedThenNextNodeThenClear(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := startCluster(t, names, clusterOpts{})
	// the start fails on n1 only
	svc := testbed.HAService(`["n1", "n2"]`, "")
	svc = strings.Replace(svc, "start = \"sh -c '", "start = \"sh -c 'test {nodename} = n1 && exit 1; ", 1)
	createService(t, c["n1"], "web", svc)
	waitFor(t, 15*time.Second, "web up on n2 after the failure on n1", upOnlyOn(c["n1"], "web", "n2"))
	// start failed on n1 is cleared once the service is up somewhere
	waitFor(t, 5*time.Second, "n1 auto-clears start failed", func() bool {
		return c["n1"].instance("web").Monitor.State == dataset.Idle
	})
	if n1 := c["n2"].status().Services["web"].Instances["n1"]; n1.Avail != dataset.StatusDown {
		t.Fatalf("web on n1 is %s after its failed start, want down", n1.Avail)
	}
}

// Constraints keep a service off the nodes that do not satisfy them.
func TestConstraintsPlaceTheService(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{})
	// label n2 as the only DEV node
	for _, n := range names {
		env := "PRD"
		if n == "n2" {
			env = "DEV"
		}
		p := filepath.Join(c[n].root, "etc", "node.toml")
		writeFile(t, p, strings.Replace(readFile(t, p), "[node]\n", fmt.Sprintf("[node]\nlabels = { env = %q }\n", env), 1))
		c[n].startDaemon()
	}
	waitFor(t, 10*time.Second, "n1 sees n2", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })
	createService(t, c["n1"], "devsvc", testbed.HAService(`["n1", "n2"]`, `constraints = 'node.env == "DEV"'`))
	waitFor(t, 15*time.Second, "devsvc up on n2, the DEV node", upOnlyOn(c["n1"], "devsvc", "n2"))
	if f := c["n1"].status().Services["devsvc"].Instances["n1"].Flags; !strings.Contains(f, "C") {
		t.Fatalf("n1 flags %q, want C (constraints violation)", f)
	}
}

// killService kills the process of a testbed.PidService instance, as a crash of
// its node would.
func killService(t *testing.T, n *node, svc string) {
	t.Helper()
	var pid int
	fmt.Sscan(readFile(t, filepath.Join(n.root, "var", "services", svc, "main.pid")), &pid)
	if pid > 0 {
		syscallKill(pid)
	}
}

// When the start fails on every node, every instance stays "start failed"
// and nothing retries; once the cause is fixed, clear lets the leader start.
func TestStartFailedEverywhereThenClear(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := startCluster(t, names, clusterOpts{})
	ok := filepath.Join(t.TempDir(), "fixed")
	svc := testbed.HAService(`["n1", "n2"]`, "")
	svc = strings.Replace(svc, "start = \"sh -c '", "start = \"sh -c 'test -f "+ok+" || exit 1; ", 1)
	createService(t, c["n1"], "web", svc)
	failed := func(node string) func() bool {
		return func() bool {
			return c["n1"].status().Services["web"].Instances[node].Monitor.State == dataset.StartFailed
		}
	}
	waitFor(t, 15*time.Second, "start failed on n1", failed("n1"))
	waitFor(t, 15*time.Second, "start failed on n2", failed("n2"))
	if w := where(c["n1"], "web"); len(w) != 0 {
		t.Fatalf("web up on %v although every start failed", w)
	}
	writeFile(t, ok, "")
	c["n2"].must("svcmgr", "-s", "web", "clear")
	waitFor(t, 15*time.Second, "web up on n1 after the clear", upOnlyOn(c["n2"], "web", "n1"))
	for _, n := range names {
		if s := c["n1"].status().Services["web"].Instances[n].Monitor.State; s != dataset.Idle {
			t.Fatalf("%s monitor %q after the clear and start, want idle", n, s)
		}
	}
}

// Hard anti-affinity keeps two services apart, hard affinity keeps them
// together, even when the placement policy would say otherwise.
func TestAffinityPlacesServices(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := startCluster(t, names, clusterOpts{})
	createService(t, c["n1"], "db", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 15*time.Second, "db up on n1", upOnlyOn(c["n2"], "db", "n1"))
	// batch prefers n1 by nodes order, but must not run beside db
	createService(t, c["n1"], "batch", testbed.HAService(`["n1", "n2"]`, `hard_anti_affinity = ["db"]`))
	waitFor(t, 15*time.Second, "batch up on n2, away from db", upOnlyOn(c["n1"], "batch", "n2"))
	// web prefers n2 by nodes order, but must run beside db
	createService(t, c["n1"], "web", testbed.HAService(`["n2", "n1"]`, `hard_affinity = ["db"]`))
	waitFor(t, 15*time.Second, "web up on n1, beside db", upOnlyOn(c["n2"], "web", "n1"))
	if f := c["n2"].status().Services["web"].Instances["n2"].Flags; !strings.Contains(f, "A") {
		t.Fatalf("web's flags on n2 = %q, want A (affinity violation there)", f)
	}

	// what the cluster's configs prove wrong is refused (exit 2, the file,
	// the line and the key): a hard affinity to no service, a cycle of
	// parents closed by a set
	bad := filepath.Join(t.TempDir(), "lonely.toml")
	writeFile(t, bad, testbed.HAService(`["n1", "n2"]`, `hard_affinity = ["nosuchsvc"]`))
	if r := c["n2"].run("svcmgr", "-s", "lonely", "create", "--config", bad); r.Code != 2 ||
		!strings.Contains(r.Err, "lonely.toml:5: DEFAULT.hard_affinity: no service nosuchsvc in the cluster") {
		t.Fatalf("create with hard_affinity = [\"nosuchsvc\"]: %s, want exit 2 naming lonely.toml:5 DEFAULT.hard_affinity", r)
	}
	child := filepath.Join(t.TempDir(), "child.toml")
	writeFile(t, child, strings.Replace(testbed.PidService, "[DEFAULT]", "[DEFAULT]\nparents = [\"db\"]", 1))
	c["n1"].must("svcmgr", "-s", "child", "create", "--config", child)
	waitFor(t, 10*time.Second, "child's config on n2", func() bool { _, ok := c["n2"].status().Services["child"]; return ok })
	if r := c["n2"].run("svcmgr", "-s", "db", "set", "--kw", "parents=child"); r.Code != 2 ||
		!strings.Contains(r.Err, "DEFAULT.parents: a cycle of parents: db -> child -> db") {
		t.Fatalf("a 2-cycle of parents: %s, want exit 2 naming DEFAULT.parents", r)
	}
	if p := c["n1"].status().Services["db"]; p.Avail != dataset.StatusUp {
		t.Fatalf("db after the refused set: %+v", p)
	}
}

// nodemgr drain freezes the node and stops its instances: the service moves
// to the next node; a thaw makes the node a candidate again.
func TestDrainMovesServicesAway(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := startCluster(t, names, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 15*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	c["n1"].must("nodemgr", "drain")
	if st := c["n1"].status(); !st.Nodes["n1"].Frozen || st.Services["web"].Instances["n1"].Avail != dataset.StatusDown {
		t.Fatalf("after drain: n1 frozen %v, web on n1 %s; want frozen and down",
			st.Nodes["n1"].Frozen, st.Services["web"].Instances["n1"].Avail)
	}
	waitFor(t, 15*time.Second, "web failed over to n2", upOnlyOn(c["n1"], "web", "n2"))
	c["n1"].must("nodemgr", "thaw")
	waitFor(t, 5*time.Second, "n1 thawed as seen by n2", func() bool { return !c["n2"].status().Nodes["n1"].Frozen })
	if !upOnlyOn(c["n2"], "web", "n2")() {
		t.Fatalf("a thaw moved web: up on %v, want n2 (nothing moves on a thaw)", where(c["n2"], "web"))
	}
}
