package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/dataset"
	"haven/internal/clock"
	"haven/internal/paths"
)

type sdMsg struct {
	at    time.Time
	lines []string
}

func (m sdMsg) has(line string) bool {
	for _, l := range m.lines {
		if l == line {
			return true
		}
	}
	return false
}

// listenNotify is the service manager's end of the notify protocol: a unix
// datagram socket, named by NOTIFY_SOCKET for the daemon under test.
func listenNotify(t *testing.T, dir string) <-chan sdMsg {
	t.Helper()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", sock)
	ch := make(chan sdMsg, 1024)
	go func() {
		defer close(ch)
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			ch <- sdMsg{at: time.Now(), lines: strings.Split(strings.TrimSpace(string(buf[:n])), "\n")}
		}
	}()
	return ch
}

// awaitMsg returns the next message that has line, failing after the deadline;
// skipped holds the messages read meanwhile.
func awaitMsg(t *testing.T, ch <-chan sdMsg, line string, within time.Duration) (m sdMsg, skipped []sdMsg) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("notify socket closed while waiting for %s", line)
			}
			if m.has(line) {
				return m, skipped
			}
			skipped = append(skipped, m)
		case <-deadline:
			t.Fatalf("no %s within %s (got %v)", line, within, skipped)
		}
	}
}

// slowCheckService's check takes a second, then leaves a mark and says down.
const slowCheckService = `
[DEFAULT]
nodes = ["n1"]
orchestrate = "no"

[app.main]
start = "true"
stop = "true"
check = "sh -c 'sleep 1; touch {var}/checked; exit 1'"
`

// Under systemd (Type=notify) the daemon says READY=1 only once its API
// answers and the first check of every service has ended, pings the
// watchdog from its loop at half WATCHDOG_USEC, and says STOPPING=1 when it
// stops.
func TestSystemdNotifyReadyWatchdogStopping(t *testing.T) {
	dir := t.TempDir()
	msgs := listenNotify(t, dir)
	t.Setenv("WATCHDOG_USEC", "1000000") // a ping every 500ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	p := paths.New(filepath.Join(dir, "root"))
	for _, d := range []string{p.Etc, p.ServiceDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(p.NodeConf, "[node]\nname = \"n1\"\nguard = false\n") // no guard program beside the test's binary
	write(p.ServiceConf("web"), slowCheckService)
	marker := filepath.Join(p.ServiceVar("web"), "checked")

	d, err := New(Options{Paths: p, NewState: true}) // a config on disk, no state yet
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	ready, _ := awaitMsg(t, msgs, "READY=1", 30*time.Second)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("READY=1 before the first check of web ended: %v", err)
	}
	cl := api.NewClient(p.Socket)
	actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer acancel()
	if _, err := cl.DaemonStatus(actx); err != nil {
		t.Fatalf("READY=1 sent but the API does not answer: %v", err)
	}
	st, err := cl.Status(actx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Services["web"].Instances["n1"].Avail; got != dataset.StatusDown {
		t.Fatalf("at READY=1 web's instance is %q, want down (its check ran)", got)
	}
	if !ready.has("STATUS=running: node n1, 1 service") {
		t.Errorf("READY=1 message %q lacks the running status", ready.lines)
	}

	// the watchdog: pinged periodically, at about half WATCHDOG_USEC
	last := time.Time{}
	for i := 0; i < 3; i++ {
		m, _ := awaitMsg(t, msgs, "WATCHDOG=1", 20*time.Second)
		if !last.IsZero() && m.at.Sub(last) < 250*time.Millisecond {
			t.Fatalf("watchdog pings %s apart, want about 500ms", m.at.Sub(last))
		}
		last = m.at
	}

	// a wedged loop stops the pings (systemd would kill it), and they resume
	// when it turns again
	release := make(chan struct{})
	wedged := make(chan struct{})
	d.post(func() { close(wedged); <-release })
	<-wedged
	drain := time.After(600 * time.Millisecond) // a ping already in flight
	for draining := true; draining; {
		select {
		case <-msgs:
		case <-drain:
			draining = false
		}
	}
	quiet := time.After(2 * time.Second)
	for waiting := true; waiting; {
		select {
		case m := <-msgs:
			if m.has("WATCHDOG=1") {
				close(release)
				t.Fatal("WATCHDOG=1 while the event loop was wedged")
			}
		case <-quiet:
			waiting = false
		}
	}
	close(release)
	awaitMsg(t, msgs, "WATCHDOG=1", 20*time.Second)

	cancel()
	awaitMsg(t, msgs, "STOPPING=1", 20*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop")
	}
}

// Without WATCHDOG_USEC (no WatchdogSec in the unit) nothing pings, and a
// WATCHDOG_PID naming another process turns the pings off too.
func TestSystemdWatchdogInterval(t *testing.T) {
	for _, c := range []struct {
		usec, pid string
		want      time.Duration
	}{
		{"", "", 0},
		{"30000000", "", 15 * time.Second},
		{"30000000", strconv.Itoa(os.Getpid()), 15 * time.Second},
		{"30000000", strconv.Itoa(os.Getpid() + 1), 0},
		{"junk", "", 0},
	} {
		t.Setenv("WATCHDOG_USEC", c.usec)
		t.Setenv("WATCHDOG_PID", c.pid)
		if got := watchdogPeriod(); got != c.want {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: period %s, want %s", c.usec, c.pid, got, c.want)
		}
	}
}

// The log goes to the journal only when stderr is the stream that
// JOURNAL_STREAM names (a child whose stderr was redirected keeps its file).
func TestJournalStreamMatchesStderrOnly(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stream")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	other, err := os.CreateTemp(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	val := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	for _, c := range []struct {
		env  string
		f    *os.File
		want bool
	}{
		{val, f, true},
		{val, other, false},
		{"", f, false},
		{"garbage", f, false},
	} {
		if got := isJournalStream(c.env, c.f); got != c.want {
			t.Errorf("JOURNAL_STREAM=%q on %s: %v, want %v", c.env, c.f.Name(), got, c.want)
		}
	}
}

// Run by systemd (stderr is the journal stream) the daemon logs there only,
// with the syslog priority prefix and no timestamp; no line goes to node.log
// (which stays open for the crash output).
func TestJournalLoggerUnderSystemd(t *testing.T) {
	dir := t.TempDir()
	stream, err := os.Create(filepath.Join(dir, "stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(stream.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	saved := os.Stderr
	os.Stderr = stream
	defer func() { os.Stderr = saved }()

	nodeLog := filepath.Join(dir, "node.log")
	f, err := openNodeLog(nodeLog, false)
	if err != nil {
		t.Fatal(err)
	}
	log := newLogger(f, true, clock.Real{})
	log.Warn("peer maintenance grace ended", zap.String("node", "n2"))
	log.Sync()
	got, _ := os.ReadFile(stream.Name())
	if want := "<4>WARN\tdaemon\tpeer maintenance grace ended\t{\"node\": \"n2\"}\n"; string(got) != want {
		t.Errorf("journal line %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(nodeLog); len(b) > 0 {
		t.Errorf("node.log written under systemd: %q", b)
	}
}
