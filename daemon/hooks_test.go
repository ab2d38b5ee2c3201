package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"haven/api"
	"haven/config"
	"haven/test/testbed"
)

func newTestHooks(t *testing.T, queue int, hooks ...config.Hook) (*hookRunner, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	return newHookRunner(hooks, queue, zap.New(core), newMetrics("n1", "c", 1)), logs
}

var failoverEvent = api.Event{Time: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Kind: "failover", Node: "n2", Service: "web",
	Message: "failover: started here, it last ran on n1 (n1 down)",
	Fields:  map[string]string{"svc": "web", "from": "n1", "reason": "n1 down"}}

// metricValue is the value of the series of name with labels (name=value
// pairs) in m's registry, -1 when absent.
func metricValue(t *testing.T, m *metrics, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			if hasLabels(s, labels) {
				switch {
				case s.Counter != nil:
					return s.GetCounter().GetValue()
				case s.Gauge != nil:
					return s.GetGauge().GetValue()
				case s.Histogram != nil:
					return float64(s.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return -1
}

func hasLabels(s *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range s.GetLabel() {
			found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
		}
		if !found {
			return false
		}
	}
	return true
}

// A full queue drops new events for the hooks at once (never waits),
// counts them and logs it; what was queued still runs, in order.
func TestHookQueueFullDropsAndCounts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events")
	h, logs := newTestHooks(t, 2, config.Hook{Name: "rec", Events: []string{"*"},
		Command: "sh -c 'cat >> " + out + "'", Timeout: 5 * time.Second})
	began := time.Now()
	for i := 0; i < 5; i++ {
		ev := failoverEvent
		ev.Message = strconv.Itoa(i)
		h.enqueue(ev) // no runner yet: the queue (2) fills
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("enqueue took %s on a full queue, want no wait", d)
	}
	if got := metricValue(t, h.m, "haven_hook_dropped_total", "hook", "rec"); got != 3 {
		t.Fatalf("haven_hook_dropped_total %v, want 3", got)
	}
	if l := logs.FilterMessageSnippet("hook queue full").All(); len(l) != 1 || l[0].ContextMap()["dropped"] != int64(1) {
		t.Fatalf("got drop logs %+v, want one (rate-limited) naming the hook", l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go h.run(ctx)
	defer func() { h.stop(cancel, 5*time.Second) }()
	waitFor(t, 10*time.Second, "the 2 queued events run", func() bool {
		return metricValue(t, h.m, "haven_hook_runs_total", "hook", "rec", "result", "ok") == 2
	})
	b, _ := os.ReadFile(out)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev api.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdin not one JSON event a line: %q: %v", line, err)
		}
		msgs = append(msgs, ev.Message)
	}
	if strings.Join(msgs, ",") != "0,1" {
		t.Fatalf("ran %v, want the first two in order", msgs)
	}
}

// A hook that hangs is killed at its timeout with its whole process group
// (a background child too), and logged.
func TestHookTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	h, logs := newTestHooks(t, 4, config.Hook{Name: "hang", Events: []string{"failover"},
		Command: "sh -c 'sleep 600 & echo $! > " + pidFile + "; wait'", Timeout: 300 * time.Millisecond})
	began := time.Now()
	h.runOne(context.Background(), hookJob{hook: h.hooks[0], ev: failoverEvent})
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("the hook ran %s, want killed at its 300ms timeout", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitFor(t, 10*time.Second, "the hook's background child gone", func() bool { return gone(pid) })
	l := logs.FilterMessage("hook killed at its timeout (its whole process group)").All()
	if len(l) != 1 || l[0].ContextMap()["hook"] != "hang" || l[0].ContextMap()["event"] != "failover" {
		t.Fatalf("got logs %v, want the timeout logged with hook and event", logs.All())
	}
	if got := metricValue(t, h.m, "haven_hook_runs_total", "hook", "hang", "result", "timeout"); got != 1 {
		t.Fatalf("haven_hook_runs_total timeout %v, want 1", got)
	}
}

// gone reports whether pid has exited (a zombie counts: it runs no more).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// A failing hook is logged with its exit code and last line; one whose
// command cannot run too. The daemon goes on.
func TestHookFailureLogged(t *testing.T) {
	h, logs := newTestHooks(t, 4,
		config.Hook{Name: "bad", Events: []string{"*"}, Command: "sh -c 'echo oops; exit 3'", Timeout: 5 * time.Second},
		config.Hook{Name: "missing", Events: []string{"*"}, Command: "/nonexistent/hook", Timeout: 5 * time.Second})
	for _, hk := range h.hooks {
		h.runOne(context.Background(), hookJob{hook: hk, ev: failoverEvent})
	}
	l := logs.FilterMessage("hook failed").All()
	if len(l) != 1 || l[0].ContextMap()["result"] != "exit code 3: oops" || l[0].Level != zapcore.WarnLevel {
		t.Fatalf("got %v, want the failure with its exit code and last line", logs.All())
	}
	l = logs.FilterMessage("hook failed: cannot run its command").All()
	if len(l) != 1 || !strings.Contains(l[0].ContextMap()["error"].(string), "/nonexistent/hook") {
		t.Fatalf("got %v, want the command that cannot run named", logs.All())
	}
	if got := metricValue(t, h.m, "haven_hook_runs_total", "hook", "bad", "result", "failed"); got != 1 {
		t.Fatalf("haven_hook_runs_total failed %v, want 1", got)
	}
}

// The command gets the event as JSON on stdin and HAVEN_EVENT_* variables,
// not the daemon's NOTIFY_SOCKET.
func TestHookGetsEventOnStdinAndEnv(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
	dir := t.TempDir()
	h, _ := newTestHooks(t, 4, config.Hook{Name: "rec", Events: []string{"failover"},
		Command: "sh -c 'env > " + dir + "/env; cat > " + dir + "/stdin'", Timeout: 5 * time.Second})
	peer := api.Event{Kind: "peer_down", Node: "n2", Fields: map[string]string{"node": "n1", "from": "up", "to": "down"}}
	h.enqueue(peer) // not a kind of this hook
	h.enqueue(failoverEvent)
	if len(h.queue) != 1 {
		t.Fatalf("queued %d, want only the failover", len(h.queue))
	}
	h.runOne(context.Background(), <-h.queue)
	env := "\n" + readTestFile(t, filepath.Join(dir, "env"))
	for _, want := range []string{"HAVEN_HOOK=rec", "HAVEN_EVENT_KIND=failover", "HAVEN_EVENT_NODE=n2", "HAVEN_EVENT_SERVICE=web",
		"HAVEN_EVENT_FROM=n1", "HAVEN_EVENT_REASON=n1 down", "HAVEN_EVENT_TIME=2030-01-01T00:00:00Z",
		"HAVEN_EVENT_MESSAGE=failover: started here, it last ran on n1 (n1 down)"} {
		if !strings.Contains(env, "\n"+want+"\n") {
			t.Errorf("env lacks %s", want)
		}
	}
	if strings.Contains(env, "\nNOTIFY_SOCKET=") {
		t.Error("the hook inherited NOTIFY_SOCKET")
	}
	var got api.Event
	if err := json.Unmarshal([]byte(readTestFile(t, filepath.Join(dir, "stdin"))), &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "failover" || got.Service != "web" || got.Fields["from"] != "n1" || !got.Time.Equal(failoverEvent.Time) {
		t.Fatalf("stdin %+v", got)
	}
	// a peer event's node is the peer: HAVEN_EVENT_PEER
	if e := strings.Join(hookEnv("x", peer), "\n") + "\n"; !strings.Contains(e, "HAVEN_EVENT_PEER=n1\n") || !strings.Contains(e, "HAVEN_EVENT_NODE=n2\n") {
		t.Fatalf("peer event env:\n%s", e)
	}
}

func readTestFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := testbed.WaitFor(d, 20*time.Millisecond, what, cond); err != nil {
		t.Fatal(err)
	}
}
