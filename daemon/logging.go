package daemon

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"haven/internal/clock"
	"haven/internal/fsutil"
	"haven/internal/paths"
)

// Rate limit of the node log (docs/operations.md, "Logs"): a WARN or
// ERROR message (same level and text, whatever its fields) is written
// logFirst times per logTick, then once every logThereafter; the line
// that gets through says how many were left out (suppressed=N). INFO lines
// (decisions, state changes) are never sampled.
const (
	logTick       = 10 * time.Second
	logFirst      = 50
	logThereafter = 1000
)

// nodeLog is the node log file. reopen opens its path again: after
// logrotate moved it away, SIGHUP makes the daemon write a new one.
type nodeLog struct {
	path string
	// crash also points the process's crash output (panics and fatal
	// errors of any goroutine) at the file.
	crash bool
	mu    sync.Mutex
	f     *os.File
}

// openNodeLog opens path for appending. With crash, an unrecovered panic
// anywhere in the process is written to it (as well as to stderr) before
// the process exits with status 2.
func openNodeLog(path string, crash bool) (*nodeLog, error) {
	l := &nodeLog{path: path, crash: crash}
	if err := l.reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *nodeLog) reopen() error {
	// never through a link planted in the log directory
	f, err := fsutil.OpenAppendBeneath(filepath.Dir(l.path), filepath.Base(l.path))
	if err != nil {
		return fmt.Errorf("open node log: %w", err)
	}
	if l.crash {
		// the runtime keeps its own duplicate of the descriptor
		if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
			f.Close()
			return fmt.Errorf("crash output to %s: %w", l.path, err)
		}
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

func (l *nodeLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(b)
}

func (l *nodeLog) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Sync()
}

// zapClock gives zap (entry times, so the rate limit's ticks) the daemon's clock.
type zapClock struct{ clock.Clock }

// NewTicker is zap's (its Clock interface wants a *time.Ticker, which
// clock.Clock cannot make); only zap's buffered writer uses it, and the
// daemon has none: its rate limit reads the entry times, from the clock.
func (zapClock) NewTicker(d time.Duration) *time.Ticker { return clock.StdTicker(d) }

// rateLimit is the node log's rate limit of WARN and ERROR lines, per
// level and message: logFirst lines per logTick, then one every
// logThereafter; the line written after some were left out says how many
// (suppressed=N). It keeps one small entry per message seen (zap's own
// sampler keeps a table of 7 x 4096 counters, 448 kB of the daemon's
// heap, docs/benchmarks.md "Memory").
type rateLimit struct {
	mu sync.Mutex
	m  map[rateKey]*rateCount
}

type rateKey struct {
	lv  zapcore.Level
	msg string
}

type rateCount struct {
	resetAt time.Time
	n       int64 // lines in this tick
	left    int64 // left out since the last one written
}

// rateLimitPrune is the number of messages kept beyond which those whose
// tick ended (and with nothing left out to report) are forgotten.
const rateLimitPrune = 256

// admit says whether the line e may be written, and how many of the same
// were left out since the last one written.
func (r *rateLimit) admit(e zapcore.Entry) (bool, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := rateKey{e.Level, e.Message}
	c := r.m[k]
	if c == nil {
		if len(r.m) >= rateLimitPrune {
			for k, c := range r.m {
				if !e.Time.Before(c.resetAt) && c.left == 0 {
					delete(r.m, k)
				}
			}
		}
		c = &rateCount{}
		r.m[k] = c
	}
	if !e.Time.Before(c.resetAt) {
		c.resetAt, c.n = e.Time.Add(logTick), 0
	}
	c.n++
	if c.n > logFirst && (c.n-logFirst)%logThereafter != 0 {
		c.left++
		return false, 0
	}
	left := c.left
	c.left = 0
	return true, left
}

// limitedCore writes the lines rateLimit admits, with suppressed=N on a
// line that follows left-out ones.
type limitedCore struct {
	zapcore.Core
	r *rateLimit
}

func (c limitedCore) With(f []zapcore.Field) zapcore.Core {
	return limitedCore{c.Core.With(f), c.r}
}

func (c limitedCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c limitedCore) Write(e zapcore.Entry, f []zapcore.Field) error {
	ok, left := c.r.admit(e)
	if !ok {
		return nil
	}
	if left > 0 {
		f = append(f, zap.Int64("suppressed", left))
	}
	return c.Core.Write(e, f)
}

