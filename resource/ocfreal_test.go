package resource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/resource/ocf"
)

// realAgent returns a driver of one of Debian's OCF agents, or skips the
// test when resource-agents is not installed (.ci/run installs it).
func realAgent(t *testing.T, name string, params map[string]string) (*ocfAgent, *logRec) {
	t.Helper()
	prov, typ, _ := config.ParseAgent(name)
	if err := (ocf.Agent{Root: ocf.DefaultRoot, Provider: prov, Type: typ}).Installed(); err != nil {
		t.Skipf("%v (apt-get install resource-agents)", err)
	}
	env, rec := testEnv(t)
	env.RscTmp = t.TempDir() // the agents' state files: the test's own
	rc := config.ResourceConfig{RID: "ocf#r", Type: "ocf", Name: "r", Agent: name, Params: params, Timeout: 30 * time.Second}
	drv, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	return drv.(*ocfAgent), rec
}

// TestOCFDummy: ocf:heartbeat:Dummy keeps its state in a file: start makes
// it, monitor reads it, stop removes it, a second stop succeeds.
func TestOCFDummy(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "dummy.state")
	o, rec := realAgent(t, "heartbeat:Dummy", map[string]string{"state": state})
	wantStatus(t, o, dataset.StatusDown, "")
	if err := o.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state file after start: %v", err)
	}
	wantStatus(t, o, dataset.StatusUp, "")
	// the resource dies behind Haven's back: the monitor says 7
	os.Remove(state)
	wantStatus(t, o, dataset.StatusDown, "")
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := o.Stop(ctx); err != nil {
			t.Fatalf("stop %d: %v", i+1, err)
		}
	}
	wantStatus(t, o, dataset.StatusDown, "")
	if start, stop, mon := o.Timeouts(ctx); start != 20*time.Second || stop != 20*time.Second || mon != 20*time.Second {
		t.Fatalf("timeouts %s %s %s, want Dummy's advised 20s", start, stop, mon)
	}
}

// TestOCFAnything: ocf:heartbeat:anything runs a long sleep as a daemon;
// stop kills it.
func TestOCFAnything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "sleep.pid")
	o, rec := realAgent(t, "heartbeat:anything", map[string]string{
		"binfile": "/bin/sleep", "cmdline_options": "1000", "pidfile": pidfile,
		"logfile": filepath.Join(dir, "out.log"), "errlogfile": filepath.Join(dir, "err.log"),
	})
	wantStatus(t, o, dataset.StatusDown, "")
	if err := o.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	pid := readPid(t, pidfile)
	killGroupOf(t, pid)
	if !alive(pid) {
		t.Fatalf("sleep %d not running", pid)
	}
	if b, _ := os.ReadFile("/proc/" + itoa(pid) + "/cmdline"); !strings.Contains(string(b), "1000") {
		t.Fatalf("pid %d is not the sleep: %q", pid, b)
	}
	wantStatus(t, o, dataset.StatusUp, "")
	if err := o.Stop(ctx); err != nil {
		t.Fatalf("stop: %v\n%s", err, rec)
	}
	eventually(t, 5*time.Second, "the sleep still runs after the stop", func() bool { return !alive(pid) })
	wantStatus(t, o, dataset.StatusDown, "")
	if err := o.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

// TestOCFFilesystem: ocf:heartbeat:Filesystem mounts an ext4 loop device,
// its monitor sees it, its stop unmounts it (twice: the second stop of a
// stopped resource succeeds); its advised timeouts are the defaults.
func TestOCFFilesystem(t *testing.T) {
	ctx := context.Background()
	dev := loopExt4(t)
	mnt := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	o, rec := realAgent(t, "heartbeat:Filesystem", map[string]string{"device": dev, "directory": mnt, "fstype": "ext4"})
	wantStatus(t, o, dataset.StatusDown, "")
	if err := o.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	if got := mountedOn(t, dev); len(got) != 1 || got[0] != mnt {
		t.Fatalf("%s mounted on %v, want %s", dev, got, mnt)
	}
	wantStatus(t, o, dataset.StatusUp, "")
	for i := 0; i < 2; i++ {
		if err := o.Stop(ctx); err != nil {
			t.Fatalf("stop %d: %v\n%s", i+1, err, rec)
		}
	}
	if got := mountedOn(t, dev); len(got) != 0 {
		t.Fatalf("%s still mounted on %v after the stop", dev, got)
	}
	wantStatus(t, o, dataset.StatusDown, "")
	if start, stop, mon := o.Timeouts(ctx); start != time.Minute || stop != time.Minute || mon != 40*time.Second {
		t.Fatalf("timeouts %s %s %s, want Filesystem's advised 1m 1m 40s", start, stop, mon)
	}
}
