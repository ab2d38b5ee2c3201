package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
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
// first heartbeat, then ready_period 2s of fresh, stable data): n2's, the
// latest start (the greater fencing token: both instances are Haven's and
// complete); n1 stops its own. Checked from the app processes.
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
	waitFor(t, 10*time.Second, "exactly one web app process (n2's) within 10s of the heal", func() bool {
		return slices.Equal(runningOn(c, "web"), []string{"n2"})
	})
	t.Logf("heal: web down to one instance (n2) %s after the link came back (hb.interval 1s + ready_period 2s + the stop)",
		time.Since(restored).Round(10*time.Millisecond))
	// and it stays so: nothing starts it again elsewhere
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if r := runningOn(c, "web"); !slices.Equal(r, []string{"n2"}) {
			t.Fatalf("web's app runs on %v after the resolution, want n2 only", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// n1, which stopped its instance, logs the resolution; n2, the keeper,
	// logs the split it saw, and the resolution too unless n1's stop came
	// before n2's own settle time ended (each node waits for fresh data
	// from its own moment: under load n1's wait may end first, then n2
	// sees one instance again and logs the end)
	resolved := "split brain: up on n1,n2; multiple_active = stop_others keeps n2 (the latest start"
	waitFor(t, 5*time.Second, "n1 logs the resolution", func() bool { return strings.Contains(nodeLog(t, c["n1"]), resolved) })
	waitFor(t, 5*time.Second, "n2 logs the split and its end or resolution", func() bool {
		l := nodeLog(t, c["n2"])
		return strings.Contains(l, "service up on more than one node: n1,n2") &&
			(strings.Contains(l, resolved) || strings.Contains(l, "service no longer up on more than one node"))
	})
	// the journal: n2's start during the split had a greater token than
	// n1's, and n1's stop was given n1's token
	j := readJournal(t, journal)
	if len(j) != 3 || j[0].action != "start" || j[0].node != "n1" || j[1].action != "start" || j[1].node != "n2" ||
		j[2].action != "stop" || j[2].node != "n1" || j[1].token <= j[0].token || j[2].token != j[0].token {
		t.Fatalf("journal %+v, want start n1 T1, start n2 T2 > T1, stop n1 T1", j)
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

// After a crash of the node running web (ip + app), web fails over to n2;
// on n1 the app is started by something other than Haven before its
// daemon comes back (the host's boot: Debian starts nginx when it is
// installed enabled), without its address. n1's instance is then up on
// its app, down on its address (warn), local expect started and fencing
// token 1 from before the crash. multiple_active = stop_others keeps n2's
// complete instance (token 2) and n1 stops its copy: the VIP stays on n2
// and answers. The same holds when n1's pid file names an unrelated
// process (a recycled pid): its check says up, the rest is down.
func TestNetnsMultipleActiveForeignCopyAfterCrash(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	b := vipBed(t, `["n1", "n2", "n3"]`)
	c := b.nodes

	// the crash: n1's daemon and processes; its host loses the address
	if _, err := testbed.Crash(c["n1"].root); err != nil {
		t.Fatal(err)
	}
	ipOK(b, "-n", b.bed.NS["n1"], "addr", "del", vip+"/24", "dev", bedDev)
	waitFor(t, 20*time.Second, "web failed over to n2 (seen from n3)", upOnlyOn(c["n3"], "web", "n2"))
	waitFor(t, 5*time.Second, vip+" in n2's namespace", func() bool { return b.hasAddr("n2", vip) })

	// the boot of n1 starts the app behind Haven's back, without the VIP
	foreign := exec.Command("sleep", "100000")
	foreign.Dir = filepath.Join(c["n1"].root, "var", "services", "web")
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { foreign.Process.Kill(); foreign.Wait() })
	writeFile(t, filepath.Join(foreign.Dir, "main.pid"), strconv.Itoa(foreign.Process.Pid)+"\n")
	back := time.Now()
	b.startDaemon("n1")

	waitFor(t, 20*time.Second, "n1's copy of web stopped, n2's kept", func() bool {
		return !appRuns(c["n1"], "web") && appRuns(c["n2"], "web")
	})
	t.Logf("n1 back: its foreign copy stopped %s after its daemon started (rejoin, then ready_period 2s)", time.Since(back).Round(10*time.Millisecond))
	if h := b.holders(vip); !slices.Equal(h, []string{"n2"}) {
		t.Fatalf("%s held by %v, want n2 only", vip, h)
	}
	waitFor(t, 5*time.Second, vip+" answers ping from n3", func() bool { return b.ping("n3", vip, 300*time.Millisecond) })
	waitFor(t, 5*time.Second, "web up on n2 only, seen from n1", upOnlyOn(c["n1"], "web", "n2"))
	// n1, whose copy was stopped, says why; n2 says it too unless n1's
	// stop ended the situation before n2's own wait did (under load)
	if l := nodeLog(t, c["n1"]); !strings.Contains(l, "multiple_active = stop_others keeps n2 (complete; n1's instance is warn (ip#vip down))") {
		t.Fatalf("n1 does not log why n2's instance was kept:\n%s", l)
	}
	// and it stays so
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if appRuns(c["n1"], "web") || !appRuns(c["n2"], "web") || !slices.Equal(b.holders(vip), []string{"n2"}) {
			t.Fatalf("after the resolution: app on n1 %v, on n2 %v, %s held by %v; want n2 alone", appRuns(c["n1"], "web"), appRuns(c["n2"], "web"), vip, b.holders(vip))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// After a split heals, the node left running web announces its VIP again:
// a client whose neighbour entry holds the stopped node's MAC address (a
// client on n1's side of the split) reaches the VIP at once, instead of
// when its entry expires. n3 is the client (web runs on n1 and n2 only);
// its entry is read without sending it any traffic.
func TestNetnsMultipleActiveKeeperAnnounces(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	b := vipBed(t, `["n1", "n2"]`)
	c := b.nodes

	b.cut("n1")
	waitFor(t, 20*time.Second, vip+" in n2's namespace (split, quorum off)", func() bool { return b.hasAddr("n2", vip) })
	// the announcements of n2's start end 5 s after it (announce.go): let
	// them pass, so that only an announce after the heal can move n3's entry
	time.Sleep(6 * time.Second)
	macN1, macN2 := b.mac("n1"), b.mac("n2")
	ipOK(b, "-n", b.bed.NS["n3"], "neigh", "replace", vip, "lladdr", macN1, "dev", bedDev, "nud", "stale")
	if got := b.neighMAC("n3", vip); got != macN1 {
		t.Fatalf("n3's entry for %s is %q, want n1's %s as planted", vip, got, macN1)
	}

	b.restore("n1")
	// n1 drops the address (n2's start is the latest: n2 is kept), then
	// n3's entry must move to n2's MAC by itself. Both are watched until
	// n1 dropped it and n3's entry is n2's: n2 may announce while n1's stop
	// still runs (the loop ended at that move, and the test said that n1
	// still held the address)
	var dropped, moved time.Time
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && (dropped.IsZero() || moved.IsZero()); time.Sleep(10 * time.Millisecond) {
		if dropped.IsZero() && !b.hasAddr("n1", vip) {
			dropped = time.Now()
		}
		// since when n3's entry has been n2's
		if b.neighMAC("n3", vip) != macN2 {
			moved = time.Time{}
		} else if moved.IsZero() {
			moved = time.Now()
		}
	}
	switch {
	case dropped.IsZero():
		t.Fatalf("n1 still holds %s 15 s after the heal, want n2 kept (its start is the latest)", vip)
	case moved.IsZero():
		t.Fatalf("n3's entry for %s still %s, not n2's %s: n2 did not announce it again after n1 dropped it", vip, b.neighMAC("n3", vip), macN2)
	case moved.Sub(dropped) > 3*time.Second:
		t.Fatalf("n3's entry for %s moved to n2 %s after n1 dropped it, want within 3 s (the announce follows n1's stop)", vip, moved.Sub(dropped))
	}
	if h := b.holders(vip); !slices.Equal(h, []string{"n2"}) {
		t.Fatalf("%s held by %v, want n2 alone", vip, h)
	}
	t.Logf("heal: n3's neighbour entry for %s moved to n2 %s after n1 dropped the address", vip, moved.Sub(dropped).Round(time.Millisecond))
	if l := nodeLog(t, c["n2"]); !strings.Contains(l, "addresses announced again") {
		t.Fatalf("n2 does not log the announce:\n%s", l)
	}
	waitFor(t, 5*time.Second, vip+" answers ping from n3", func() bool { return b.ping("n3", vip, 300*time.Millisecond) })
}

// The instance kept is completed once the others stopped: n1 runs web
// (Haven's start) but lost its VIP (removed by hand: warn, the ip resource
// is not monitored); n2, which never ran web, runs a copy started behind
// Haven's back, with the VIP. n1's instance is kept (Haven started it), n2
// stops its copy, then n1 starts its instance again: the VIP comes back on
// n1 (the app, already up, is not started twice) and is announced.
func TestNetnsMultipleActiveKeptCompleted(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	b := vipBed(t, `["n1", "n2", "n3"]`)
	c := b.nodes
	appPid := readFile(t, filepath.Join(c["n1"].root, "var", "services", "web", "main.pid"))

	ipOK(b, "-n", b.bed.NS["n1"], "addr", "del", vip+"/24", "dev", bedDev)
	c["n1"].must("svcmgr", "-s", "web", "print", "status", "-r") // checked now (ip#vip is not monitored)
	waitFor(t, 10*time.Second, "n1's web warn", func() bool { return c["n1"].instance("web").Avail == dataset.StatusWarn })
	// a copy on n2, behind Haven's back: its app and the VIP
	foreign := exec.Command("sleep", "100000")
	foreign.Dir = filepath.Join(c["n2"].root, "var", "services", "web")
	if err := os.MkdirAll(foreign.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { foreign.Process.Kill(); foreign.Wait() })
	writeFile(t, filepath.Join(foreign.Dir, "main.pid"), strconv.Itoa(foreign.Process.Pid)+"\n")
	ipOK(b, "-n", b.bed.NS["n2"], "addr", "add", vip+"/24", "dev", bedDev)
	c["n2"].must("svcmgr", "-s", "web", "print", "status", "-r") // n2's copy is complete

	waitFor(t, 20*time.Second, vip+" back on n1 alone, n2's copy stopped", func() bool {
		return slices.Equal(b.holders(vip), []string{"n1"}) && !appRuns(c["n2"], "web") && appRuns(c["n1"], "web")
	})
	if got := readFile(t, filepath.Join(c["n1"].root, "var", "services", "web", "main.pid")); got != appPid {
		t.Fatalf("n1's app pid %q, was %q: the completion started the app again", got, appPid)
	}
	waitFor(t, 10*time.Second, "web up on n1 only, seen from n3", func() bool {
		return upOnlyOn(c["n3"], "web", "n1")() && c["n3"].status().Services["web"].Avail == dataset.StatusUp
	})
	if l := nodeLog(t, c["n1"]); !strings.Contains(l, "kept here, completing the instance (ip#vip down)") {
		t.Fatalf("n1 does not log the completion:\n%s", l)
	}
	waitFor(t, 5*time.Second, "n3 resolves "+vip+" to n1", func() bool {
		return b.ping("n3", vip, 300*time.Millisecond) && b.neighMAC("n3", vip) == b.mac("n1")
	})
}

// vipBed starts a bed of three nodes (n1, n2, n3) with web, a VIP and an
// app on nodes (a TOML list whose first is n1), and returns once web runs
// on n1 (seen from n3) with its VIP.
func vipBed(t *testing.T, nodes string) *netBed {
	t.Helper()
	names := []string{"n1", "n2", "n3"}
	b := newNetBed(t, names, `rejoin_grace_period = "10s"`)
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 15*time.Second)
	createService(t, b.nodes["n1"], "web", vipService(nodes))
	waitFor(t, 15*time.Second, "web up on n1 (seen from n3)", upOnlyOn(b.nodes["n3"], "web", "n1"))
	waitFor(t, 5*time.Second, vip+" in n1's namespace", func() bool { return b.hasAddr("n1", vip) })
	return b
}