// newLogger logs human-readable lines to the node log (and stderr), with
// repeated WARN and ERROR lines rate-limited.
func newLogger(l *nodeLog, stderr bool, clk clock.Clock) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	ws := zapcore.WriteSyncer(l)
	if stderr {
		ws = zapcore.NewMultiWriteSyncer(ws, zapcore.Lock(os.Stderr))
	}
	if stderr && stderrIsJournal() {
		// run by systemd: the journal only (notify.go)
		enc, ws = journalEncoding(), zapcore.Lock(os.Stderr)
	}
	sampled := func(lv zapcore.Level) bool { return lv == zap.WarnLevel || lv == zap.ErrorLevel }
	always := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), ws,
		zap.LevelEnablerFunc(func(lv zapcore.Level) bool { return lv >= zap.InfoLevel && !sampled(lv) }))
	rated := limitedCore{zapcore.NewCore(zapcore.NewConsoleEncoder(enc), ws, zap.LevelEnablerFunc(sampled)), &rateLimit{m: map[rateKey]*rateCount{}}}
	return zap.New(zapcore.NewTee(always, rated), zap.WithClock(zapClock{clk})).Named("daemon")
}

// ReopenLogs opens the node log again (SIGHUP, after logrotate moved it).
// Service logs need nothing: each line opens its file. Safe from any
// goroutine.
func (d *Daemon) ReopenLogs() {
	if err := d.logFile.reopen(); err != nil {
		d.log.Error("reopen node log", zap.Error(err))
		return
	}
	d.log.Info("node log reopened", zap.String("file", d.logFile.path))
}

// svcLogs appends the output of resource commands and the daemon's
// messages about a service to R/log/services/NAME.log. The lines are
// written off the event loop, in order, by one writer (svclogwriter.go):
// write only queues them.
type svcLogs struct {
	p   paths.Paths
	clk clock.Clock
	w   *lineWriter
}

func newSvcLogs(p paths.Paths, clk clock.Clock) *svcLogs {
	s := &svcLogs{p: p, clk: clk}
	s.w = newLineWriter(s.append, func(n int) string {
		return s.line("-", fmt.Sprintf("%d lines of this log were lost: the disk did not keep up", n))
	})
	return s
}

// write queues a line; the time is the time of the call.
func (s *svcLogs) write(svc, rid, line string) {
	if rid == "" {
		rid = "-"
	}
	s.w.queue(svc, s.line(rid, line))
}

func (s *svcLogs) line(rid, line string) string {
	return fmt.Sprintf("%s %s %s\n", s.clk.Now().Format("2006-01-02T15:04:05.000Z07:00"), rid, line)
}

// append writes lines to the log of svc (on the writer's goroutine).
func (s *svcLogs) append(svc string, lines []byte) error {
	// never through a link planted in R/log/services (or at services/)
	rel, err := filepath.Rel(s.p.Log, s.p.ServiceLog(svc))
	if err != nil {
		return err
	}
	f, err := fsutil.OpenAppendBeneath(s.p.Log, rel)
	if err != nil {
		return err
	}
	_, err = f.Write(lines)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tail returns the last n lines of a service's log (every line when n < 0).
func (s *svcLogs) tail(svc string, n int) ([]byte, int64, error) {
	s.w.flush() // what was queued before the call is in the file
	f, err := fsutil.OpenNoFollow(s.p.ServiceLog(svc))
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, err
	}
	size := int64(len(b))
	if n >= 0 {
		lines := bytes.SplitAfter(b, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		b = bytes.Join(lines, nil)
	}
	return b, size, nil
}

// follow writes what is appended to the log from offset on until done.
func (s *svcLogs) follow(svc string, off int64, w io.Writer, flush func(), done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-s.clk.After(200 * time.Millisecond):
		}
		f, err := fsutil.OpenNoFollow(s.p.ServiceLog(svc))
		if err != nil {
			continue
		}
		st, err := f.Stat()
		if err == nil && st.Size() < off {
			off = 0 // truncated or rotated
		}
		if err == nil && st.Size() > off {
			f.Seek(off, io.SeekStart)
			r := bufio.NewReader(io.LimitReader(f, st.Size()-off))
			n, _ := io.Copy(w, r)
			off += n
			flush()
		}
		f.Close()
	}
}
