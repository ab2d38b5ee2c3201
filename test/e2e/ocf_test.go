package e2e

import (
	"os"
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

// The [ocf.NAME] resources with Debian's OCF agents (resource-agents,
// installed by .ci/run): the same trio as fs_test.go's (a VIP, a
// filesystem, an application) made of OCF agents only.

// skipUnlessAgents skips the test when Debian's OCF agents are missing.
func skipUnlessAgents(t *testing.T, agents ...string) {
	t.Helper()
	for _, a := range agents {
		if _, err := os.Stat("/usr/lib/ocf/resource.d/heartbeat/" + a); err != nil {
			t.Skipf("OCF agent %s not installed (apt-get install resource-agents): %v", a, err)
		}
	}
}

// ocfTrio is a service of n1 and n2 made of ocf:heartbeat:IPaddr2,
// Filesystem and anything (a long sleep whose pid file is on the
// filesystem), started in that order (the ocf resources start in name
// order).
func ocfTrio(dev, mnt string) string {
	return `[DEFAULT]
nodes = ["n1", "n2"]
orchestrate = "ha"

[ocf.1-vip]
agent = "heartbeat:IPaddr2"
params = { ip = "` + vip + `", cidr_netmask = "24", nic = "` + bedDev + `" }
monitor = true

[ocf.2-data]
agent = "heartbeat:Filesystem"
params = { device = "` + dev + `", directory = "` + mnt + `", fstype = "ext4", options = "noatime" }

[ocf.3-app]
agent = "ocf:heartbeat:anything"
params = { binfile = "/bin/sleep", cmdline_options = "100000", pidfile = "` + mnt + `/app.pid" }
monitor = true
restart = 1
restart_delay = "200ms"
`
}

// sleepPid is the pid of the anything agent's sleep, from its pid file on
// the filesystem mounted in n's mount namespace (read through the
// daemon's /proc/PID/root), 0 when none runs.
func sleepPid(t *testing.T, n *node, mnt string) int {
	t.Helper()
	d := testbed.DaemonPID(n.root)
	if d == 0 {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d), "root", mnt, "app.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return 0
	}
	return pid
}

// ocfDump is n's status of web and its service log, for a failure.
func ocfDump(t *testing.T, n *node) string {
	return n.name + " status:\n" + n.run("svcmgr", "-s", "web", "print", "status").Out + "\n" + n.name + " web.log:\n" +
		readFile(t, filepath.Join(n.root, "log", "services", "web.log"))
}

