package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

// Split brain with cluster.quorum on, in network namespaces.
// The test app's start and stop append `<uptime> <node> <svc> start|stop`
// to one journal file on the host, outside every namespace (the format and
// the overlap check of chaos/journal.go): a start line before the app
// process starts, a stop line once it is gone. The journal is the external
// observer: no two up intervals of the failover service may overlap.

// quorumApp writes the start, stop and check scripts of the journaled test
// app into dir and returns the [app.main] section of a service.
func quorumApp(t *testing.T, dir, journal string) string {
	t.Helper()
	sleep, err := exemptSleep()
	if err != nil {
		t.Skip(err)
	}
	common := `#!/bin/sh
svc=$1 node=$2 var=$3
journal() { echo "$(cut -d' ' -f1 /proc/uptime) $node $svc $1" >> ` + journal + `; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' /proc/$1/status; }
pid=$(cat "$var/app.pid" 2>/dev/null)
`
	scripts := map[string]string{
		"start.sh": `alive "$pid" && exit 0
journal start
echo "$var" > "` + dir + `/var-$node"
echo "$var" > "` + dir + `/svcvar-$node-$svc"
` + sleep + ` 100000 >/dev/null 2>&1 &
echo $! > "$var/app.pid"
`,
		"stop.sh": `if alive "$pid"; then
	kill "$pid"
	while alive "$pid"; do sleep 0.05; done
	journal stop
fi
rm -f "$var/app.pid"
`,
		"check.sh": `alive "$pid" || exit 1
`,
	}
	for name, body := range scripts {
		writeFile(t, filepath.Join(dir, name), common+body)
		if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := " {name} {nodename} {var}"
	return fmt.Sprintf("[app.main]\nstart = %q\nstop = %q\ncheck = %q\ntimeout = \"3s\"\n",
		filepath.Join(dir, "start.sh")+args, filepath.Join(dir, "stop.sh")+args, filepath.Join(dir, "check.sh")+args)
}

func exemptSleep() (string, error) {
	for _, p := range []string{"/bin/sleep", "/usr/bin/sleep"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no sleep binary")
}

// uptime is the host's CLOCK_BOOTTIME in seconds, the journal's clock.
func uptime(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// quorumBed is a netns bed whose cluster has quorum on (plus extra
// cluster.toml sections), every node with split_action stop and a harmless
// crash command, and the journaled app.
type quorumBed struct {
	*netBed
	journal string
	app     string
	work    string
	// writeCluster writes the cluster.toml listing members on every node
	writeCluster func(members []string)
}

func newQuorumBed(t *testing.T, names []string, clusterExtra func(b *chaos.Bed) string, hosts map[string]string) *quorumBed {
	t.Helper()
	return newQuorumBedLinks(t, names, clusterExtra, hosts, 1)
}

// newQuorumBedLinks is newQuorumBed with links (1 or 2) network links per
// node.
func newQuorumBedLinks(t *testing.T, names []string, clusterExtra func(b *chaos.Bed) string, hosts map[string]string, links int) *quorumBed {
	t.Helper()
	return newQuorumBedWith(t, names, stopOnSplit, clusterExtra, hosts, links)
}

// stopOnSplit is the [node] keys of a quorum bed's nodes: split_action
// stop, and a crash command that only leaves a mark in work.
func stopOnSplit(work, _ string) string {
	return `split_action = "stop"` + "\n" + `crash_command = "touch ` + filepath.Join(work, "crashed-$(hostname)") + `"`
}

// newQuorumBedWith is newQuorumBedLinks with the [node] keys (and the
// sections after them) of each node.toml written by nodeExtra (work: the
// bed's directory of the app, its journal and the test's files; name: the
// node, "" for what most nodes get).
func newQuorumBedWith(t *testing.T, names []string, nodeExtra func(work, name string) string, clusterExtra func(b *chaos.Bed) string, hosts map[string]string, links int) *quorumBed {
	t.Helper()
	var each func(b *chaos.Bed, _ string) string
	if clusterExtra != nil {
		// called once: the same cluster.toml on every node (a clusterExtra
		// may make a file of the test's, e.g. a fence command's)
		var extra *string
		each = func(b *chaos.Bed, _ string) string {
			if extra == nil {
				e := clusterExtra(b)
				extra = &e
			}
			return *extra
		}
	}
	return newQuorumBedEach(t, names, nodeExtra, each, hosts, links)
}

// newQuorumBedEach is newQuorumBedWith with the extra cluster.toml sections
// of each node (name) written by clusterExtra: the files then differ.
func newQuorumBedEach(t *testing.T, names []string, nodeExtra func(work, name string) string, clusterExtra func(b *chaos.Bed, name string) string, hosts map[string]string, links int) *quorumBed {
	t.Helper()
	return newQuorumBedEdit(t, names, nodeExtra, clusterExtra, hosts, links, nil)
}

// newQuorumBedEdit is newQuorumBedEach with each node.toml rewritten by
// edit (nil: none) before the daemons start, e.g. the bed's short hb
// timings replaced by the defaults.
func newQuorumBedEdit(t *testing.T, names []string, nodeExtra func(work, name string) string, clusterExtra func(b *chaos.Bed, name string) string, hosts map[string]string, links int, edit func(nodeToml string) string) *quorumBed {
	t.Helper()
	return newQuorumBedOpts(t, names, quorumOpts{nodeExtra: nodeExtra, clusterExtra: clusterExtra, hosts: hosts, links: links, edit: edit})
}

// quorumOpts are the settings of newQuorumBedOpts (see newQuorumBedEdit).
type quorumOpts struct {
	nodeExtra    func(work, name string) string
	clusterExtra func(b *chaos.Bed, name string) string
	hosts        map[string]string
	links        int
	edit         func(nodeToml string) string
	// joins are nodes of the bed (a namespace, a root, a node.toml) that
	// the cluster does not list yet: their daemons are not started until
	// addMembers.
	joins []string
}

// newQuorumBedOpts is newQuorumBedEdit with the nodes of o.joins made but
// left out of the cluster.
func newQuorumBedOpts(t *testing.T, names []string, o quorumOpts) *quorumBed {
	t.Helper()
	work := t.TempDir()
	common := o.nodeExtra(work, "")
	all := append(slices.Clone(names), o.joins...)
	b := newNetBedLinks(t, all, common, nil, o.links)
	for _, n := range all {
		if o.edit != nil {
			path := filepath.Join(b.nodes[n].root, "etc", "node.toml")
			old, err := os.ReadFile(path)
			b.ok(err)
			b.ok(testbed.WriteNodeToml(b.nodes[n].root, o.edit(string(old))))
		}
		if own := o.nodeExtra(work, n); own != common {
			path := filepath.Join(b.nodes[n].root, "etc", "node.toml")
			old, err := os.ReadFile(path)
			b.ok(err)
			b.ok(testbed.WriteNodeToml(b.nodes[n].root, strings.Replace(string(old), common, own, 1)))
		}
	}
	for h, addr := range o.hosts {
		b.ok(b.bed.AddHost(h, addr))
	}
	secret := testbed.NewSecret()
	q := &quorumBed{netBed: b, journal: filepath.Join(work, "journal"), work: work}
	// writeCluster writes the cluster.toml of members (quorum on) on every
	// node of the bed
	q.writeCluster = func(members []string) {
		var ms []testbed.Member
		for _, n := range members {
			m := testbed.Member{Name: n, Addr: fmt.Sprintf("%s:%d", b.bed.Addr[n], bedPort)}
			if o.links > 1 {
				m.Links = b.bed.HBAddrs(n)
			}
			ms = append(ms, m)
		}
		cluster := strings.Replace(testbed.ClusterToml("netns", secret, ms), "\n\n[nodes]", "\nquorum = true\n\n[nodes]", 1)
		for _, n := range all {
			own := cluster
			if o.clusterExtra != nil {
				own += "\n" + o.clusterExtra(b.bed, n)
			}
			writeClusterToml(t, b.nodes[n], own)
		}
	}
	q.writeCluster(names)
	q.app = quorumApp(t, work, q.journal)
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 20*time.Second)
	return q
}

func (q *quorumBed) service(nodes ...string) string {
	return fmt.Sprintf("[DEFAULT]\norchestrate = \"ha\"\nnodes = [\"%s\"]\n\n%s", strings.Join(nodes, `", "`), q.app)
}

func (q *quorumBed) events() []chaos.Event {
	q.t.Helper()
	ev, err := chaos.ReadJournal(q.journal)
	if err != nil && !os.IsNotExist(err) {
		q.t.Fatal(err)
	}
	return ev
}

// first returns the first journal event of node and kind after t0.
func (q *quorumBed) first(node, kind string, after float64) (chaos.Event, bool) {
	for _, e := range q.events() {
		if e.Node == node && e.Kind == kind && e.T >= after {
			return e, true
		}
	}
	return chaos.Event{}, false
}

func (q *quorumBed) noOverlap() {
	q.t.Helper()
	if o := chaos.Overlaps(q.events()); len(o) > 0 {
		b, _ := os.ReadFile(q.journal)
		q.t.Fatalf("the external journal shows the service up on two nodes at once: %v\n%s", o, b)
	}
}

// dump logs what each node says of the quorum, for a failure.
func (q *quorumBed) dump() {
	for _, n := range q.bed.Names() {
		nd := q.nodes[n]
		if nd == nil {
			continue
		}
		q.t.Logf("svcmon on %s:\n%s", n, nd.run("svcmon").Out)
		var lines []string
		for _, l := range strings.Split(nodeLog(q.t, nd), "\n") {
			if strings.Contains(l, "quorum") || strings.Contains(l, "takeover") || strings.Contains(l, "fence") || strings.Contains(l, "stalled") || strings.Contains(l, "peer") || strings.Contains(l, "web") || strings.Contains(l, "arbitrator") || strings.Contains(l, "frozen") {
				lines = append(lines, l)
			}
		}
		q.t.Logf("%s's log (quorum lines):\n%s", n, strings.Join(lines, "\n"))
	}
	b, _ := os.ReadFile(q.journal)
	q.t.Logf("journal:\n%s", b)
}

// waitFor is waitFor with the quorum dump on a failure.
func (q *quorumBed) waitFor(d time.Duration, what string, cond func() bool) {
	q.t.Helper()
	if err := testbed.WaitFor(d, 50*time.Millisecond, what, cond); err != nil {
		q.dump()
		q.t.Fatal(err)
	}
}

// frozen reports whether n sees itself frozen: by an admin (or the
// daemon's rejoin rule) or by its split_action.
func frozen(n *node) bool {
	ni := n.status().Nodes[n.name]
	return ni.Frozen || ni.SplitFrozen
}

// splitFrozen reports whether n sees itself frozen by its split_action,
// and by nothing else.
func splitFrozen(n *node) bool {
	ni := n.status().Nodes[n.name]
	return ni.SplitFrozen && !ni.Frozen
}

// splitRun cuts the owner n1's link and measures, on the journal's clock,
// the minority's stop and the majority's start after the cut.
func (q *quorumBed) splitRun(t *testing.T) (stop, start float64) {
	c := q.nodes
	cut := uptime(t)
	q.cut("n1")
	waitFor(t, 20*time.Second, "n1 stops web (journal)", func() bool { _, ok := q.first("n1", "stop", cut); return ok })
	waitFor(t, 20*time.Second, "n1 freezes itself", func() bool { return frozen(c["n1"]) })
	if err := testbed.WaitFor(30*time.Second, 50*time.Millisecond, "a survivor starts web (journal)", func() bool {
		_, ok2 := q.first("n2", "start", cut)
		_, ok3 := q.first("n3", "start", cut)
		return ok2 || ok3
	}); err != nil {
		q.dump()
		t.Fatal(err)
	}
	st, _ := q.first("n1", "stop", cut)
	sv, ok := q.first("n2", "start", cut)
	if !ok {
		sv, _ = q.first("n3", "start", cut)
	}
	q.noOverlap()
	return st.T - cut, sv.T - cut
}

// 3 nodes, quorum on: cutting the owner's link makes it lose the vote (1 of
// 3): it stops its instance and freezes; a survivor starts the service only
// after n1's self-stop deadline. The external journal shows no overlap.
// HAVEN_QUORUM_RUNS=N repeats the split N times and reports the timings.
func TestNetnsQuorumSplitNoOverlap(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBed(t, names, nil, nil)
	c := q.nodes
	runs := 1
	if v, err := strconv.Atoi(os.Getenv("HAVEN_QUORUM_RUNS")); err == nil && v > 1 {
		runs = v
	}
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	var stops, starts, gaps []float64
	for run := 0; run < runs; run++ {
		q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
		stop, start := q.splitRun(t)
		stops, starts, gaps = append(stops, stop), append(starts, start), append(gaps, start-stop)
		t.Logf("run %d: cut -> n1 stop %.2fs, cut -> survivor start %.2fs, gap %.2fs", run+1, stop, start, start-stop)
		if start-stop < 0 {
			t.Fatalf("the survivor started web %.2fs before n1 stopped it", stop-start)
		}
		if run == 0 {
			st := c["n1"].status()
			if qs := st.Cluster.QuorumState; qs == nil || !qs.Lost || qs.LastSurvive {
				t.Fatalf("n1's quorum state %+v, want lost", qs)
			}
			mon := c["n2"].must("svcmon")
			if !strings.Contains(mon, "quorum on: 2/3 votes") || !strings.Contains(mon, "last vote") {
				t.Fatalf("svcmon on n2 does not show the quorum:\n%s", mon)
			}
			if !strings.Contains(nodeLog(t, c["n2"]), "self-stop deadline") {
				t.Fatal("n2's log does not say the takeover waited for n1's self-stop deadline")
			}
			// the gate's timing shown (svcmon, explain) is the one the
			// gate waited: n1's gate on n2, deadline - since
			qs := c["n2"].status().Cluster.QuorumState
			if qs == nil || qs.SelfStop == nil {
				t.Fatalf("n2's quorum state shows no takeover gate timing: %+v", qs)
			}
			// every node runs an armed guard: the gate counts n1's guard,
			// not its stop budget
			shown := time.Duration(qs.SelfStop.DeadlineMs) * time.Millisecond
			if qs.SelfStop.GuardMs > 0 {
				shown = time.Duration(qs.SelfStop.GuardMs) * time.Millisecond
			}
			for _, g := range qs.Gates {
				if g.Node == "n1" && g.Deadline.Sub(g.Since) != shown {
					t.Errorf("n1's gate on n2 waited %s, svcmon shows %s", g.Deadline.Sub(g.Since), shown)
				}
			}
			line := "takeover gate: a lost node's services start here " + shown.String() + " after it is declared down"
			if !strings.Contains(mon, line) {
				t.Errorf("svcmon on n2 does not show %q:\n%s", line, mon)
			}
			if ex := c["n2"].must("svcmgr", "-s", "web", "explain"); !strings.Contains(ex, line) {
				t.Errorf("explain on n2 does not show %q:\n%s", line, ex)
			}
		}
		if run+1 < runs {
			// heal, thaw n1, give web back to n1 for the next run
			q.restore("n1")
			q.converge(names, 20*time.Second)
			c["n1"].must("nodemgr", "thaw")
			c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n1", "--wait")
		}
	}
	if runs > 1 {
		t.Logf("%d runs at hb.timeout 3s: cut->stop min %.2fs max %.2fs; cut->start min %.2fs max %.2fs; gap min %.2fs max %.2fs",
			runs, slices.Min(stops), slices.Max(stops), slices.Min(starts), slices.Max(starts), slices.Min(gaps), slices.Max(gaps))
	}
}

// 2 nodes + an arbitrator (a tiny HTTP server in its own namespace): n1
// runs web and is cut from n2 and the arbitrator: it loses (1 of 3) and
// stops; n2 reaches the arbitrator, survives (2 of 3), fences n1 (its fence
// command) and takes web over. No overlap.
func TestNetnsQuorumTwoNodesArbitrator(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	const arbAddr = "192.0.2.50"
	var fenceLog string
	q := newQuorumBed(t, []string{"n1", "n2"}, func(b *chaos.Bed) string {
		fenceLog = filepath.Join(t.TempDir(), "fenced")
		return fmt.Sprintf("[arbitrator.witness]\nuri = \"http://%s:8080/\"\ntimeout = \"1s\"\n\n[stonith.n1]\ncommand = \"echo $HAVEN_FENCE_NODE >> %s\"\ntimeout = \"5s\"\n\n[stonith.n2]\ncommand = \"echo $HAVEN_FENCE_NODE >> %s\"\n",
			arbAddr, fenceLog, fenceLog)
	}, map[string]string{"arb": arbAddr})
	startArbitrator(t, q.bed, "arb", arbAddr)
	c := q.nodes
	waitFor(t, 20*time.Second, "n2 hears the arbitrator", func() bool {
		qs := c["n2"].status().Cluster.QuorumState
		return qs != nil && len(qs.Arbitrators) == 1 && qs.Arbitrators[0].Answered
	})
	createService(t, c["n1"], "web", q.service("n1", "n2"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	cut := uptime(t)
	q.cut("n1")
	waitFor(t, 20*time.Second, "n1 stops web", func() bool { _, ok := q.first("n1", "stop", cut); return ok })
	waitFor(t, 20*time.Second, "n1 freezes itself", func() bool { return frozen(c["n1"]) })
	waitFor(t, 30*time.Second, "n2 starts web", func() bool { _, ok := q.first("n2", "start", cut); return ok })
	q.noOverlap()
	st := c["n2"].status()
	if qs := st.Cluster.QuorumState; qs == nil || qs.Lost || !qs.LastSurvive || !strings.Contains(qs.LastVote, "arbitrators answering: witness") {
		t.Fatalf("n2's quorum state %+v, want a vote kept with the witness", qs)
	}
	if frozen(c["n2"]) {
		t.Fatal("n2 froze: the side that reaches the arbitrator wins")
	}
	if b, _ := os.ReadFile(fenceLog); strings.TrimSpace(string(b)) != "n1" {
		t.Fatalf("fence log %q, want n1 fenced once", b)
	}
	if !strings.Contains(nodeLog(t, c["n2"]), "fenced n1") {
		t.Fatal("n2's log does not say n1 was fenced")
	}
}

// 2 nodes + an arbitrator that neither reaches: each side has 1 of 3 votes,
// both stop what they run and freeze (documented: docs/operations.md).
func TestNetnsQuorumArbitratorUnreachableBothStop(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	const arbAddr = "192.0.2.50"
	q := newQuorumBed(t, []string{"n1", "n2"}, func(*chaos.Bed) string {
		return fmt.Sprintf("[arbitrator.witness]\nuri = \"tcp://%s:8080\"\ntimeout = \"1s\"\n", arbAddr)
	}, map[string]string{"arb": arbAddr})
	startArbitrator(t, q.bed, "arb", arbAddr)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2"))
	createService(t, c["n1"], "db", q.service("n2", "n1"))
	if err := testbed.WaitFor(30*time.Second, 50*time.Millisecond, "web up on n1, db up on n2", func() bool {
		return upOnlyOn(c["n1"], "web", "n1")() && upOnlyOn(c["n1"], "db", "n2")()
	}); err != nil {
		t.Fatalf("%v\n%s", err, c["n1"].must("svcmon"))
	}
	cut := uptime(t)
	q.cut("arb") // nobody reaches the arbitrator
	q.cut("n1")  // and n1 and n2 lose each other
	for _, n := range []string{"n1", "n2"} {
		waitFor(t, 20*time.Second, n+" freezes itself", func() bool { return frozen(c[n]) })
	}
	waitFor(t, 20*time.Second, "both stop (journal)", func() bool {
		_, a := q.first("n1", "stop", cut)
		_, b := q.first("n2", "stop", cut)
		return a && b
	})
	// nothing starts again: each node looked twice more (a pass comes
	// every few seconds here: the arbitrator's probes)
	afterPasses(t, 2, 30*time.Second, c["n1"], c["n2"])
	if up := chaos.UpAt(q.events()); len(up["web"])+len(up["db"]) != 0 {
		t.Fatalf("up after the split: %v, want nothing", up)
	}
}

// A fence command that fails blocks the takeover (monitor state "wait
// fence", svcmon says why) and is retried with a backoff; once it succeeds
// the takeover goes on.
func TestNetnsQuorumFenceFailureBlocks(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	var okFile string
	q := newQuorumBed(t, []string{"n1", "n2", "n3"}, func(*chaos.Bed) string {
		okFile = filepath.Join(t.TempDir(), "fence-works")
		return fmt.Sprintf("[stonith.n1]\ncommand = \"test -e %s\"\ntimeout = \"5s\"\n", okFile)
	}, nil)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	cut := uptime(t)
	q.cut("n1")
	waitFor(t, 20*time.Second, "n2 waits for the fence", func() bool {
		return c["n2"].instance("web").Monitor.State == dataset.WaitFence &&
			strings.Contains(c["n2"].must("svcmon"), "takeover of n1 blocked: fence of n1 failed")
	})
	if ex := c["n2"].must("svcmgr", "-s", "web", "explain"); !strings.Contains(ex, "wait fence: n1: fence of n1 failed") {
		t.Fatalf("svcmgr explain on n2 does not say the takeover waits for the fence:\n%s", ex)
	}
	// the fence retried (after a second), and failed again; the passes
	// after it still start nothing
	waitFor(t, 20*time.Second, "a retry of the fence in n2's log", func() bool {
		return strings.Contains(nodeLog(t, c["n2"]), "fence of n1 failed (attempt 2)")
	})
	afterPasses(t, 2, 30*time.Second, c["n2"], c["n3"])
	if _, ok := q.first("n2", "start", cut); ok {
		t.Fatal("n2 started web while the fence of n1 fails")
	}
	if _, ok := q.first("n3", "start", cut); ok {
		t.Fatal("n3 started web while the fence of n1 fails")
	}
	writeFile(t, okFile, "")
	waitFor(t, 90*time.Second, "a survivor starts web once the fence works", func() bool {
		_, a := q.first("n2", "start", cut)
		_, b := q.first("n3", "start", cut)
		return a || b
	})
	q.noOverlap()
}

// startArbitrator serves 200 on http://addr:8080/ in host h's namespace
// until the end of the test.
func startArbitrator(t *testing.T, bed *chaos.Bed, h, addr string) {
	t.Helper()
	var l net.Listener
	err := chaos.InNetns(bed.NS[h], func() (err error) {
		l, err = net.Listen("tcp", addr+":8080")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}
