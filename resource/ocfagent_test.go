package resource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/resource/ocf"
)

// fakeRoot is the OCF root of the fake agent (testdata/ocf/resource.d/haven/fake).
func fakeRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("testdata/ocf")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// fakeAgent returns a driver of the fake agent with its code directory.
func fakeAgent(t *testing.T, rc config.ResourceConfig) (*ocfAgent, string, *logRec) {
	t.Helper()
	env, rec := testEnv(t)
	env.OCFRoot = fakeRoot(t)
	env.MonitorInterval = 3 * time.Second
	dir := t.TempDir()
	if rc.RID == "" {
		rc.RID, rc.Type, rc.Name = "ocf#fake", "ocf", "fake"
	}
	if rc.Agent == "" {
		rc.Agent = "haven:fake"
	}
	if rc.Params == nil {
		rc.Params = map[string]string{}
	}
	if _, ok := rc.Params["dir"]; !ok {
		rc.Params["dir"] = dir
	}
	if rc.Timeout == 0 {
		rc.Timeout = 30 * time.Second
	}
	drv, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	return drv.(*ocfAgent), dir, rec
}

func setCode(t *testing.T, dir, action, code string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, action), []byte(code+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func severityOf(err error) string {
	var f interface{ Fault() (string, string) }
	if errors.As(err, &f) {
		_, sev := f.Fault()
		return sev
	}
	return ""
}

// TestOCFExitCodes: the exit codes of each action, read as Pacemaker
// reads them.
func TestOCFExitCodes(t *testing.T) {
	ctx := context.Background()
	monitor := []struct {
		code   string
		status dataset.Status
		fault  string
		reason string
	}{
		{"0", dataset.StatusUp, "", ""},
		{"7", dataset.StatusDown, "", ""},
		{"1", dataset.StatusDown, "", "OCF_ERR_GENERIC"},
		{"2", dataset.StatusDown, "hard", "OCF_ERR_ARGS"},
		{"3", dataset.StatusDown, "hard", "OCF_ERR_UNIMPLEMENTED"},
		{"4", dataset.StatusDown, "hard", "OCF_ERR_PERM"},
		{"5", dataset.StatusDown, "hard", "OCF_ERR_INSTALLED"},
		{"6", dataset.StatusDown, "fatal", "OCF_ERR_CONFIGURED"},
		{"8", dataset.StatusDown, "", "OCF_RUNNING_PROMOTED"},
		{"42", dataset.StatusDown, "", "not an OCF code"},
	}
	for _, m := range monitor {
		t.Run("monitor "+m.code, func(t *testing.T) {
			o, dir, _ := fakeAgent(t, config.ResourceConfig{})
			setCode(t, dir, "monitor", m.code)
			st, reason, fault := o.FaultStatus(ctx)
			if st != m.status || fault != m.fault || !strings.Contains(reason, m.reason) {
				t.Fatalf("monitor exit %s: got %s %q fault %q, want %s %q fault %q", m.code, st, reason, fault, m.status, m.reason, m.fault)
			}
		})
	}
	start := []struct {
		action, code string
		severity     string // "" for success
		want         string
	}{
		{"", "", "", ""}, // start 0, the monitor 0
		{"start", "1", "soft", "OCF_ERR_GENERIC"},
		{"start", "2", "hard", "this node cannot run it"},
		{"start", "5", "hard", "OCF_ERR_INSTALLED"},
		{"start", "6", "fatal", "not configured right"},
		{"start", "7", "soft", "OCF_NOT_RUNNING"},
		{"validate-all", "6", "fatal", "validate-all failed"},
		{"validate-all", "5", "hard", "validate-all failed"},
		// a start that says 0 while the monitor says 7: failed
		{"monitor", "7", "soft", "the monitor that confirms it says exit 7"},
	}
	for _, s := range start {
		t.Run(s.action+" "+s.code, func(t *testing.T) {
			o, dir, _ := fakeAgent(t, config.ResourceConfig{})
			if s.action != "" {
				setCode(t, dir, s.action, s.code)
			}
			err := o.Start(ctx)
			if s.severity == "" {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				return
			}
			if err == nil || severityOf(err) != s.severity || !strings.Contains(err.Error(), s.want) {
				t.Fatalf("%s exit %s: got %v (severity %q), want severity %s and %q", s.action, s.code, err, severityOf(err), s.severity, s.want)
			}
		})
	}
	t.Run("stop of a stopped resource", func(t *testing.T) {
		o, dir, rec := fakeAgent(t, config.ResourceConfig{})
		if err := o.Stop(ctx); err != nil {
			t.Fatalf("stop of a stopped resource: %v", err)
		}
		// an agent that breaks the rule: reported, taken as stopped
		setCode(t, dir, "stop", "1")
		if err := o.Stop(ctx); err != nil {
			t.Fatalf("stop exit 1 of a stopped resource: %v", err)
		}
		if !rec.has("AGENT BUG") {
			t.Fatalf("the broken rule is not reported:\n%s", rec)
		}
		// a failed stop of a running resource fails
		os.WriteFile(filepath.Join(dir, "running"), nil, 0o644)
		if err := o.Stop(ctx); err == nil || !strings.Contains(err.Error(), "stop failed: exit 1") {
			t.Fatalf("failed stop of a running resource: %v", err)
		}
	})
	t.Run("monitor timeout", func(t *testing.T) {
		o, dir, _ := fakeAgent(t, config.ResourceConfig{MonitorTimeout: 300 * time.Millisecond})
		os.WriteFile(filepath.Join(dir, "monitor.sleep"), []byte("5\n"), 0o644)
		st, reason, fault := o.FaultStatus(ctx)
		if st != dataset.StatusDown || fault != "" || !strings.Contains(reason, "monitor timed out after 300ms") {
			t.Fatalf("monitor timeout: %s %q %q, want down (soft)", st, reason, fault)
		}
	})
	t.Run("exit reason", func(t *testing.T) {
		o, dir, _ := fakeAgent(t, config.ResourceConfig{})
		os.WriteFile(filepath.Join(dir, "start.out"), []byte("ocf-exit-reason:the disk is gone\nsome other line\n"), 0o644)
		setCode(t, dir, "start", "1")
		if err := o.Start(ctx); err == nil || !strings.Contains(err.Error(), "the disk is gone") {
			t.Fatalf("start: %v, want the exit reason", err)
		}
	})
	t.Run("not installed", func(t *testing.T) {
		o, _, _ := fakeAgent(t, config.ResourceConfig{Agent: "haven:missing"})
		st, reason, fault := o.FaultStatus(ctx)
		if st != dataset.StatusDown || fault != "hard" || !strings.Contains(reason, "cannot run here") {
			t.Fatalf("missing agent: %s %q %q", st, reason, fault)
		}
		if err := o.Start(ctx); severityOf(err) != "hard" {
			t.Fatalf("start of a missing agent: %v", err)
		}
		if err := o.Stop(ctx); err != nil {
			t.Fatalf("stop of a missing agent: %v", err)
		}
	})
}

// TestOCFEnvironment: the OCF environment of an action, the probe before
// a start and the recurring monitor after.
func TestOCFEnvironment(t *testing.T) {
	ctx := context.Background()
	o, dir, _ := fakeAgent(t, config.ResourceConfig{Params: map[string]string{"color": "red"}})
	envOf := func(action string) map[string]string {
		b, err := os.ReadFile(filepath.Join(dir, "env."+action))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				m[k] = v
			}
		}
		return m
	}
	if st, _ := o.Status(ctx); st != dataset.StatusDown {
		t.Fatalf("status before start: %s", st)
	}
	if e := envOf("monitor"); e["OCF_RESKEY_CRM_meta_interval"] != "0" {
		t.Fatalf("the first monitor is no probe: interval %q", e["OCF_RESKEY_CRM_meta_interval"])
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e := envOf("start")
	want := map[string]string{
		"OCF_ROOT":                     fakeRoot(t),
		"OCF_FUNCTIONS_DIR":            fakeRoot(t) + "/lib/heartbeat",
		"OCF_RA_VERSION_MAJOR":         "1",
		"OCF_RA_VERSION_MINOR":         "1",
		"OCF_RESOURCE_INSTANCE":        "websvc-fake",
		"OCF_RESOURCE_TYPE":            "fake",
		"OCF_RESOURCE_PROVIDER":        "haven",
		"OCF_RESKEY_color":             "red",
		"OCF_RESKEY_dir":               dir,
		"OCF_RESKEY_CRM_meta_timeout":  "7000", // the agent's advice
		"OCF_RESKEY_CRM_meta_interval": "0",
		"OCF_RESKEY_CRM_meta_on_node":  "n1",
		"HA_RSCTMP":                    "/run/resource-agents",
		"OCF_TRACE_RA":                 "0",
		"HA_LOGFACILITY":               "none",
	}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("%s=%q, want %q", k, e[k], v)
		}
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if got := strings.Fields(string(calls)); strings.Join(got, " ") != "monitor validate-all start monitor" {
		t.Errorf("calls %v, want the probe, validate-all, start, and the monitor that confirms it", got)
	}
	if e := envOf("monitor"); e["OCF_RESKEY_CRM_meta_interval"] != "3000" || e["OCF_RESKEY_CRM_meta_timeout"] != "9000" {
		t.Errorf("the monitor after the start: interval %q timeout %q, want 3000 (monitor_interval) and 9000", e["OCF_RESKEY_CRM_meta_interval"], e["OCF_RESKEY_CRM_meta_timeout"])
	}
}