// A service of OCF agents only fails over as the ip + fs + app trio does:
// up on n1 (the VIP answers n3, a client in another namespace, at n1's
// MAC; the disk mounted in n1's mount namespace; the sleep running); a
// switch to n2 moves all three (n3 reaches the VIP at n2's MAC: the
// agent's gratuitous ARP); n2 crashes and n1 takes everything back.
func TestNetnsOCFFailover(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	skipUnlessAgents(t, "IPaddr2", "Filesystem", "anything")
	dev := sharedDisk(t) // before the bed: detached after it is closed
	names := []string{"n1", "n2", "n3"}
	b := newNetBed(t, names, "")
	c := b.nodes
	mnt := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 20*time.Second)

	// 1. up on n1, in order
	createService(t, c["n1"], "web", ocfTrio(dev, mnt))
	if err := testbed.WaitFor(30*time.Second, 50*time.Millisecond, "web up on n1 (seen from n3)", upOnlyOn(c["n3"], "web", "n1")); err != nil {
		t.Fatalf("%v\n%s", err, ocfDump(t, c["n1"]))
	}
	res := c["n1"].status().Services["web"].Instances["n1"].Resources
	for _, rid := range []string{"ocf#1-vip", "ocf#2-data", "ocf#3-app"} {
		if res[rid].Status != dataset.StatusUp {
			t.Fatalf("%s on n1 is %s (%s), want up", rid, res[rid].Status, res[rid].Log)
		}
	}
	if l := res["ocf#1-vip"].Label; !strings.HasPrefix(l, "ocf:heartbeat:IPaddr2 ") || !strings.Contains(l, "ip="+vip) {
		t.Errorf("ocf#1-vip label %q", l)
	}
	if !mountedIn(t, c["n1"], mnt) {
		t.Fatalf("%s not mounted in n1's mount namespace", mnt)
	}
	if sleepPid(t, c["n1"], mnt) == 0 {
		t.Fatal("the anything agent's sleep does not run on n1")
	}
	waitFor(t, 5*time.Second, vip+" answers ping from n3", func() bool { return b.ping("n3", vip, 300*time.Millisecond) })
	if got, want := b.neighMAC("n3", vip), b.mac("n1"); got != want {
		t.Fatalf("n3 resolves %s to %s, want n1's %s", vip, got, want)
	}
	log1 := readFile(t, filepath.Join(c["n1"].root, "log", "services", "web.log"))
	iv, id, ia := strings.Index(log1, "ocf#1-vip start: ocf:heartbeat:IPaddr2"), strings.Index(log1, "ocf#2-data start: ocf:heartbeat:Filesystem"), strings.Index(log1, "ocf#3-app start: ocf:heartbeat:anything")
	if iv < 0 || id < iv || ia < id {
		t.Fatalf("n1 did not start IPaddr2, Filesystem, anything in that order:\n%s", log1)
	}

	// the sleep dies: anything's monitor says 7, the ladder restarts it
	// in place (its one restart), nothing moves
	old := sleepPid(t, c["n1"], mnt)
	killed := time.Now()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the sleep restarted on n1 by the ladder", func() bool {
		p := sleepPid(t, c["n1"], mnt)
		return p != 0 && p != old
	})
	t.Logf("ladder: the sleep of ocf#3-app restarted on n1 %s after its kill", time.Since(killed).Round(10*time.Millisecond))
	waitFor(t, 5*time.Second, "web up on n1 after the restart, its restart spent", func() bool {
		i := c["n3"].status().Services["web"].Instances["n1"]
		return i.Avail == dataset.StatusUp && i.Resources["ocf#3-app"].RestartRemaining == 0
	})

	// 2. switch to n2: everything moves
	switchedAt := time.Now()
	c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n2")
	waitFor(t, 40*time.Second, "web up on n2 after the switch (seen from n3)", upOnlyOn(c["n3"], "web", "n2"))
	t.Logf("switch: web (IPaddr2 + Filesystem + anything) up on n2 %s after the command", time.Since(switchedAt).Round(10*time.Millisecond))
	if mountedIn(t, c["n1"], mnt) || b.hasAddr("n1", vip) {
		t.Fatal("n1 still holds the filesystem or the VIP after the switch")
	}
	if !mountedIn(t, c["n2"], mnt) || sleepPid(t, c["n2"], mnt) == 0 {
		t.Fatal("n2 runs no filesystem or no sleep after the switch")
	}
	waitFor(t, 5*time.Second, "n3 reaches "+vip+" at n2's MAC (gratuitous ARP)", func() bool {
		return b.ping("n3", vip, 300*time.Millisecond) && b.neighMAC("n3", vip) == b.mac("n2")
	})

	// 3. n2 crashes (its link cut, every process of its namespace killed:
	// its mount namespace, and so its mount, goes with them)
	crashedAt := time.Now()
	b.cut("n2")
	for _, pid := range b.bed.Pids("n2") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := testbed.WaitFor(40*time.Second, 50*time.Millisecond, "web up on n1 after n2's crash", func() bool {
		return c["n1"].status().Services["web"].Instances["n1"].Avail == dataset.StatusUp
	}); err != nil {
		t.Fatalf("%v\n%s", err, ocfDump(t, c["n1"]))
	}
	t.Logf("crash: web up on n1 %s after n2 was killed", time.Since(crashedAt).Round(10*time.Millisecond))
	if h := b.holders(vip); !slices.Contains(h, "n1") {
		t.Fatalf("%s held by %v, want n1", vip, h)
	}
	waitFor(t, 5*time.Second, "n3 reaches "+vip+" at n1's MAC again", func() bool {
		return b.ping("n3", vip, 300*time.Millisecond) && b.neighMAC("n3", vip) == b.mac("n1")
	})
	if !mountedIn(t, c["n1"], mnt) || sleepPid(t, c["n1"], mnt) == 0 {
		t.Fatal("n1 runs no filesystem or no sleep after the failover")
	}
}
