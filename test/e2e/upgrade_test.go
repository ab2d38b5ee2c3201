package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/test/chaos"
	"haven/test/testbed"
)

// The rolling upgrade (docs/operations.md, "Upgrading"): a cluster on the
// previous release (packaging/previous-release, built from the history)
// moved to the current code one node at a time, with the chaos suite's
// external journal as the judge of "never twice".

// previousRelease is the directory of the previous release's binaries; the
// test skips, saying why, when the history does not hold its commit.
func previousRelease(t *testing.T) string {
	t.Helper()
	dir, err := testbed.PreviousRelease()
	if errors.Is(err, testbed.ErrNoHistory) {
		t.Skipf("no previous release to upgrade from: %v", err)
	}
	if err != nil {
		t.Fatalf("building the previous release: %v", err)
	}
	return dir
}

// upgradeBed is a cluster of names on the previous release, with the
// journaled services svcs (each preferring its first node).
type upgradeBed struct {
	t     *testing.T
	nodes map[string]*node
	names []string
	j     *chaos.Cluster
	prev  string
}

func newUpgradeBed(t *testing.T, names []string, svcs []chaos.Service) *upgradeBed {
	t.Helper()
	prev := previousRelease(t)
	b := &upgradeBed{t: t, nodes: newCluster(t, names, clusterOpts{}), names: names, prev: prev}
	for _, n := range b.nodes {
		n.bins = prev
	}
	j, err := chaos.NewJournalOnly(t.TempDir(), svcs)
	if err != nil {
		t.Fatal(err)
	}
	b.j = j
	t.Cleanup(func() {
		for _, s := range svcs { // the apps are not under the roots
			for _, n := range names {
				pid := testbed.ReadPID(filepath.Join(b.nodes[n].root, "var", "services", s.Name, "main.pid"))
				if pid > 0 && testbed.Alive(pid) {
					p, _ := os.FindProcess(pid)
					p.Kill()
				}
			}
		}
	})
	for _, n := range names {
		b.nodes[n].startDaemon()
	}
	for _, s := range svcs {
		createService(t, b.nodes[names[0]], s.Name, j.ServiceConfig(s))
	}
	for _, s := range svcs {
		b.waitUpOn(s.Name, s.Nodes[0], 60*time.Second)
	}
	return b
}

// upOn: the journal and n's view agree that svc runs on want alone.
func (b *upgradeBed) upOn(svc, want string) bool {
	ev, err := chaos.ReadJournal(b.j.Journal)
	if err != nil {
		b.t.Fatal(err)
	}
	up := chaos.UpAt(ev)[svc]
	return len(up) == 1 && up[0] == want && upOnlyOn(b.nodes[want], svc, want)()
}

func (b *upgradeBed) waitUpOn(svc, want string, d time.Duration) {
	b.t.Helper()
	waitFor(b.t, d, fmt.Sprintf("%s up on %s alone (journal and status)", svc, want), func() bool { return b.upOn(svc, want) })
}

// upgrade stops n's daemon (its services keep running), puts the binaries
// of bins in place and starts it again. On the current code the node's
// guard is haven-guard, armed (the previous release has no guard).
func (b *upgradeBed) upgrade(name, bins string) {
	b.t.Helper()
	n := b.nodes[name]
	n.must("nodemgr", "daemon", "stop")
	n.bins = bins
	n.startDaemon()
	b.waitAllUp(name)
	if bins == binDir {
		waitFor(b.t, 10*time.Second, name+"'s guard, haven-guard, armed", func() bool {
			return b.guard(name).Armed && b.guardProgram(name) == "haven-guard"
		})
	}
}

// guardState is what `nodemgr guard status --format json` says of a
// running guard.
type guardState struct {
	Pid   int  `json:"pid"`
	Armed bool `json:"armed"`
}

// guard is name's running guard, as its nodemgr asks it.
func (b *upgradeBed) guard(name string) guardState {
	b.t.Helper()
	var g guardState
	if err := json.Unmarshal([]byte(b.nodes[name].must("nodemgr", "guard", "status", "--format", "json")), &g); err != nil {
		b.t.Fatal(err)
	}
	return g
}

// guardProgram is the program name's guard runs.
func (b *upgradeBed) guardProgram(name string) string {
	b.t.Helper()
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", b.guard(name).Pid))
	return filepath.Base(exe)
}

