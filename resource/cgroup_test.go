package resource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"haven/config"
	"haven/internal/cgroup"
)

// cgroupEnv is testEnv with the instance's cgroup in a node tree of the
// test's own (removed at its end); it skips when cgroups cannot be used.
func cgroupEnv(t testing.TB) (Env, *logRec) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups: run as root")
	}
	tr, err := cgroup.Setup("restest", t.TempDir(), "")
	if errors.Is(err, cgroup.ErrUnavailable) {
		t.Skipf("no usable cgroup v2 hierarchy: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cgroup.KillWait(tr.Dir, 5*time.Second)
		if err := cgroup.Remove(tr.Dir); err != nil {
			t.Errorf("remove the test's cgroups: %v", err)
		}
	})
	env, rec := testEnv(t)
	env.Cgroup = tr.Service(env.Service)
	return env, rec
}

// doubleForkStart is a start command that leaves a process in a session
// of its own, after two forks, that writes its pid to escaped.pid; the
// stop command does not know about it.
const doubleForkStart = `sh -c '(setsid sh -c "echo \$\$ > escaped.pid; exec sleep 1000" >/dev/null 2>&1 &) ; echo launched'`

// An app that double-forks and calls setsid stays in its resource's
// cgroup, and the instance's stop kills it even though the stop command
// missed it.
func TestSetStopKillsWhatEscapedTheStopCommand(t *testing.T) {
	env, rec := cgroupEnv(t)
	rcs := []config.ResourceConfig{{RID: "app#web", Type: "app", Start: doubleForkStart, Stop: "true", Timeout: 10 * time.Second}}
	set, err := NewSet(rcs, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := set.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, filepath.Join(env.VarDir, "escaped.pid"))
	killGroupOf(t, pid)
	pids, err := cgroup.Procs(filepath.Join(env.Cgroup, "app#web"))
	if err != nil || !slices.Contains(pids, pid) {
		t.Fatalf("the escaped process %d is not in the resource's cgroup: %v %v", pid, pids, err)
	}
	if err := set.Stop(ctx); err != nil {
		t.Fatalf("stop: %v\n%s", err, rec)
	}
	if alive(pid) {
		t.Fatalf("process %d outlived the stop", pid)
	}
	if !rec.has("processes left in the cgroup after the stop: killed") {
		t.Errorf("the kill is not logged:\n%s", rec)
	}
	// the killed group was removed: the next start makes a new one, and
	// its commands live (a process cloned into a group killed before
	// would be killed at birth: cgroup.Kill)
	os.Remove(filepath.Join(env.VarDir, "escaped.pid"))
	if err := set.Start(ctx); err != nil {
		t.Fatalf("start after the kill: %v\n%s", err, rec)
	}
	again := readPid(t, filepath.Join(env.VarDir, "escaped.pid"))
	killGroupOf(t, again)
	if !alive(again) {
		t.Fatalf("the second start's process %d is not running", again)
	}
	if err := set.Stop(ctx); err != nil || alive(again) {
		t.Fatalf("second stop: %v, process alive %v", err, alive(again))
	}
}

// StopOne (a restart of one resource) kills what is left of that
// resource only: the other resource's process lives on.
func TestStopOneKillsItsOwnCgroupOnly(t *testing.T) {
	env, _ := cgroupEnv(t)
	other := `sh -c '(setsid sh -c "echo \$\$ > other.pid; exec sleep 1000" >/dev/null 2>&1 &)'`
	rcs := []config.ResourceConfig{
		{RID: "app#a", Type: "app", Start: doubleForkStart, Stop: "true", Timeout: 10 * time.Second},
		{RID: "app#b", Type: "app", Start: other, Stop: "true", Timeout: 10 * time.Second},
	}
	set, err := NewSet(rcs, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := set.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := readPid(t, filepath.Join(env.VarDir, "escaped.pid"))
	b := readPid(t, filepath.Join(env.VarDir, "other.pid"))
	killGroupOf(t, a)
	killGroupOf(t, b)
	if err := set.StopOne(ctx, "app#a"); err != nil {
		t.Fatal(err)
	}
	if alive(a) {
		t.Errorf("app#a's process %d outlived its stop", a)
	}
	if !alive(b) {
		t.Errorf("app#b's process %d was killed by app#a's stop", b)
	}
}

// The checks run in the resource's cgroup too (a check that leaves a
// process behind leaves it there), and a stop that failed kills nothing.
func TestChecksRunInTheCgroupAndAFailedStopKillsNothing(t *testing.T) {
	env, _ := cgroupEnv(t)
	check := `sh -c 'cat /proc/self/cgroup > check.cgroup; exit 1'`
	rcs := []config.ResourceConfig{{RID: "app#web", Type: "app", Start: doubleForkStart, Stop: "false", Check: check, Timeout: 10 * time.Second}}
	set, err := NewSet(rcs, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	set.Status(ctx)
	b, err := os.ReadFile(filepath.Join(env.VarDir, "check.cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "/" + cgroup.Name("app#web") + "\n"; !endsWithLine(string(b), want) {
		t.Errorf("the check ran in %q, not in the resource's cgroup", b)
	}
	if err := set.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, filepath.Join(env.VarDir, "escaped.pid"))
	killGroupOf(t, pid)
	if err := set.Stop(ctx); err == nil {
		t.Fatal("a failing stop command succeeded")
	}
	if !alive(pid) {
		t.Errorf("a failed stop killed the instance's processes")
	}
}

func endsWithLine(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}