// TestOCFTimeouts: the agent's advised timeouts are the defaults; timeout
// and the per action keywords win over them.
func TestOCFTimeouts(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		rc                   config.ResourceConfig
		start, stop, monitor time.Duration
	}{
		{config.ResourceConfig{}, 7 * time.Second, 8 * time.Second, 9 * time.Second},
		{config.ResourceConfig{Timeout: 3 * time.Second, TimeoutSet: true}, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{config.ResourceConfig{Timeout: 3 * time.Second, TimeoutSet: true, StopTimeout: time.Minute}, 3 * time.Second, time.Minute, 3 * time.Second},
		{config.ResourceConfig{MonitorTimeout: 2 * time.Second}, 7 * time.Second, 8 * time.Second, 2 * time.Second},
	}
	for i, c := range cases {
		o, _, _ := fakeAgent(t, c.rc)
		start, stop, mon := o.Timeouts(ctx)
		if start != c.start || stop != c.stop || mon != c.monitor {
			t.Errorf("case %d: start %s stop %s monitor %s, want %s %s %s", i, start, stop, mon, c.start, c.stop, c.monitor)
		}
	}
}

// TestOCFRefused: promotable and clone agents are refused with what to do.
func TestOCFRefused(t *testing.T) {
	env, _ := testEnv(t)
	for _, a := range []string{"heartbeat:Stateful", "ocf:pacemaker:ping", "heartbeat:galera"} {
		_, err := New(config.ResourceConfig{RID: "ocf#x", Type: "ocf", Name: "x", Agent: a}, env)
		if err == nil || !strings.Contains(err.Error(), "failover service") {
			t.Errorf("%s: %v", a, err)
		}
	}
	if err := ocf.Refused(ocf.Agent{Provider: "heartbeat", Type: "mysql"}, nil); err != nil {
		t.Errorf("mysql runs as a primitive: %v", err)
	}
}