// waitAllUp: from's daemon sees every other member up.
func (b *upgradeBed) waitAllUp(from string) {
	b.t.Helper()
	waitFor(b.t, 30*time.Second, from+" sees every member up", func() bool {
		st := b.nodes[from].status()
		for _, n := range b.names {
			if n != from && st.Nodes[n].Status != "up" {
				return false
			}
		}
		return true
	})
}

// level is the feature level n reports (0: the previous release, which
// does not report one).
func (b *upgradeBed) level(name string) int {
	return b.nodes[name].status().Cluster.FeatureLevel
}

func (b *upgradeBed) daemonStatus(name string) api.DaemonStatus {
	return b.nodes[name].daemonStatus()
}

// checkNoDigestLoop: the given nodes (of the previous release, or all
// at level 2) hold the other nodes' data as they announce it: over a
// dozen messages received, they
// ask for no full copy again and again (a digest mismatch at every beat).
// A field of a node's own data that the previous release does not know
// must be tagged since:"N" (dataset/since.go) for this to hold.
func (b *upgradeBed) checkNoDigestLoop(old ...string) {
	b.t.Helper()
	for _, n := range old {
		hb := b.daemonStatus(n).HB
		waitFor(b.t, 30*time.Second, n+" receives a dozen messages", func() bool { return b.daemonStatus(n).HB.Received >= hb.Received+12 })
		if got := b.daemonStatus(n).HB.NeedsSent - hb.NeedsSent; got > 2 {
			b.t.Fatalf("%s asked for %d full copies over a dozen messages: its copy of a current node's data does not match the digest announced (a field unknown to it not tagged since, dataset/since.go?)", n, got)
		}
	}
}

// checkJournal fails on any time a service was up on two nodes.
func (b *upgradeBed) checkJournal() {
	b.t.Helper()
	ev, err := chaos.ReadJournal(b.j.Journal)
	if err != nil {
		b.t.Fatal(err)
	}
	if o := chaos.Overlaps(ev); len(o) > 0 {
		b.t.Fatalf("a service ran twice: %v\njournal:\n%s", o, readFile(b.t, b.j.Journal))
	}
}

// crash kills name's daemon and services (a host crash) and journals the
// stops of the apps it killed, as the chaos suite does.
func (b *upgradeBed) crash(name string) {
	b.t.Helper()
	ev, _ := chaos.ReadJournal(b.j.Journal)
	up := chaos.UpAt(ev)
	if _, err := testbed.Crash(b.nodes[name].root); err != nil {
		b.t.Fatal(err)
	}
	for _, s := range b.j.Services {
		pid := testbed.ReadPID(filepath.Join(b.nodes[name].root, "var", "services", s.Name, "main.pid"))
		if pid > 0 && testbed.Alive(pid) {
			p, _ := os.FindProcess(pid)
			p.Kill()
			waitFor(b.t, 5*time.Second, "the crashed app to end", func() bool { return !testbed.Alive(pid) })
		}
		if slices.Contains(up[s.Name], name) {
			uptime := strings.Fields(readFile(b.t, "/proc/uptime"))[0]
			f, err := os.OpenFile(b.j.Journal, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.t.Fatal(err)
			}
			fmt.Fprintf(f, "%s %s %s stop\n", uptime, name, s.Name)
			f.Close()
		}
	}
}

