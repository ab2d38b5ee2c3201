package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/test/testbed"
)

// journalService is an ha service on nodes (a TOML list) whose app
// appends "<action> <node> <HAVEN_FENCING_TOKEN>" to journal (a file on
// the host, outside every namespace) at each start and stop, and runs a
// sleep whose pid is in {var}/main.pid; extra goes in [DEFAULT].
func journalService(nodes, journal, extra string) string {
	return fmt.Sprintf(`[DEFAULT]
orchestrate = "ha"
nodes = %s
%s

[app.main]
start = "sh -c 'echo start {nodename} $HAVEN_FENCING_TOKEN >> %s; sleep 100000 >/dev/null 2>&1 & echo $! > {var}/main.pid'"
stop  = "sh -c 'echo stop {nodename} $HAVEN_FENCING_TOKEN >> %s; kill $(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 $(cat {var}/main.pid) 2>/dev/null'"
monitor = true
timeout = "10s"
`, nodes, extra, journal, journal)
}

// appRuns reports whether the app's process of svc runs on node n: the
// pid its start recorded is alive (asked of the process, not the cluster).
func appRuns(n *node, svc string) bool {
	b, err := os.ReadFile(filepath.Join(n.root, "var", "services", svc, "main.pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && pid > 0 && syscall.Kill(pid, 0) == nil
}

// runningOn returns the nodes whose app process of svc runs.
func runningOn(c map[string]*node, svc string) []string {
	var out []string
	for name, n := range c {
		if appRuns(n, svc) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// journalEntry is one line of a journalService's journal.
type journalEntry struct {
	action, node string
	token        uint64
}

func readJournal(t *testing.T, path string) []journalEntry {
	t.Helper()
	var out []journalEntry
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("journal line %q: want <action> <node> <token> (HAVEN_FENCING_TOKEN unset?)", l)
		}
		tok, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			t.Fatalf("journal line %q: token: %v", l, err)
		}
		out = append(out, journalEntry{f[0], f[1], tok})
	}
	return out
}

// With quorum off, cutting the owner's link makes the other side start the
// service: it runs twice. Once the link is back, multiple_active =
// stop_others (the default) leaves exactly one instance within 10 s (the
// first heartbeat, then ready_period 2s of fresh, stable data): n1's, first
// in the nodes order; n2 stops its own. Checked from the app processes.
func TestNetnsMultipleActiveHealLeavesOne(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	names := []string{"n1", "n2"}
	b := newNetBed(t, names, `rejoin_grace_period = "10s"`)
	c := b.nodes
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 15*time.Second)
	journal := filepath.Join(t.TempDir(), "journal")
	createService(t, c["n1"], "web", journalService(`["n1", "n2"]`, journal, ""))
	waitFor(t, 15*time.Second, "web's app running on n1 only", func() bool { return slices.Equal(runningOn(c, "web"), []string{"n1"}) })

	b.cut("n1")
	waitFor(t, 20*time.Second, "web's app running on n1 and n2 (split, quorum off)", func() bool {
		return slices.Equal(runningOn(c, "web"), []string{"n1", "n2"})
	})
	restored := time.Now()
	b.restore("n1")
	waitFor(t, 10*time.Second, "exactly one web app process (n1's) within 10s of the heal", func() bool {
		return slices.Equal(runningOn(c, "web"), []string{"n1"})
	})
	t.Logf("heal: web down to one instance (n1) %s after the link came back (hb.interval 1s + ready_period 2s + the stop)",
		time.Since(restored).Round(10*time.Millisecond))
	// and it stays so: nothing starts it again elsewhere
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if r := runningOn(c, "web"); !slices.Equal(r, []string{"n1"}) {
			t.Fatalf("web's app runs on %v after the resolution, want n1 only", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// n2, which stopped its instance, logs the resolution; n1, the keeper,
	// logs the split it saw, and the resolution too unless n2's stop came
	// before n1's own settle time ended (each node waits for fresh data
	// from its own moment: under load n2's wait may end first, then n1
	// sees one instance again and logs the end)
	resolved := "split brain: up on n1,n2; multiple_active = stop_others keeps n1"
	waitFor(t, 5*time.Second, "n2 logs the resolution", func() bool { return strings.Contains(nodeLog(t, c["n2"]), resolved) })
	waitFor(t, 5*time.Second, "n1 logs the split and its end or resolution", func() bool {
		l := nodeLog(t, c["n1"])
		return strings.Contains(l, "service up on more than one node: n1,n2") &&
			(strings.Contains(l, resolved) || strings.Contains(l, "service no longer up on more than one node"))
	})
	// the journal: n2's start during the split had a greater token than
	// n1's, and n2's stop was given n2's token
	j := readJournal(t, journal)
	if len(j) != 3 || j[0].action != "start" || j[0].node != "n1" || j[1].action != "start" || j[1].node != "n2" ||
		j[2].action != "stop" || j[2].node != "n2" || j[1].token <= j[0].token || j[2].token != j[1].token {
		t.Fatalf("journal %+v, want start n1 T1, start n2 T2 > T1, stop n2 T2", j)
	}
}

// Every start gets HAVEN_FENCING_TOKEN, strictly greater than every token
// used before for the service, across a crash failover, switches and a
// restart of every daemon (the token is on each node's disk); a stop gets
// the token of the instance it stops. Read from the app's own journal.
func TestFencingTokenAcrossFailoverAndRestart(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := startCluster(t, names, clusterOpts{})
	journal := filepath.Join(t.TempDir(), "journal")
	createService(t, c["n1"], "web", journalService(`["n1", "n2"]`, journal, ""))
	waitFor(t, 15*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))

	// a crash of n1: n2 fails it over
	if _, err := testbed.Crash(c["n1"].root); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "web failed over to n2", upOnlyOn(c["n2"], "web", "n2"))
	c["n1"].startDaemon()
	waitFor(t, 20*time.Second, "n1 back and idle", func() bool {
		st := c["n1"].status()
		return st.Nodes["n1"].Monitor == "idle" && st.Nodes["n2"].Status == "up"
	})
	c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n1", "--wait", "--time", "30s")

	// every daemon restarts (the services keep running): the tokens are on disk
	for _, n := range names {
		c[n].must("nodemgr", "daemon", "stop")
	}
	for _, n := range names {
		c[n].startDaemon()
	}
	waitFor(t, 20*time.Second, "n2 sees web up on n1 after the restarts", upOnlyOn(c["n2"], "web", "n1"))
	c["n2"].must("svcmgr", "-s", "web", "switch", "--to", "n2", "--wait", "--time", "30s")

	j := readJournal(t, journal)
	var starts []journalEntry
	last := map[string]uint64{} // the token of each node's running instance
	for _, e := range j {
		switch e.action {
		case "start":
			if len(starts) > 0 && e.token <= starts[len(starts)-1].token {
				t.Fatalf("start on %s got token %d after %d: not strictly increasing (journal %+v)", e.node, e.token, starts[len(starts)-1].token, j)
			}
			starts = append(starts, e)
			last[e.node] = e.token
		case "stop":
			if e.token != last[e.node] {
				t.Fatalf("stop on %s got token %d, want its instance's %d (journal %+v)", e.node, e.token, last[e.node], j)
			}
		}
	}
	var where []string
	for _, s := range starts {
		where = append(where, fmt.Sprintf("%s:%d", s.node, s.token))
	}
	if got := strings.Join(where, " "); got != "n1:1 n2:2 n1:3 n2:4" {
		t.Fatalf("starts %s, want n1:1 n2:2 n1:3 n2:4 (each node its own numbers, each above every earlier one)", got)
	}
	// the status shows the running instance's token
	if tok := c["n1"].status().Services["web"].Instances["n2"].FencingToken; tok != 4 {
		t.Fatalf("n1's status says n2's token is %d, want 4", tok)
	}
	if out := c["n2"].must("svcmgr", "-s", "web", "print", "status"); !strings.Contains(out, "token 4") {
		t.Fatalf("print status does not show the token:\n%s", out)
	}
}