// TestOCFAdvisedTimeoutKills: the start timeout the agent advises is the
// time limit of its start: a start that outlasts it is killed there.
func TestOCFAdvisedTimeoutKills(t *testing.T) {
	t.Setenv("FAKE_START_TIMEOUT", "1s")
	o, dir, _ := fakeAgent(t, config.ResourceConfig{})
	// an agent file of its own: the meta-data of the shared one is cached
	// (by path, size and modification time) with the default advice
	b, err := os.ReadFile(o.agent.Path())
	if err != nil {
		t.Fatal(err)
	}
	o.agent.Root = t.TempDir()
	if err := os.MkdirAll(filepath.Dir(o.agent.Path()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.agent.Path(), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "start.sleep"), []byte("30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err = o.Start(context.Background())
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Fatalf("start: %v, want timed out after 1s", err)
	}
	if took > 10*time.Second {
		t.Fatalf("the start took %s: not killed at the advised 1s", took)
	}
}

// TestOCFStopLimit: the stop limit the quorum's budget counts is the one
// the driver gives the stop: the agent's advice unless the config says.
func TestOCFStopLimit(t *testing.T) {
	ctx := context.Background()
	rc := config.ResourceConfig{RID: "ocf#f", Type: "ocf", Name: "f", Agent: "haven:fake", Timeout: 30 * time.Second}
	if got := OCFStopLimit(ctx, rc, fakeRoot(t)); got != 8*time.Second {
		t.Errorf("advised: %s, want 8s", got)
	}
	rc.StopTimeout = time.Minute
	if got := OCFStopLimit(ctx, rc, fakeRoot(t)); got != time.Minute {
		t.Errorf("stop_timeout: %s, want 1m", got)
	}
	rc.StopTimeout = 0
	if got := OCFStopLimit(ctx, rc, t.TempDir()); got != 30*time.Second {
		t.Errorf("agent missing: %s, want the timeout 30s", got)
	}
}

// TestOCFLabelHidesSecrets: the label (published in the status) shows the
// parameters, but not the values of passwords and keys.
func TestOCFLabelHidesSecrets(t *testing.T) {
	o, dir, _ := fakeAgent(t, config.ResourceConfig{Params: map[string]string{"color": "red", "replication_passwd": "hunter2", "api_key": "k"}})
	want := "ocf:haven:fake api_key=*** color=red dir=" + dir + " replication_passwd=***"
	if l := o.Label(); l != want {
		t.Fatalf("label %q, want %q", l, want)
	}
}
