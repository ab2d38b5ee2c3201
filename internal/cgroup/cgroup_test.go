package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMountFromMountinfo(t *testing.T) {
	hybrid := `25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
33 31 0:28 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
`
	if got := mountFrom([]byte(hybrid)); got != "/sys/fs/cgroup/unified" {
		t.Errorf("hybrid: %q", got)
	}
	pure := `31 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	if got := mountFrom([]byte(pure)); got != "/sys/fs/cgroup" {
		t.Errorf("pure v2: %q", got)
	}
	// optional fields before the separator, an escaped space
	odd := `40 31 0:30 / /mnt/cg\040two rw shared:3 master:1 - cgroup2 none rw
`
	if got := mountFrom([]byte(odd)); got != "/mnt/cg two" {
		t.Errorf("escaped: %q", got)
	}
	v1 := `33 31 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
`
	if got := mountFrom([]byte(v1)); got != "" {
		t.Errorf("v1 only: %q", got)
	}
}

func TestSelfAndBase(t *testing.T) {
	self, err := selfFrom([]byte("12:pids:/system.slice/haven.service\n0::/system.slice/haven.service\n"))
	if err != nil || self != "/system.slice/haven.service" {
		t.Fatalf("self %q %v", self, err)
	}
	if _, err := selfFrom([]byte("4:memory:/x\n")); err == nil {
		t.Error("no v2 line: no error")
	}
	for _, c := range []struct{ self, dir, leaf string }{
		{"/system.slice/haven.service", "/system.slice/haven.service", "/system.slice/haven.service/daemon"},
		{"/system.slice/haven.service/daemon", "/system.slice/haven.service", "/system.slice/haven.service/daemon"},
		{"/", "/haven", ""},
		{"/user.slice/user-0.slice/session-3.scope", "/haven", ""},
	} {
		dir, leaf := base(c.self)
		if dir != c.dir || leaf != c.leaf {
			t.Errorf("base(%q) = %q, %q; want %q, %q", c.self, dir, leaf, c.dir, c.leaf)
		}
	}
}

func TestNodeDirDiffersByRoot(t *testing.T) {
	a, b := NodeDir("n1", "/tmp/a"), NodeDir("n1", "/tmp/b")
	if a == b || !strings.HasPrefix(a, "n1-") {
		t.Errorf("%q %q", a, b)
	}
	if NodeDir("n1", "/tmp/a") != a {
		t.Error("not stable")
	}
	for in, want := range map[string]string{"web": "web", "a/b": "a_b", "..": "_..", ".x": "_.x", "": "_"} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPopulatedFrom(t *testing.T) {
	if !populatedFrom([]byte("populated 1\nfrozen 0\n")) || populatedFrom([]byte("populated 0\nfrozen 0\n")) {
		t.Error("populated")
	}
}

// testTree is a node tree of its own for the test, removed at its end.
func testTree(t *testing.T) *Tree {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups: run as root to make groups")
	}
	tr, err := Setup("test", t.TempDir(), "")
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no usable cgroup v2 hierarchy here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		KillWait(tr.Dir, 5*time.Second)
		if err := Remove(tr.Dir); err != nil {
			t.Errorf("remove the test's tree: %v", err)
		}
	})
	return tr
}

// startIn runs a shell script in group dir (clone3 into it), with a new
// process group, and returns once the script exited.
func startIn(t *testing.T, dir, script string) {
	t.Helper()
	fd, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
}

// An app that double-forks and calls setsid stays in its group: Procs
// lists it, Kill ends it, the group empties and is removed.
func TestKillEndsADoubleForkedSetsidProcess(t *testing.T) {
	tr := testTree(t)
	dir := filepath.Join(tr.Service("web"), "app#main")
	pidFile := filepath.Join(t.TempDir(), "pid")
	startIn(t, dir, `(setsid sh -c 'echo $$ > `+pidFile+`; exec sleep 300' >/dev/null 2>&1 &) ; sleep 0.1`)
	var pid int
	deadline := time.Now().Add(5 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the double-forked process did not write its pid")
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if sid, _ := unix.Getsid(pid); sid == unix.Getpid() || sid != pid {
		t.Fatalf("the process is not a session leader of its own (sid %d)", sid)
	}
	pids, err := Procs(tr.Service("web"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pids {
		found = found || p == pid
	}
	if !found {
		t.Fatalf("pid %d not in the service's group: %v", pid, pids)
	}
	if on, err := Populated(tr.Service("web")); err != nil || !on {
		t.Fatalf("populated %v %v", on, err)
	}
	empty, err := KillWait(tr.Service("web"), 5*time.Second)
	if err != nil || !empty {
		t.Fatalf("kill: empty %v, %v", empty, err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(b), ") Z ") {
			t.Fatalf("pid %d still runs", pid)
		}
	}
	if err := Remove(tr.Service("web")); err != nil {
		t.Fatal(err)
	}
	if on, err := Populated(tr.Service("web")); err != nil || on {
		t.Fatalf("a removed group: populated %v %v", on, err)
	}
}

func TestWaitEmptyBoundedAndRemoveRefusesABusyGroup(t *testing.T) {
	tr := testTree(t)
	dir := tr.Service("db")
	startIn(t, dir, `sleep 300 >/dev/null 2>&1 & exit 0`)
	begin := time.Now()
	if empty, err := WaitEmpty(dir, 100*time.Millisecond); err != nil || empty {
		t.Fatalf("a running group: empty %v %v", empty, err)
	}
	if d := time.Since(begin); d < 100*time.Millisecond {
		t.Errorf("returned after %s", d)
	}
	if err := Remove(dir); err == nil {
		t.Fatal("a busy group was removed")
	}
	if empty, err := KillWait(dir, 5*time.Second); err != nil || !empty {
		t.Fatalf("kill: %v %v", empty, err)
	}
	// a group that does not exist has nothing to kill and is empty
	if empty, err := KillWait(filepath.Join(tr.Dir, "nothing"), time.Second); err != nil || !empty {
		t.Fatalf("missing group: %v %v", empty, err)
	}
}
