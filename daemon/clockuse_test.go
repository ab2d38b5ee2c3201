package daemon

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"haven/internal/clock"
	"haven/internal/paths"
)

// The wait for a free body slot of the API reads time through
// the daemon's Clock: with a fake clock, "the daemon is busy" comes when
// the fake clock passes apiBodyTimeout, not after 5 s of wall time.
func TestAPIBodyWaitReadsTheClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newAPILimits(clk)
	for i := 0; i < maxBodies; i++ {
		l.bodies <- struct{}{} // every slot taken
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/x", strings.NewReader("{}"))
	done := make(chan bool, 1)
	go func() {
		var v map[string]any
		done <- l.decode(rec, req, &v)
	}()
	deadline := time.Now().Add(2 * time.Second) // well under apiBodyTimeout
	for {
		select {
		case ok := <-done:
			if ok || rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "the daemon is busy") {
				t.Fatalf("decode: %v, %d %s", ok, rec.Code, rec.Body)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the wait for a body slot did not end when the fake clock passed apiBodyTimeout (it reads the wall clock)")
		}
		clk.Advance(apiBodyTimeout)
		runtime.Gosched()
	}
}

// svcLogs.follow polls the log through the Clock: what is
// appended shows once the fake clock moves.
func TestServiceLogFollowReadsTheClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	p := paths.Paths{Log: dir}
	if err := os.MkdirAll(filepath.Dir(p.ServiceLog("web")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.ServiceLog("web"), []byte("old\nnew line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSvcLogs(p, clk)
	var out syncBuf
	stop := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		s.follow("web", 4, &out, func() {}, stop)
		close(ended)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "new line") {
		if time.Now().After(deadline) {
			close(stop)
			t.Fatal("follow did not read the log when the fake clock moved (it reads the wall clock)")
		}
		clk.Advance(200 * time.Millisecond)
		runtime.Gosched()
	}
	close(stop)
	clk.Advance(200 * time.Millisecond)
	<-ended
	if got := out.String(); got != "new line\n" {
		t.Fatalf("followed %q, want what came after the offset", got)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The daemon reads time and arms its timers through its Clock
// (clock.Clock: Now, After, NewTimer, NewTicker), never through package
// time directly, so that a test drives all of it with clock.Fake; what
// must be the wall clock (socket deadlines, the CPU time of a pass) says
// so with clock.Wall.
func TestDaemonReadsTimeThroughItsClock(t *testing.T) {
	direct := regexp.MustCompile(`\btime\.(Now|Since|Until|After|AfterFunc|NewTimer|NewTicker|Tick|Sleep)\(`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "//"); direct.MatchString(code) {
				t.Errorf("%s:%d: %s: use the daemon's clock (d.clk) or clock.Wall", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// The loop's tick timer and the driver's wake-up run on the daemon's
// clock: with a fake clock, the wake-up the driver arms fires when the
// clock passes it.
func TestWakeTimerReadsTheClock(t *testing.T) {
	d := loopDaemon(t)
	clk := d.clk.(*clock.Fake)
	effects{d}.ArmWake(clk.Now().Add(time.Second))
	select {
	case <-d.step:
		t.Fatal("the wake-up fired before its time")
	default:
	}
	clk.Advance(time.Second)
	select {
	case <-d.step:
	case <-time.After(5 * time.Second):
		t.Fatal("the wake-up did not fire when the fake clock passed it")
	}
}
