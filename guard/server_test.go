package guard

import (
	"context"
	"errors"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"haven/internal/cgroup"
	"haven/test/testbed"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the guard's actions need root (cgroups, addresses, mounts)")
	}
}

// startGuard runs a guard in the test's process on a directory of its
// own; it stops at the end of the test.
func startGuard(t *testing.T) (Config, *Client) {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{Socket: filepath.Join(dir, "guard.sock"), Lock: filepath.Join(dir, "guard.lock"),
		Record: filepath.Join(dir, "guard.json"), Log: log.New(testWriter{t}, "guard: ", log.Lmicroseconds), KillWait: 2 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	c := NewClient(cfg.Socket, time.Second)
	t.Cleanup(c.Close)
	waitFor(t, 5*time.Second, "the guard's socket", func() bool {
		_, err := c.Do(Request{Op: OpStatus})
		return err == nil
	})
	return cfg, c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := testbed.WaitFor(d, 10*time.Millisecond, what, cond); err != nil {
		t.Fatal(err)
	}
}

// escapedApp starts, in a new cgroup of the test, a process that forked
// twice and called setsid, and returns the group and the process.
func escapedApp(t *testing.T) (string, int) {
	t.Helper()
	tr, err := cgroup.Setup("guardtest", t.TempDir(), "")
	if errors.Is(err, cgroup.ErrUnavailable) {
		t.Skipf("no cgroup v2: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cgroup.KillWait(tr.Dir, 5*time.Second)
		cgroup.Remove(tr.Dir)
	})
	dir := tr.Service("web")
	fd, err := cgroup.Open(filepath.Join(dir, "app#web"))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", `(setsid sh -c 'echo $$ > `+pidFile+`; exec sleep 1000' >/dev/null 2>&1 &)`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	var pid int
	waitFor(t, 5*time.Second, "the app's pid", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return dir, pid
}

func running(pid int) bool { return testbed.Alive(pid) }

func arm(t *testing.T, c *Client, lease time.Duration, kill ...Target) {
	t.Helper()
	rep, err := c.Do(Request{Op: OpRenew, Deadline: int64(BootNow() + lease), Gen: 1, SetKill: true, Kill: kill})
	if err != nil || rep.Error != "" || !rep.Armed {
		t.Fatalf("arm: %+v %v", rep, err)
	}
}

// armedApp is a guard armed for 300 ms on an app that escaped its
// process group.
func armedApp(t *testing.T) (Config, *Client, string, int) {
	needRoot(t)
	cfg, c := startGuard(t)
	dir, pid := escapedApp(t)
	arm(t, c, 300*time.Millisecond, Target{Service: "web", Cgroup: dir})
	return cfg, c, dir, pid
}

// The daemon's end closes (it was killed): the guard ends the services
// when the lease runs out, records it and logs it.
func TestGuardActsWhenTheDaemonsEndCloses(t *testing.T) {
	cfg, c, dir, pid := armedApp(t)
	c.Close()
	waitFor(t, 5*time.Second, "the guard to kill the app", func() bool { return !running(pid) })
	var rec *Record
	waitFor(t, 5*time.Second, "the record", func() bool {
		rec, _ = ReadRecord(cfg.Record)
		return rec != nil
	})
	if len(rec.Ended) != 1 || rec.Ended[0].Service != "web" || rec.Ended[0].Killed < 1 || !rec.Ended[0].Empty || rec.Acked {
		t.Fatalf("record: %+v", rec)
	}
	if on, _ := cgroup.Populated(dir); on {
		t.Error("the cgroup is still populated")
	}
	rep, err := c.Do(Request{Op: OpStatus})
	if err != nil || rep.Armed || rep.Fired == nil || rep.Fired.ID != rec.ID {
		t.Fatalf("status after firing: %+v %v", rep, err)
	}
	if rep, _ = c.Do(Request{Op: OpAck, Fired: rec.ID}); rep.Error != "" || !rep.Fired.Acked {
		t.Fatalf("ack: %+v", rep)
	}
	if rec, _ = ReadRecord(cfg.Record); !rec.Acked {
		t.Error("the acknowledgement is not in the record file")
	}
}

// The daemon's end stays open but says nothing (a wedged or paused
// loop): the guard acts all the same.
func TestGuardActsWhenTheDaemonStaysSilent(t *testing.T) {
	_, c, _, pid := armedApp(t)
	waitFor(t, 5*time.Second, "the guard to kill the app", func() bool { return !running(pid) })
	rep, err := c.Do(Request{Op: OpStatus}) // the same connection, still open
	if err != nil || rep.Fired == nil || rep.Fired.Ended[0].Killed < 1 {
		t.Fatalf("status: %+v %v", rep, err)
	}
}

// Renewed in time, the lease never runs out; disarmed, nothing is ended;
// a second guard on the same root is refused.
func TestGuardRenewedOrDisarmedEndsNothing(t *testing.T) {
	needRoot(t)
	cfg, c := startGuard(t)
	dir, pid := escapedApp(t)
	arm(t, c, 400*time.Millisecond, Target{Service: "web", Cgroup: dir})
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if rep, err := c.Do(Request{Op: OpRenew, Deadline: int64(BootNow() + 400*time.Millisecond), Gen: 1}); err != nil || !rep.Armed || rep.Targets != 1 {
			t.Fatalf("renew: %+v %v", rep, err)
		}
	}
	if rep, err := c.Do(Request{Op: OpDisarm}); err != nil || rep.Armed {
		t.Fatalf("disarm: %+v %v", rep, err)
	}
	time.Sleep(600 * time.Millisecond)
	if !running(pid) {
		t.Fatal("the app was killed by a renewed, then disarmed, guard")
	}
	if rep, _ := c.Do(Request{Op: OpStatus}); rep.Fired != nil {
		t.Fatalf("fired: %+v", rep.Fired)
	}
	if err := Run(context.Background(), cfg); !errors.Is(err, ErrRunning) {
		t.Fatalf("a second guard on the root: %v", err)
	}
}

// delAddr removes an address with one rtnetlink request, in a network
// namespace of the test's own.
func TestDelAddr(t *testing.T) {
	needRoot(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with its namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		ip := func(args ...string) string {
			out, err := exec.Command("ip", args...).CombinedOutput()
			if err != nil {
				t.Errorf("ip %v: %v: %s", args, err, out)
			}
			return string(out)
		}
		ip("link", "add", "d0", "type", "veth", "peer", "name", "d1")
		ip("link", "set", "d0", "up")
		ip("addr", "add", "10.9.9.9/24", "dev", "d0")
		ip("addr", "add", "10.9.9.10/16", "dev", "d0") // another prefix than the guard's
		ip("addr", "add", "fd00::9/64", "dev", "d0", "nodad")
		for _, c := range []struct {
			prefix string
			want   bool
		}{{"10.9.9.9/24", true}, {"10.9.9.10/24", true}, {"fd00::9/64", true}, {"10.9.9.9/24", false}, {"10.9.9.11/24", false}} {
			got, err := delAddr("d0", c.prefix)
			if err != nil || got != c.want {
				t.Errorf("delAddr(%s) = %v, %v; want %v", c.prefix, got, err, c.want)
			}
		}
		if out := ip("addr", "show", "dev", "d0"); strings.Contains(out, "10.9.9.") || strings.Contains(out, "fd00::9") {
			t.Errorf("addresses left:\n%s", out)
		}
		if got, err := delAddr("nodev0", "10.9.9.9/24"); got || err != nil {
			t.Errorf("no such device: %v %v", got, err)
		}
	}()
	<-done
}

// detach unmounts lazily, each mount stacked on the point.
func TestDetach(t *testing.T) {
	needRoot(t)
	mnt := t.TempDir()
	for range 2 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "guardtest", mnt).CombinedOutput(); err != nil {
			t.Skipf("mount tmpfs: %v: %s", err, out)
		}
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	f, err := os.Create(filepath.Join(mnt, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // a user of the mount does not hold the lazy unmount
	if n, err := detach(mnt); n != 2 || err != nil {
		t.Fatalf("detach: %d %v", n, err)
	}
	if n, err := detach(mnt); n != 0 || err != nil {
		t.Fatalf("detach of nothing: %d %v", n, err)
	}
}

// Without cgroups the guard kills the process groups of the kill set: a
// process left in its start's group dies with it.
func TestGuardKillsProcessGroups(t *testing.T) {
	needRoot(t)
	_, c := startGuard(t)
	cmd := exec.Command("sh", "-c", "sleep 1000 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	arm(t, c, 200*time.Millisecond, Target{Service: "web", Groups: []int{pgid, 1, 0}})
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the process group was not killed")
	}
	rep, err := c.Do(Request{Op: OpStatus})
	if err != nil || rep.Fired == nil || len(rep.Fired.Ended[0].Groups) != 1 || rep.Fired.Ended[0].Groups[0] != pgid {
		t.Fatalf("record: %+v %v", rep.Fired, err)
	}
}
