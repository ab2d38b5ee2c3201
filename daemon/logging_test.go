package daemon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"haven/internal/clock"
	"haven/internal/paths"
)

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func count(ls []string, sub string) int {
	n := 0
	for _, l := range ls {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// One client opening junk connections grew node.log by 17 MB in 10 s, one
// WARN each. Repeated WARNs are rate-limited and say how many were left
// out; INFO lines (decisions, state changes) never are.
func TestRepeatedWarningsAreRateLimitedAndDecisionsAreNot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.log")
	f, err := openNodeLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	log := newLogger(f, false, clk)
	for i := 0; i < 10000; i++ {
		log.Warn("heartbeat traffic rejected", zap.String("from", "10.0.0.9:4000"), zap.String("reason", "junk"))
		log.Info("decision", zap.String("svc", "web"), zap.Int("n", i))
	}
	ls := lines(t, path)
	warns := count(ls, "heartbeat traffic rejected")
	if max := logFirst + 10000/logThereafter; warns > max {
		t.Fatalf("10000 identical WARNs gave %d lines, want at most %d", warns, max)
	}
	if got := count(ls, "\tdecision\t"); got != 10000 {
		t.Fatalf("10000 INFO decisions gave %d lines, want all", got)
	}
	if count(ls, `"suppressed": 999`) == 0 {
		t.Fatalf("no line says how many WARNs were left out:\n%s", ls[len(ls)-1])
	}
	// a new period lets the message through again, with the count of
	// those left out since the last one written
	clk.Advance(logTick)
	log.Warn("heartbeat traffic rejected", zap.String("from", "10.0.0.9:4000"))
	ls = lines(t, path)
	if last := ls[len(ls)-1]; !strings.Contains(last, "heartbeat traffic rejected") {
		t.Fatalf("after a tick the WARN is written again; last line: %s", last)
	}
}

// logrotate moves node.log away and sends SIGHUP: the daemon writes a new
// node.log, and its crash output follows.
func TestNodeLogReopenWritesANewFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "node.log")
	f, err := openNodeLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	log := newLogger(f, false, clock.Real{})
	log.Info("before rotation")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	log.Info("still in the moved file")
	if err := f.reopen(); err != nil {
		t.Fatal(err)
	}
	log.Info("after rotation")
	old, cur := lines(t, path+".1"), lines(t, path)
	if count(old, "before rotation") != 1 || count(old, "still in the moved file") != 1 || count(old, "after rotation") != 0 {
		t.Fatalf("rotated file: %q", old)
	}
	if len(cur) != 1 || count(cur, "after rotation") != 1 {
		t.Fatalf("new node.log: %q", cur)
	}
}

const envCrashChild = "HAVEN_TEST_CRASH_CHILD"

// A panic in any goroutine (memberlist's included) reaches node.log, and
// the process exits with status 2 so that its supervisor restarts it. The
// child sets up its log through openNodeLog as `nodemgr daemon run` does
// (Options.CrashOutput) and panics in a goroutine of its own.
func TestPanicInAnyGoroutineReachesNodeLog(t *testing.T) {
	if path := os.Getenv(envCrashChild); path != "" {
		f, err := openNodeLog(path, true)
		if err != nil {
			os.Exit(3)
		}
		newLogger(f, false, clock.Real{}).Info("daemon started")
		go func() { panic("slice bounds out of range [:-59]") }()
		select {}
	}
	path := filepath.Join(t.TempDir(), "node.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicInAnyGoroutineReachesNodeLog$")
	cmd.Env = append(os.Environ(), envCrashChild+"="+path)
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("the panicking process: want exit status 2, got %v", err)
	}
	b, _ := os.ReadFile(path)
	log := string(b)
	for _, want := range []string{"daemon started", "panic: slice bounds out of range [:-59]", "goroutine ", "logging_test.go"} {
		if !strings.Contains(log, want) {
			t.Fatalf("node.log lacks %q:\n%s", want, log)
		}
	}
}

// Service log lines are stamped with the daemon's clock, not the wall
// clock.
func TestServiceLogStampsTheDaemonClock(t *testing.T) {
	p := paths.New(t.TempDir())
	if err := os.MkdirAll(filepath.Dir(p.ServiceLog("web")), 0o755); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	sl := newSvcLogs(p, clk)
	sl.write("web", "app#a", "started")
	sl.w.flush() // written off the loop
	if got, want := lines(t, p.ServiceLog("web"))[0], "2024-01-02T03:04:05.000Z app#a started"; got != want {
		t.Errorf("service log line %q, want %q", got, want)
	}
}

// The rate limit keeps an entry per message, not a fixed table: zap's
// sampler allocated 7 x 4096 counters (448 kB of the daemon's heap).
func TestLoggerIsSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.log")
	f, err := openNodeLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	log := newLogger(f, false, clk)
	runtime.ReadMemStats(&b)
	if n := b.TotalAlloc - a.TotalAlloc; n > 64<<10 {
		t.Errorf("newLogger allocated %d kB, want under 64 kB", n>>10)
	}
	log.Warn("one")
}

// Messages seen once are forgotten when many others come after their tick
// ended: the limiter does not grow with every distinct message.
func TestRateLimitForgetsOldMessages(t *testing.T) {
	r := &rateLimit{m: map[rateKey]*rateCount{}}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 * rateLimitPrune {
		at := t0.Add(time.Duration(i) * logTick / rateLimitPrune)
		if ok, _ := r.admit(zapcore.Entry{Level: zap.WarnLevel, Message: fmt.Sprintf("m%d", i), Time: at}); !ok {
			t.Fatalf("message %d, first of its kind, left out", i)
		}
	}
	if len(r.m) > 2*rateLimitPrune {
		t.Errorf("%d messages kept, want at most %d", len(r.m), 2*rateLimitPrune)
	}
}
