package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/internal/clock"
	"haven/resource"
)

// hookQueueLen bounds the events waiting for the hooks: beyond it, new
// ones are dropped for the hooks (counted and logged), never waited for.
const hookQueueLen = 256

// hookStopGrace is how long a stopping daemon waits for the queued hooks.
const hookStopGrace = 5 * time.Second

// hookJob is one run of one hook for one event.
type hookJob struct {
	hook config.Hook
	ev   api.Event
}

// hookRunner runs the [hook.NAME] commands of node.toml on the events
// they name, one at a time and in order, in its own goroutine: the loop
// only puts jobs in a bounded queue (enqueue never blocks).
type hookRunner struct {
	hooks []config.Hook
	queue chan hookJob
	log   *zap.Logger
	m     *metrics
	// env is the environment of the commands, before the event's.
	env []string

	mu      sync.Mutex
	dropped map[string]int // per hook, since the last drop was logged
	lastLog time.Time
	// clk rates the log of the drops (the daemon's clock; the wall
	// clock by default)
	clk  clock.Clock
	done chan struct{}
}

func newHookRunner(hooks []config.Hook, queueLen int, log *zap.Logger, m *metrics) *hookRunner {
	return &hookRunner{hooks: hooks, queue: make(chan hookJob, queueLen), log: log, m: m,
		env: resource.BaseEnv(), dropped: map[string]int{}, done: make(chan struct{}), clk: clock.Wall}
}

// enqueue queues the runs of the hooks that want ev; when the queue is
// full the event is dropped for them: counted, logged (at most once a
// second, with the number dropped since).
func (h *hookRunner) enqueue(ev api.Event) {
	if h == nil {
		return // a Daemon built by a test
	}
	for _, hk := range h.hooks {
		if !hk.Matches(ev.Kind) {
			continue
		}
		select {
		case h.queue <- hookJob{hook: hk, ev: ev}:
		default:
			h.m.hookDropped.WithLabelValues(hk.Name).Inc()
			h.noteDrop(hk.Name, ev.Kind)
		}
	}
}

func (h *hookRunner) noteDrop(hook, kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropped[hook]++
	now := h.clk.Now()
	if now.Sub(h.lastLog) < time.Second {
		return
	}
	h.lastLog = now
	for _, name := range sortedKeys(h.dropped) {
		h.log.Warn("hook queue full: events dropped for this hook (it runs too long or too many events match it)",
			zap.String("hook", name), zap.Int("dropped", h.dropped[name]), zap.String("event", kind),
			zap.Int("queue", cap(h.queue)))
	}
	h.dropped = map[string]int{}
}

// run executes the queued jobs until ctx ends (then the running command
// is killed and the queue left).
func (h *hookRunner) run(ctx context.Context) {
	defer close(h.done)
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-h.queue:
			if j.hook.Name == "" {
				return // stop's mark: the queue before it ran
			}
			h.runOne(ctx, j)
		}
	}
}

// stop lets the runs queued so far end (the daemon_stop event's
// included) within grace, then cancel kills the one running.
func (h *hookRunner) stop(cancel context.CancelFunc, grace time.Duration) {
	wait, done := context.WithTimeout(context.Background(), grace)
	defer done()
	select {
	case h.queue <- hookJob{}:
	case <-wait.Done():
	}
	select {
	case <-h.done:
	case <-wait.Done():
		h.log.Warn("hooks still running at the daemon's exit: killed", zap.Duration("grace", grace))
	}
	cancel()
	<-h.done
}

// runOne runs one hook on one event: the event as JSON on stdin and in
// HAVEN_EVENT_* variables; a failure or a timeout is logged.
func (h *hookRunner) runOne(ctx context.Context, j hookJob) {
	payload, _ := json.Marshal(j.ev)
	payload = append(payload, '\n')
	env := append(append([]string{}, h.env...), hookEnv(j.hook.Name, j.ev)...)
	start := clock.Wall.Now() // the run's duration, whatever the daemon's clock
	out, err := resource.Exec(ctx, j.hook.Command, j.hook.Timeout, env, payload)
	fields := []zap.Field{zap.String("hook", j.hook.Name), zap.String("event", j.ev.Kind),
		zap.String("svc", j.ev.Service), zap.Duration("took", clock.Since(clock.Wall, start).Round(time.Millisecond))}
	switch {
	case err != nil:
		h.m.hookRuns.WithLabelValues(j.hook.Name, "failed").Inc()
		h.log.Warn("hook failed: cannot run its command", append(fields, zap.Error(err))...)
	case out.TimedOut:
		h.m.hookRuns.WithLabelValues(j.hook.Name, "timeout").Inc()
		h.log.Warn("hook killed at its timeout (its whole process group)",
			append(fields, zap.Duration("timeout", j.hook.Timeout), zap.String("result", out.Describe))...)
	case !out.OK:
		h.m.hookRuns.WithLabelValues(j.hook.Name, "failed").Inc()
		h.log.Warn("hook failed", append(fields, zap.String("result", out.Describe))...)
	default:
		h.m.hookRuns.WithLabelValues(j.hook.Name, "ok").Inc()
		h.log.Debug("hook ran", fields...)
	}
}

// hookEnv are the variables a hook gets for ev (docs/operations.md):
// HAVEN_HOOK, HAVEN_EVENT_KIND, _NODE (the node that reports it),
// _SERVICE, _RID, _TIME, _MESSAGE, and each field of the event as
// HAVEN_EVENT_<FIELD> (a peer event's node as HAVEN_EVENT_PEER).
func hookEnv(hook string, ev api.Event) []string {
	vars := map[string]string{}
	for k, v := range ev.Fields {
		switch k {
		case "svc":
			continue
		case "node":
			k = "peer"
		}
		vars["HAVEN_EVENT_"+envName(k)] = v
	}
	vars["HAVEN_HOOK"] = hook
	vars["HAVEN_EVENT_KIND"] = ev.Kind
	vars["HAVEN_EVENT_NODE"] = ev.Node
	vars["HAVEN_EVENT_SERVICE"] = ev.Service
	vars["HAVEN_EVENT_RID"] = ev.RID
	vars["HAVEN_EVENT_TIME"] = ev.Time.UTC().Format(time.RFC3339Nano)
	vars["HAVEN_EVENT_MESSAGE"] = ev.Message
	out := make([]string, 0, len(vars))
	for _, k := range sortedKeys(vars) {
		out = append(out, k+"="+strings.ReplaceAll(vars[k], "\x00", ""))
	}
	return out
}

// envName upper-cases a field name, other characters than letters and
// digits as _.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}
