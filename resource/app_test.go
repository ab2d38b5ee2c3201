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
)

func newTestApp(t *testing.T, rc config.ResourceConfig, env Env) Driver {
	t.Helper()
	rc.Type = "app"
	if rc.RID == "" {
		rc.RID = "app#web"
	}
	d, err := New(rc, env)
	if err != nil {
		t.Fatalf("New(%+v) error %v", rc, err)
	}
	return d
}

func TestAppStartStopCheck(t *testing.T) {
	ctx := context.Background()
	env, rec := testEnv(t)
	start := script(t, "start", "echo starting web; echo oops >&2; touch running")
	stop := script(t, "stop", "rm -f running")
	check := script(t, "check", `[ -f running ] && { echo running; exit 0; }; echo "not running"; exit 1`)
	d := newTestApp(t, config.ResourceConfig{Start: start, Stop: stop, Check: check}, env)

	if got, reason := d.Status(ctx); got != dataset.StatusDown || reason != "not running" {
		t.Errorf("status before start = %q (%q), want down (not running)", got, reason)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got, _ := d.Status(ctx); got != dataset.StatusUp {
		t.Errorf("status after start = %q, want up", got)
	}
	for _, want := range []string{"app#web: start: " + start, "app#web: starting web", "app#web: oops"} {
		if !rec.has(want) {
			t.Errorf("log lacks %q; got:\n%s", want, rec)
		}
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got, _ := d.Status(ctx); got != dataset.StatusDown {
		t.Errorf("status after stop = %q, want down", got)
	}
	if got := d.Label(); got != start && !strings.HasSuffix(got, "…") {
		t.Errorf("Label() = %q, want %q or its shortened form", got, start)
	}
}

func TestAppCheckCodes(t *testing.T) {
	tests := []struct {
		name   string
		check  string // script body; "" for no check command
		want   dataset.Status
		reason string // a part of the reason
	}{
		{"exit 0", "echo fine; exit 0", dataset.StatusUp, "fine"},
		{"exit 1", "echo stopped; exit 1", dataset.StatusDown, "stopped"},
		{"exit 3", "echo half broken; exit 3", dataset.StatusWarn, "exit code 3: half broken"},
		{"killed", "kill -9 $$", dataset.StatusWarn, "killed by signal"},
		{"no check", "", dataset.StatusNA, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := testEnv(t)
			rc := config.ResourceConfig{}
			if tt.check != "" {
				rc.Check = script(t, "check", tt.check)
			}
			got, reason := newTestApp(t, rc, env).Status(context.Background())
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("Status() = %q (%q), want %q (containing %q)", got, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestAppCheckNotFound(t *testing.T) {
	env, _ := testEnv(t)
	rc := config.ResourceConfig{Check: filepath.Join(t.TempDir(), "missing")}
	got, reason := newTestApp(t, rc, env).Status(context.Background())
	if got != dataset.StatusWarn || !strings.Contains(reason, "no such file") {
		t.Errorf("Status() = %q (%q), want warn (no such file)", got, reason)
	}
}

func TestAppStartFailure(t *testing.T) {
	env, _ := testEnv(t)
	start := script(t, "start", "echo first; echo boom >&2; exit 4")
	err := newTestApp(t, config.ResourceConfig{Start: start}, env).Start(context.Background())
	if err == nil {
		t.Fatal("Start() = nil, want an error")
	}
	for _, want := range []string{"app#web", "exit code 4", "boom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start() error %q, want it to contain %q", err, want)
		}
	}
}

// A cause followed by blank lines (a trailing echo) is still the cause.
func TestAppStartFailureCauseBeforeBlankLines(t *testing.T) {
	env, _ := testEnv(t)
	start := script(t, "start", "echo 'port 80 in use' >&2; echo; printf '  \\n'; exit 5")
	err := newTestApp(t, config.ResourceConfig{Start: start}, env).Start(context.Background())
	if err == nil || !strings.HasSuffix(err.Error(), "exit code 5: port 80 in use") {
		t.Fatalf("Start() error %v, want it to end with the cause", err)
	}
}

func TestAppNoCommands(t *testing.T) {
	env, _ := testEnv(t)
	d := newTestApp(t, config.ResourceConfig{}, env)
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Errorf("Start() without command = %v, want nil", err)
	}
	if err := d.Stop(ctx); err != nil {
		t.Errorf("Stop() without command = %v, want nil", err)
	}
}

func TestAppEnvAndCwd(t *testing.T) {
	env, _ := testEnv(t)
	t.Setenv("HAVEN_TEST_INHERITED", "from-daemon")
	start := script(t, "start", `env | grep '^HAVEN_' | sort > env.txt; pwd -P > pwd.txt`)
	// Arguments with quotes reach the command as single words.
	check := script(t, "check", `[ "$1" = "a b" ] && [ "$2" = 'c"d' ] && [ "$HAVEN_ACTION" = check ] || exit 3`)
	d := newTestApp(t, config.ResourceConfig{RID: "app#db", Start: start, Check: check + ` "a b" 'c"d'`}, env)
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	fi, err := os.Stat(env.VarDir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("var dir %s: %v, %v; want a 0700 directory (private)", env.VarDir, fi, err)
	}
	b, err := os.ReadFile(filepath.Join(env.VarDir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HAVEN_ACTION=start", "HAVEN_NODENAME=n1", "HAVEN_RID=app#db", "HAVEN_SVCNAME=websvc", "HAVEN_TEST_INHERITED=from-daemon"} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("environment:\n%s\nwant it to contain %q", b, want)
		}
	}
	pwd, _ := os.ReadFile(filepath.Join(env.VarDir, "pwd.txt"))
	want, _ := filepath.EvalSymlinks(env.VarDir)
	if got := strings.TrimSpace(string(pwd)); got != want {
		t.Errorf("cwd = %q, want %q", got, want)
	}
	if got, reason := d.Status(context.Background()); got != dataset.StatusUp {
		t.Errorf("Status() with quoted args = %q (%q), want up", got, reason)
	}
}

// A timed-out action kills the whole process group, children included.
func TestAppTimeoutKillsGroup(t *testing.T) {
	tests := []struct {
		name string
		cmd  string
	}{
		{"dies on TERM", `sh -c 'sleep 1000 & echo $! > child.pid; wait'`},
		// The shell and its child ignore SIGTERM: SIGKILL after the grace.
		{"ignores TERM", `sh -c 'trap "" TERM; sleep 1000 & echo $! > child.pid; wait'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := testEnv(t)
			d := newTestApp(t, config.ResourceConfig{Start: tt.cmd, Timeout: 300 * time.Millisecond}, env)
			begin := time.Now()
			err := d.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "app#web") {
				t.Fatalf("Start() = %v, want a timeout error naming app#web", err)
			}
			if took := time.Since(begin); took > killGrace+2*time.Second {
				t.Errorf("Start() took %v, want about the timeout (+ %v grace at most)", took, killGrace)
			}
			pid := readPid(t, filepath.Join(env.VarDir, "child.pid"))
			killGroupOf(t, pid)
			eventually(t, 5*time.Second, "the child sleep survived the timeout", func() bool { return !alive(pid) })
		})
	}
}

// A start command that leaves a daemon holding stdout/stderr returns at
// once, and the daemon survives; its later output is still drained.
func TestAppBackgroundDaemon(t *testing.T) {
	env, rec := testEnv(t)
	start := `sh -c '(sleep 0.2; echo daemon says hi; exec sleep 1000) & echo $! > daemon.pid; echo launched'`
	d := newTestApp(t, config.ResourceConfig{Start: start, Timeout: 10 * time.Second}, env)
	begin := time.Now()
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("Start() took %v, want it to return when the command exits", took)
	}
	pid := readPid(t, filepath.Join(env.VarDir, "daemon.pid"))
	killGroupOf(t, pid)
	if !rec.has("launched") {
		t.Errorf("log lacks the start output; got:\n%s", rec)
	}
	eventually(t, 5*time.Second, "the daemon's output after start was not logged", func() bool { return rec.has("daemon says hi") })
	if !alive(pid) {
		t.Fatalf("daemon %d is gone after a successful start", pid)
	}
}

func TestAppInfo(t *testing.T) {
	env, _ := testEnv(t)
	info := script(t, "info", `echo "version 1.2"; echo "action $HAVEN_ACTION"`)
	d := newTestApp(t, config.ResourceConfig{Info: info}, env)
	inf, ok := d.(Informer)
	if !ok {
		t.Fatal("the app driver is not an Informer")
	}
	lines, err := inf.Info(context.Background())
	if err != nil || strings.Join(lines, "|") != "version 1.2|action info" {
		t.Errorf("Info() = %q, %v; want [version 1.2, action info], nil", lines, err)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		rc   config.ResourceConfig
		want string
	}{
		{"unknown type", config.ResourceConfig{RID: "disk#x", Type: "disk"}, `unknown resource type "disk"`},
		{"fs without dev", config.ResourceConfig{RID: "fs#x", Type: "fs", Mnt: "/srv", FSType: "ext4"}, "fs#x: dev is required"},
		{"bad quoting", config.ResourceConfig{RID: "app#x", Type: "app", Start: `sh -c 'echo`}, "app#x: start: unbalanced single quote"},
		{"ip without ipname", config.ResourceConfig{RID: "ip#x", Type: "ip", IPDev: "eth0"}, "ipname is required"},
		{"ip without ipdev", config.ResourceConfig{RID: "ip#x", Type: "ip", IPName: "10.0.0.1"}, "ipdev is required"},
		{"ip hostname", config.ResourceConfig{RID: "ip#x", Type: "ip", IPName: "web.example", IPDev: "eth0"}, "not an IP address"},
		{"ip bad prefix", config.ResourceConfig{RID: "ip#x", Type: "ip", IPName: "10.0.0.1", IPDev: "eth0", Netmask: "33"}, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.rc, Env{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A check a little over a minute after the last (the default
// check_interval) still runs the program found then: the lookup is kept
// for checkLookup, not looked up again at every check; a program put
// earlier in PATH meanwhile is used once checkLookup passed.
func TestAppCheckLookupOutlivesTheInterval(t *testing.T) {
	dir1, dir2, write := checkPath(t)
	write(dir2, "exit 0")
	env, _ := testEnv(t)
	d := newTestApp(t, config.ResourceConfig{Check: "mycheck"}, env)
	ctx := context.Background()
	if st, r := d.Status(ctx); st != dataset.StatusUp {
		t.Fatalf("first check: %s (%s), want up", st, r)
	}
	write(dir1, "exit 1") // found first in PATH from now on
	a := d.(*app)
	age := func(by time.Duration) {
		a.mu.Lock()
		a.check.at = a.check.at.Add(-by)
		a.mu.Unlock()
	}
	age(61 * time.Second)
	if st, r := d.Status(ctx); st != dataset.StatusUp {
		t.Fatalf("check 61s later: %s (%s), want up (the program found at the lookup)", st, r)
	}
	age(checkLookup)
	if st, r := d.Status(ctx); st != dataset.StatusDown {
		t.Fatalf("check once checkLookup passed: %s (%s), want down (the program now first in PATH)", st, r)
	}
}

// A check's {var} removed between two checks is made again by the next,
// which reports the command's own result (run in it).
func TestAppCheckVarDirRemoved(t *testing.T) {
	env, _ := testEnv(t)
	d := newTestApp(t, config.ResourceConfig{Check: "touch x"}, env)
	ctx := context.Background()
	for i := range 2 {
		if st, r := d.Status(ctx); st != dataset.StatusUp {
			t.Fatalf("check %d: %s (%s), want up", i+1, st, r)
		}
		if err := os.RemoveAll(env.VarDir); err != nil {
			t.Fatal(err)
		}
	}
	if st, r := d.Status(ctx); st != dataset.StatusUp {
		t.Fatalf("check after {var} was removed: %s (%s), want up", st, r)
	}
	if _, err := os.Stat(filepath.Join(env.VarDir, "x")); err != nil {
		t.Fatalf("the check did not run in {var} made again: %v", err)
	}
}

// A link planted as a check's {var} after checks ran there is not
// followed by the next check (docs/security.md): the check is not run
// and says why; nothing is written where the link points.
func TestAppCheckVarDirLinkPlantedLater(t *testing.T) {
	env, _ := testEnv(t)
	d := newTestApp(t, config.ResourceConfig{Check: "touch x"}, env)
	ctx := context.Background()
	if st, r := d.Status(ctx); st != dataset.StatusUp {
		t.Fatalf("first check: %s (%s), want up", st, r)
	}
	elsewhere := t.TempDir()
	if err := os.RemoveAll(env.VarDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, env.VarDir); err != nil {
		t.Fatal(err)
	}
	st, r := d.Status(ctx)
	if st != dataset.StatusWarn || !strings.Contains(r, "symbolic link") {
		t.Fatalf("check with {var} a link: %s (%s), want warn naming the link", st, r)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "x")); err == nil {
		t.Fatal("the check ran where the link points")
	}
}

// checkPath makes PATH two empty directories, and write puts a "mycheck"
// shell script with body in one of them.
func checkPath(t *testing.T) (dir1, dir2 string, write func(dir, body string)) {
	dir1, dir2 = t.TempDir(), t.TempDir()
	t.Setenv("PATH", dir1+":"+dir2)
	return dir1, dir2, func(dir, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "mycheck"), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
