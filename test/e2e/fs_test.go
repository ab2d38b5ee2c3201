package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// The classic trio, ip + fs + app, failing over between two nodes in
// network namespaces. Each daemon runs in its own mount namespace (ip
// netns exec makes one), so a mount made by one node is not seen by the
// other, as on two hosts; one loop device with an ext4 filesystem, seen by
// both, is the shared storage.

// sharedDisk attaches a new 32 MiB ext4 image to a loop device, detached at
// the end of the test (after the bed is closed, when registered before it).
func sharedDisk(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("not root: the fs failover test mounts a loop device")
	}
	for _, c := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not found (packages mount, e2fsprogs): %v", c, err)
		}
	}
	img := filepath.Join(t.TempDir(), "shared.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("no free loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	return dev
}

// trioApp is the app's script: it records, in the shared record file,
// each start and stop with what it sees of the VIP and the filesystem at
// that moment, and at a start the last node that wrote in the filesystem.
// Its start also leaves a straggler process whose working directory is in
// the filesystem and that its stop forgets: only force_unmount lets the
// filesystem go.
const trioApp = `#!/bin/sh
mnt=%MNT%; rec=%REC%
state() {
	ip=down; ip -o addr show dev %DEV% | grep -q " %VIP%/" && ip=up
	fs=down; grep -q " $mnt " /proc/self/mountinfo && fs=up
}
case $1 in
start)
	state
	prev=$(tail -n 1 "$mnt/owners" 2>/dev/null)
	echo "$HAVEN_NODENAME start ip=$ip fs=$fs prev=$prev" >> "$rec"
	[ "$fs" = up ] || exit 1
	echo "$HAVEN_NODENAME" >> "$mnt/owners"
	sleep 100000 >/dev/null 2>&1 &
	echo $! > main.pid
	(cd "$mnt" && exec sleep 100000) >/dev/null 2>&1 &
	;;
stop)
	state
	echo "$HAVEN_NODENAME stop ip=$ip fs=$fs" >> "$rec"
	[ -f main.pid ] && kill $(cat main.pid) 2>/dev/null
	rm -f main.pid
	;;
check)
	test -f main.pid && kill -0 $(cat main.pid) 2>/dev/null
	;;
esac
`