// TestRollingUpgrade: a 3-node cluster on the previous release, running
// three services, upgraded node by node while a switch, a config edit, a
// freeze and a node crash (a failover) happen. The journal shows no
// service ever up twice; the acknowledged switch, edit and freeze hold at
// the end; every service is up; the feature level stays 1 until the last
// node runs the current code, then moves to 2 on every node, and the
// state files are written at level 2.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	svcs := []chaos.Service{{Name: "svc1", Nodes: []string{"n1", "n2", "n3"}}, {Name: "svc2", Nodes: []string{"n2", "n3", "n1"}},
		{Name: "svc3", Nodes: []string{"n3", "n1", "n2"}}}
	b := newUpgradeBed(t, names, svcs)
	c := b.nodes

	// n1 first: ha keeps working with members one version apart
	if ds := b.daemonStatus("n1"); ds.Format != 0 {
		t.Fatalf("the previous release reports formats %d: is packaging/previous-release the release before this code?", ds.Format)
	}
	b.upgrade("n1", binDir)
	var ds api.DaemonStatus
	waitFor(t, 20*time.Second, "n1 says the next node may go", func() bool {
		ds = b.daemonStatus("n1")
		return ds.UpgradeSafe
	})
	if ds.Format != 2 || ds.FeatureLevel != 1 || !strings.Contains(ds.Upgrade, "n2 (reads formats up to 1), n3 (reads formats up to 1)") {
		t.Fatalf("n1 after its upgrade: %+v", ds)
	}
	if !c["n1"].status().Cluster.Compat || !c["n2"].status().Cluster.Compat {
		t.Fatal("ha disabled with members one version step apart")
	}

	if out := c["n1"].must("nodemgr", "daemon", "status"); !strings.Contains(out, "upgrade next node") || !strings.Contains(out, "yes: every member is up") {
		t.Fatalf("nodemgr daemon status does not say whether to upgrade the next node:\n%s", out)
	}
	// a switch asked of the new node, carried out by an old one
	c["n1"].must("svcmgr", "-s", "svc1", "switch", "--to", "n2", "--wait", "--time", "60s")
	b.waitUpOn("svc1", "n2", 30*time.Second)
	// a config edit on an old node, a freeze on the new one
	c["n3"].must("svcmgr", "-s", "svc2", "set", "--kw", "DEFAULT.priority=7")
	c["n1"].must("svcmgr", "-s", "svc1", "freeze", "--wait")
	waitFor(t, 20*time.Second, "the edit on every node", func() bool {
		for _, n := range names {
			if strings.TrimSpace(c[n].must("svcmgr", "-s", "svc2", "get", "--kw", "DEFAULT.priority")) != "7" {
				return false
			}
		}
		return true
	})
	b.checkNoDigestLoop("n2", "n3")
	b.checkJournal()

	// n2, which runs svc1 (frozen) and svc2
	b.upgrade("n2", binDir)
	if lv := b.level("n1"); lv != 1 {
		t.Fatalf("feature level %d with n3 on the previous release", lv)
	}

	// n3 crashes while on the previous release: svc3 fails over
	b.crash("n3")
	b.waitUpOn("svc3", "n1", 60*time.Second)
	if lv := b.level("n2"); lv != 1 {
		t.Fatalf("feature level %d while n3 (previous release) is down", lv)
	}
	if ds := b.daemonStatus("n1"); ds.UpgradeSafe || !strings.Contains(ds.Upgrade, "not every member is up (n3)") {
		t.Fatalf("n1 says it is safe to upgrade with n3 down: %+v", ds)
	}
	b.checkJournal()

	// n3 comes back on the current code: the last node
	c["n3"].bins = binDir
	c["n3"].startDaemon()
	for _, n := range names {
		waitFor(t, 30*time.Second, n+" at feature level 2", func() bool { return b.level(n) == 2 })
		if log := nodeLog(t, c[n]); !strings.Contains(log, "cluster feature level 1 -> 2") {
			t.Fatalf("%s did not log the move of the feature level", n)
		}
		if st := readFile(t, filepath.Join(c[n].root, "var", "state.json")); !strings.Contains(st, `"requires_feature_level": 2`) {
			waitFor(t, 10*time.Second, n+"'s state written at level 2", func() bool {
				return strings.Contains(readFile(t, filepath.Join(c[n].root, "var", "state.json")), `"requires_feature_level": 2`)
			})
		}
	}
	b.waitAllUp("n3")

	// what was acknowledged held; every service is up, once
	for _, n := range names {
		st := c[n].status()
		if !st.Cluster.Compat {
			t.Fatalf("%s: ha disabled after the upgrade", n)
		}
		if f := st.Services["svc1"].Frozen; f != "frozen" {
			t.Fatalf("%s: svc1 is %s after the upgrade, frozen before", n, f)
		}
		if p := strings.TrimSpace(c[n].must("svcmgr", "-s", "svc2", "get", "--kw", "DEFAULT.priority")); p != "7" {
			t.Fatalf("%s: svc2 priority %s after the upgrade, 7 before", n, p)
		}
	}
	c["n3"].must("svcmgr", "-s", "svc1", "thaw", "--wait")
	b.waitUpOn("svc1", "n2", 10*time.Second)
	b.waitUpOn("svc2", "n2", 10*time.Second)
	waitFor(t, 30*time.Second, "svc3 up on one node", func() bool { return b.upOn("svc3", "n1") || b.upOn("svc3", "n3") })
	b.checkJournal()
	// at level 2 the beats carry the digest kept per entry: every copy
	// matches it, with deltas (the thaw, the starts) merged meanwhile
	b.checkNoDigestLoop(names...)
}