// A VIP + fs + app service starts on n1 in the order ip, fs, app; a switch
// to n2 stops it in the reverse order (force_unmount killing the straggler
// that holds the filesystem) and n2 mounts the same disk and finds n1's
// data; n2 crashes (link cut, every process in its namespace killed) and n1 mounts
// the disk again, finds n2's data and starts. The order is read from the
// app's own record.
func TestNetnsFSFailover(t *testing.T) {
	t.Parallel()         // a bed of its own (namespaces): runs beside the other netns tests
	dev := sharedDisk(t) // before the bed: detached after it is closed
	names := []string{"n1", "n2"}
	b := newNetBed(t, names, "")
	c := b.nodes
	dir := t.TempDir()
	mnt, rec := filepath.Join(dir, "data"), filepath.Join(dir, "record")
	app := filepath.Join(dir, "app.sh")
	r := strings.NewReplacer("%MNT%", mnt, "%REC%", rec, "%DEV%", bedDev, "%VIP%", vip)
	writeFile(t, app, r.Replace(trioApp))
	svc := `[DEFAULT]
nodes = ["n1", "n2"]
orchestrate = "ha"

[ip.vip]
ipname = "` + vip + `"
ipdev = "` + bedDev + `"
netmask = "24"

[fs.data]
dev = "` + dev + `"
mnt = "` + mnt + `"
type = "ext4"
mnt_opt = "noatime"
force_unmount = true
timeout = "15s"

[app.main]
start = "sh ` + app + ` start"
stop = "sh ` + app + ` stop"
check = "sh ` + app + ` check"
monitor = true
timeout = "10s"
`
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 20*time.Second)

	// 1. up on n1: ip, then fs, then app
	createService(t, c["n1"], "web", svc)
	waitFor(t, 20*time.Second, "web up on n1 (seen from n2)", upOnlyOn(c["n2"], "web", "n1"))
	wantRecord(t, rec, "n1 start ip=up fs=up prev=")
	res := c["n1"].status().Services["web"].Instances["n1"].Resources
	for _, rid := range []string{"ip#vip", "fs#data", "app#main"} {
		if res[rid].Status != dataset.StatusUp {
			t.Fatalf("%s on n1 is %s (%s), want up", rid, res[rid].Status, res[rid].Log)
		}
	}
	if l := res["fs#data"].Label; l != dev+"@"+mnt {
		t.Errorf("fs#data label %q, want %s@%s", l, dev, mnt)
	}
	if !mountedIn(t, c["n1"], mnt) {
		t.Fatalf("%s not mounted in n1's mount namespace", mnt)
	}

	// 2. switch to n2: app, fs, ip stop on n1; n2 mounts and finds n1's data
	switchedAt := time.Now()
	c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n2")
	waitFor(t, 30*time.Second, "web up on n2 after the switch (seen from n1)", upOnlyOn(c["n1"], "web", "n2"))
	t.Logf("switch: web up on n2 %s after the command", time.Since(switchedAt).Round(10*time.Millisecond))
	wantRecord(t, rec, "n1 start ip=up fs=up prev=", "n1 stop ip=up fs=up", "n2 start ip=up fs=up prev=n1")
	if mountedIn(t, c["n1"], mnt) {
		t.Fatalf("%s still mounted in n1's mount namespace after the switch", mnt)
	}
	log1 := readFile(t, filepath.Join(c["n1"].root, "log", "services", "web.log"))
	if !strings.Contains(log1, "force_unmount: SIGTERM pid") || !strings.Contains(log1, "(sleep, cwd)") {
		t.Errorf("n1's service log does not show the straggler killed by force_unmount:\n%s", log1)
	}
	if st := c["n2"].status().Services["web"].Instances["n2"].Resources["fs#data"]; st.Status != dataset.StatusUp {
		t.Fatalf("fs#data on n2 is %s (%s), want up", st.Status, st.Log)
	}

	// 3. n2 crashes: its link goes (the namespace, with the VIP on its
	// eth0, outlives its processes) and every process in its namespace is
	// killed, which frees its mount namespace and so the mount; n1
	// declares it down and mounts the disk again
	crashedAt := time.Now()
	b.cut("n2")
	for _, pid := range b.bed.Pids("n2") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := testbed.WaitFor(30*time.Second, 50*time.Millisecond, "web up on n1 after n2's crash", func() bool {
		return c["n1"].status().Services["web"].Instances["n1"].Avail == dataset.StatusUp
	}); err != nil {
		t.Fatalf("%v\nn1 status:\n%s\nn1 web.log:\n%s\nn1 node.log:\n%s", err, c["n1"].must("svcmgr", "-s", "web", "print", "status"),
			readFile(t, filepath.Join(c["n1"].root, "log", "services", "web.log")), nodeLog(t, c["n1"]))
	}
	t.Logf("crash: web up on n1 %s after n2 was killed (hb.timeout 3s + ready_period 2s)", time.Since(crashedAt).Round(10*time.Millisecond))
	wantRecord(t, rec, "n1 start ip=up fs=up prev=", "n1 stop ip=up fs=up", "n2 start ip=up fs=up prev=n1", "n1 start ip=up fs=up prev=n2")
	if !mountedIn(t, c["n1"], mnt) {
		t.Fatalf("%s not mounted in n1's mount namespace after the failover", mnt)
	}
}

// wantRecord waits for the app's record to be exactly lines.
func wantRecord(t *testing.T, path string, lines ...string) {
	t.Helper()
	want := strings.Join(lines, "\n") + "\n"
	var got string
	err := testbed.WaitFor(10*time.Second, 50*time.Millisecond, "the app's record", func() bool {
		b, _ := os.ReadFile(path)
		got = string(b)
		return got == want
	})
	if err != nil {
		t.Fatalf("the app's record is\n%s\nwant\n%s", got, want)
	}
}

// mountedIn reports whether something is mounted on mnt in the mount
// namespace of n's daemon.
func mountedIn(t *testing.T, n *node, mnt string) bool {
	t.Helper()
	pid := testbed.DaemonPID(n.root)
	if pid == 0 {
		t.Fatalf("%s: no daemon pid", n.name)
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == mnt {
			return true
		}
	}
	return false
}