// TestDowngrade: a node taken back to the previous release while the
// feature level is still 1 rejoins and works (a switch to it); once the
// level moved to 2, the previous release refuses to start on the node's
// state, naming the file and the key it does not know, and the current
// code starts again on it.
func TestDowngrade(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	b := newUpgradeBed(t, names, []chaos.Service{{Name: "web", Nodes: []string{"n1", "n2"}}})
	c := b.nodes

	b.upgrade("n2", binDir)
	if lv := b.level("n2"); lv != 1 {
		t.Fatalf("level %d with n1 on the previous release", lv)
	}
	b.checkNoDigestLoop("n1")
	b.upgrade("n2", b.prev) // back while the level is 1
	c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n2", "--wait", "--time", "60s")
	b.waitUpOn("web", "n2", 30*time.Second)

	b.upgrade("n2", binDir)
	b.upgrade("n1", binDir)
	for _, n := range names {
		waitFor(t, 30*time.Second, n+" at feature level 2", func() bool { return b.level(n) == 2 })
	}
	state := filepath.Join(c["n2"].root, "var", "state.json")
	waitFor(t, 10*time.Second, "n2's state written at level 2", func() bool {
		return strings.Contains(readFile(t, state), `"requires_feature_level": 2`)
	})
	c["n2"].must("nodemgr", "daemon", "stop")
	c["n2"].bins = b.prev
	r := c["n2"].run("nodemgr", "daemon", "start")
	if r.Code == 0 {
		t.Fatalf("the previous release started on a state of feature level 2:\n%s", r)
	}
	if msg := r.Out + r.Err; !strings.Contains(msg, state) || !strings.Contains(msg, "requires_feature_level") {
		t.Fatalf("the previous release's refusal does not name the file and the key:\n%s", r)
	}
	t.Logf("the previous release refuses: %s", strings.TrimSpace(r.Out+r.Err))
	if pid := testbed.DaemonPID(c["n2"].root); pid > 0 && testbed.Alive(pid) {
		t.Fatal("the previous release's daemon runs")
	}
	c["n2"].bins = binDir
	c["n2"].startDaemon()
	b.waitAllUp("n2")
	b.waitUpOn("web", "n2", 30*time.Second)
	b.checkJournal()
}

// TestVersionsTooFarApart: a member announcing a release two format
// versions ahead (HAVEN_FORMAT=4 next to this code's 2) disables ha on
// every node, with the reason in the log line; back within one step, ha
// comes back. The contract's compat lines are those of a compat mismatch.
func TestVersionsTooFarApart(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{})
	c["n1"].startDaemon()
	// the daemon started by this start inherits its environment
	if r := c["n2"].runEnv([]string{"HAVEN_FORMAT=4"}, "nodemgr", "daemon", "start"); r.Code != 0 {
		t.Fatalf("daemon start with HAVEN_FORMAT=4: %s", r)
	}
	const off = "cluster members run incompatible versions. disable ha orchestration (n2 reads formats up to 4, more than one version step from this node's 2)"
	const on = "cluster members run compatible versions. enable ha orchestration"
	waitFor(t, 10*time.Second, "n1 logs the versions too far apart", func() bool { return strings.Contains(nodeLog(t, c["n1"]), off) })
	if c["n1"].status().Cluster.Compat {
		t.Fatal("cluster.compat is true with n2 two versions ahead")
	}
	var ds api.DaemonStatus
	if err := json.Unmarshal([]byte(c["n1"].must("nodemgr", "daemon", "status", "--format", "json")), &ds); err != nil {
		t.Fatal(err)
	}
	if ds.UpgradeSafe || !strings.HasPrefix(ds.Upgrade, "no: n2 reads formats up to 4") {
		t.Fatalf("daemon status: %+v", ds)
	}
	c["n2"].must("nodemgr", "daemon", "stop")
	c["n2"].startDaemon()
	waitFor(t, 10*time.Second, "n1 logs the recovery", func() bool { return strings.Contains(nodeLog(t, c["n1"]), on) })
}
