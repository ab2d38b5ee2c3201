package resource

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"time"
)

// liveRec collects the lines run gives to command.live.
type liveRec struct {
	mu    sync.Mutex
	lines []string
}

func (l *liveRec) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *liveRec) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *liveRec) has(s string) bool {
	for _, x := range l.get() {
		if x == s {
			return true
		}
	}
	return false
}

// openFDs is the number of this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// shRun runs sh -c script with run.
func shRun(ctx context.Context, script string, timeout time.Duration, live func(string)) (runResult, error) {
	return run(ctx, command{argv: []string{"sh", "-c", script}, action: "test", timeout: timeout, keep: 20, live: live})
}

// Output: stdout and stderr in one stream, line by line, \r\n and \n ends
// dropped, a last line without an end kept, long lines cut at maxLine, the
// last keep lines in the result, every line to live in order.
func TestRunOutputLines(t *testing.T) {
	long := strings.Repeat("x", maxLine+100)
	script := `printf 'one\r\ntwo\n'; echo err >&2; printf '%s\n' "` + long + `"; printf 'a\rb\n'; printf 'tail'`
	var live liveRec
	res, err := run(context.Background(), command{argv: []string{"sh", "-c", script}, action: "test",
		timeout: 10 * time.Second, keep: 3, live: live.add})
	if err != nil || res.code != 0 {
		t.Fatalf("run = %+v, %v", res, err)
	}
	want := []string{"one", "two", "err", long[:maxLine], "a\rb", "tail"}
	if got := live.get(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("live got %.80q, want %.80q", got, want)
	}
	if got := res.lines; strings.Join(got, "|") != strings.Join(want[3:], "|") {
		t.Errorf("result lines %.80q, want the last 3 %.80q", got, want[3:])
	}
}

// The line splitter cuts any chunking of the output exactly as
// bufio.Reader.ReadLine with a maxLine buffer did (the reference below).
func TestRunSplitsAsReadLine(t *testing.T) {
	inputs := []string{
		"", "\n", "\r\n", "a", "a\n", "a\r", "a\r\n", "\r\r\n", "a\n\nb\r\n\r\nc",
		strings.Repeat("x", maxLine-1) + "\r\n" + "y\n",
		strings.Repeat("x", maxLine) + "\r\n" + "y\n",
		strings.Repeat("x", maxLine+1) + "\r\n" + "y",
		strings.Repeat("x", maxLine-1) + "\rz\n",
		strings.Repeat("x", maxLine-1) + "\r",
		strings.Repeat("x", 3*maxLine+7) + "\n" + strings.Repeat("w", 2*maxLine-1) + "\r\n",
	}
	for _, in := range inputs {
		want := refReadLines(in)
		for _, size := range []int{1, 2, 3, 7, 100, maxLine - 1, maxLine, maxLine + 1, 1 << 16} {
			var got []string
			s := lineSplitter{emit: func(l string) { got = append(got, l) }}
			for b := []byte(in); len(b) > 0; {
				n := min(size, len(b))
				s.feed(b[:n])
				b = b[n:]
			}
			s.end()
			if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Errorf("input %.20q (%d bytes) in chunks of %d: got %d lines %.60q, want %d %.60q",
					in, len(in), size, len(got), got, len(want), want)
			}
		}
	}
}

// refReadLines is how run split its output before (bufio.ReadLine).
func refReadLines(in string) []string {
	br := bufio.NewReaderSize(strings.NewReader(in), maxLine)
	var out []string
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 && len(buf) < maxLine {
			n := min(len(chunk), maxLine-len(buf))
			buf = append(buf, chunk[:n]...)
		}
		if err != nil {
			if len(buf) > 0 {
				out = append(out, string(buf))
			}
			return out
		}
		if !isPrefix {
			out = append(out, string(buf))
			buf = buf[:0]
		}
	}
}

// A command that exits while a background child still holds its output:
// run returns outputGrace after the exit, not before and not much later,
// without killing the child; the child's later lines still reach live,
// and the draining ends when the child closes the output.
func TestRunBackgroundHolder(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	g0 := runtime.NumGoroutine()
	var live liveRec
	begin := time.Now()
	res, err := shRun(context.Background(),
		`(sleep 0.5; echo late; exec sleep 1000) & echo $! > `+pidFile+`; echo early`, 10*time.Second, live.add)
	took := time.Since(begin)
	if err != nil || res.code != 0 || res.timedOut || strings.Join(res.lines, "|") != "early" {
		t.Fatalf("run = %+v, %v; want exit 0 with the line early", res, err)
	}
	if took < outputGrace || took > outputGrace+time.Second {
		t.Errorf("run took %v, want about outputGrace (%v) after the exit", took, outputGrace)
	}
	pid := readPid(t, pidFile)
	killGroupOf(t, pid)
	eventually(t, 5*time.Second, "the child's later line did not reach live", func() bool { return live.has("late") })
	if !alive(pid) {
		t.Fatalf("the background child %d died", pid)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, 5*time.Second, "a goroutine stayed behind after the child closed the output", func() bool {
		return runtime.NumGoroutine() <= g0
	})
}

// A timed-out group whose leader ignores SIGTERM gets SIGKILL after
// killGrace, its children too; the result says timed out.
func TestRunTimeoutKillsStubbornGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	type ran struct {
		res runResult
		err error
	}
	done := make(chan ran, 1)
	begin := time.Now()
	go func() {
		res, err := shRun(context.Background(),
			`trap "" TERM; sleep 1000 & echo $! > `+pidFile+`; echo started; wait; wait`, 300*time.Millisecond, nil)
		done <- ran{res, err}
	}()
	pid := readPid(t, pidFile)
	killGroupOf(t, pid)
	var r ran
	select {
	case r = <-done:
	case <-time.After(300*time.Millisecond + killGrace + 5*time.Second):
		t.Fatalf("run still waits %v after the timeout and killGrace: the group was not killed", time.Since(begin))
	}
	took := time.Since(begin)
	if r.err != nil || !r.res.timedOut || r.res.canceled || r.res.signal != "killed" {
		t.Fatalf("run = %+v, %v; want timed out, the leader killed by SIGKILL", r.res, r.err)
	}
	if took < 300*time.Millisecond+killGrace {
		t.Errorf("run took %v, want the timeout + killGrace (%v)", took, killGrace)
	}
	if strings.Join(r.res.lines, "|") != "started" {
		t.Errorf("lines %q, want [started]", r.res.lines)
	}
	eventually(t, 5*time.Second, "the child survived", func() bool { return !alive(pid) })
}

// A timed-out group whose leader dies of SIGTERM while a child ignores it:
// the group gets SIGKILL once the leader is reaped, without waiting for
// killGrace.
func TestRunTimeoutKillsChildIgnoringTERM(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	begin := time.Now()
	res, err := shRun(context.Background(),
		`(trap "" TERM; exec sleep 1000) & echo $! > `+pidFile+`; wait`, 300*time.Millisecond, nil)
	took := time.Since(begin)
	if err != nil || !res.timedOut || res.signal != "terminated" {
		t.Fatalf("run = %+v, %v; want timed out, the leader ended by SIGTERM", res, err)
	}
	if took > 300*time.Millisecond+killGrace {
		t.Errorf("run took %v, want it soon after the timeout", took)
	}
	pid := readPid(t, pidFile)
	killGroupOf(t, pid)
	eventually(t, 5*time.Second, "the child ignoring SIGTERM survived its group's timeout", func() bool { return !alive(pid) })
}

// A command writing without pause still times out: reading its output
// does not keep run from its deadline.
func TestRunTimeoutWhileWriting(t *testing.T) {
	done := make(chan runResult, 1)
	go func() {
		res, _ := run(context.Background(), command{argv: []string{"yes"}, action: "test",
			timeout: 300 * time.Millisecond, keep: 2})
		done <- res
	}()
	select {
	case res := <-done:
		if !res.timedOut || strings.Join(res.lines, "|") != "y|y" {
			t.Errorf("run = %+v, want timed out, the last lines y", res)
		}
	case <-time.After(killGrace + 10*time.Second):
		t.Fatalf("run of yes still running long after its timeout")
	}
}

// A canceled context ends the command at once (SIGTERM to the group) and
// the result says canceled, not timed out.
func TestRunCanceled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	begin := time.Now()
	res, err := shRun(ctx, `sleep 1000 & echo $! > `+pidFile+`; wait`, 5*time.Second, nil)
	took := time.Since(begin)
	if err != nil || !res.canceled || res.timedOut || res.signal != "terminated" {
		t.Fatalf("run = %+v, %v; want canceled, the leader ended by SIGTERM", res, err)
	}
	if took > 300*time.Millisecond+killGrace {
		t.Errorf("run took %v after a cancel at 300ms, want it at once", took)
	}
	pid := readPid(t, pidFile)
	killGroupOf(t, pid)
	eventually(t, 5*time.Second, "the child survived", func() bool { return !alive(pid) })

	// a context canceled before the start: canceled at once too
	begin = time.Now()
	res, err = shRun(ctx, `sleep 1000`, 5*time.Second, nil)
	if err != nil || !res.canceled || time.Since(begin) > killGrace {
		t.Fatalf("run with a canceled context = %+v, %v after %v; want canceled at once", res, err, time.Since(begin))
	}
}

// Exit codes and signals are in the result; a command that cannot be run
// is an error.
func TestRunEndings(t *testing.T) {
	res, err := shRun(context.Background(), `exit 7`, 10*time.Second, nil)
	if err != nil || res.code != 7 || res.signal != "" {
		t.Errorf("exit 7: %+v, %v", res, err)
	}
	res, err = shRun(context.Background(), `kill -9 $$`, 10*time.Second, nil)
	if err != nil || res.code != -1 || res.signal != "killed" {
		t.Errorf("kill -9: %+v, %v; want signal killed", res, err)
	}
	notExec := filepath.Join(t.TempDir(), "notexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ argv0, want string }{
		{filepath.Join(t.TempDir(), "missing"), "no such file"},
		{notExec, "permission denied"},
		{"no-such-program-here", "executable file not found"},
	} {
		_, err := run(context.Background(), command{argv: []string{c.argv0}, action: "test", timeout: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %s: %v, want an error with %q", c.argv0, err, c.want)
		}
	}
	_, err = run(context.Background(), command{cmdline: "'unterminated", action: "test"})
	if err == nil {
		t.Errorf("a bad command line ran")
	}
}

// stdin is given to a command that reads it; a command that does not read
// it is not waited for (the input is larger than a pipe holds).
func TestRunStdin(t *testing.T) {
	res, err := run(context.Background(), command{argv: []string{"cat"}, action: "test", timeout: 10 * time.Second,
		keep: 5, stdin: []byte("hello\nworld\n")})
	if err != nil || res.code != 0 || strings.Join(res.lines, "|") != "hello|world" {
		t.Errorf("cat: %+v, %v", res, err)
	}
	begin := time.Now()
	res, err = run(context.Background(), command{argv: []string{"true"}, action: "test", timeout: 10 * time.Second,
		stdin: make([]byte, 4<<20)})
	if err != nil || res.code != 0 || time.Since(begin) > 5*time.Second {
		t.Errorf("true with 4 MiB of input unread: %+v, %v after %v", res, err, time.Since(begin))
	}
}

// The environment is the command's whole environment, a later duplicate
// winning as with os/exec (in the place of the last); the command runs in
// dir.
func TestRunEnvAndDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "var", "services", "svc")
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), command{argv: []string{"env"}, action: "test",
		timeout: 10 * time.Second, keep: 5, env: []string{"A=1", "B=2", "A=3"}})
	if err != nil || strings.Join(res.lines, "|") != "B=2|A=3" {
		t.Errorf("env: %+v, %v; want [B=2 A=3]", res, err)
	}
	res, err = run(context.Background(), command{argv: []string{"pwd"}, action: "test",
		timeout: 10 * time.Second, keep: 5, dir: dir, env: []string{}})
	if err != nil || strings.Join(res.lines, "|") != dir {
		t.Errorf("pwd: %+v, %v; want %s", res, err, dir)
	}
	if _, err = run(context.Background(), command{argv: []string{"env"}, action: "test",
		timeout: 10 * time.Second, env: []string{"A=1\x00B=2"}}); err == nil {
		t.Errorf("a variable with a NUL byte ran")
	}
}

// A plain run starts no goroutine (the output is read, and the process
// waited for, by the caller) and leaves no descriptor open behind it.
func TestRunNoHelpers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background()) // a cancelable context, as the daemon's
	defer cancel()
	if _, err := shRun(ctx, `true`, 10*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	fds := openFDs(t) // after a first run of ctx (its cancel set made)
	var during, before int
	for try := 0; try < 5; try++ {
		before = runtime.NumGoroutine()
		res, err := shRun(ctx, `echo one; sleep 0.1; echo two`, 10*time.Second, func(string) {
			during = max(during, runtime.NumGoroutine())
		})
		if err != nil || res.code != 0 {
			t.Fatalf("run = %+v, %v", res, err)
		}
		if during <= before {
			break
		}
	}
	if during > before {
		t.Errorf("%d goroutines while a command runs, %d before: want no helper goroutine", during, before)
	}
	if n := openFDs(t); n > fds {
		t.Errorf("%d descriptors open after the run, %d before", n, fds)
	}
}

// A command that exits with nobody else holding its output is done at
// its exit: run does not wait for outputGrace (the write end that run
// keeps until the exit is closed then).
func TestRunEndsAtExit(t *testing.T) {
	fastest := time.Hour
	for range 5 {
		begin := time.Now()
		res, err := shRun(context.Background(), `echo done`, 10*time.Second, nil)
		if err != nil || res.code != 0 || strings.Join(res.lines, "|") != "done" {
			t.Fatalf("run = %+v, %v", res, err)
		}
		fastest = min(fastest, time.Since(begin))
	}
	if fastest >= outputGrace/2 {
		t.Errorf("the fastest of 5 runs of echo took %v, want well under outputGrace (%v)", fastest, outputGrace)
	}
}

// The runs of one context share the set that its end wakes (one
// context.AfterFunc per check was a cost of its own): it is kept while
// that context is the last used, let go when another takes its place or
// once the context ended. Each run parked on its output is still woken by
// its context's end, and so is a run that starts after it.
func TestCancelSetShared(t *testing.T) {
	pipe := func() (*os.File, *os.File) {
		r, w, err := os.Pipe() // non-blocking: in the runtime's poller
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	kept := func(s *cancelSet) bool {
		cancels.Lock()
		defer cancels.Unlock()
		return cancels.byDone[s.done] == s
	}
	// park gives r a read deadline 5 s away, before its run is watched
	// (the end of the context then moves it to the past)
	park := func(r *os.File) {
		if err := r.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// woken reports whether a read of r, parked (park), was woken well
	// before its 5 s: it returned with the deadline passed within 4 s
	woken := func(r *os.File) bool {
		begin := time.Now()
		_, err := r.Read(make([]byte, 1))
		return errors.Is(err, os.ErrDeadlineExceeded) && time.Since(begin) < 4*time.Second
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	r1, _ := pipe()
	r2, _ := pipe()
	a := watchCancel(ctx1, r1)
	b := watchCancel(context.WithValue(ctx1, ctxKey("k"), 1), r2) // same Done, as a check's context
	if a != b {
		t.Fatal("two runs of one context got two sets")
	}
	a.leave(r1)
	b.leave(r2)
	if !kept(a) {
		t.Fatal("the set of the context last used was let go without a run: want it kept for the next")
	}
	if c := watchCancel(ctx1, r1); c != a {
		t.Fatal("the next run of the context got a new set")
	} else {
		c.leave(r1)
	}

	// another context takes its place: the first one goes
	ctx2, cancel2 := context.WithCancel(context.Background())
	s2 := watchCancel(ctx2, r1)
	s2.leave(r1)
	if kept(a) {
		t.Fatal("the set of a context no longer the last used is still kept")
	}

	// a run parked on its output while its context ends is woken
	s3 := watchCancel(ctx2, r2)
	if s3 != s2 {
		t.Fatal("ctx2's next run got a new set")
	}
	park(r2)
	time.AfterFunc(50*time.Millisecond, cancel2)
	if !woken(r2) {
		t.Fatal("the run was not woken by its context's end")
	}
	s3.leave(r2)
	cancels.Lock()
	left := len(cancels.byDone)
	cancels.Unlock()
	if left != 0 || kept(s3) {
		t.Fatalf("after the end of every context: %d sets kept; want none", left)
	}
	// a run of an ended context is woken at once
	r3, _ := pipe()
	park(r3)
	s4 := watchCancel(ctx2, r3)
	defer s4.leave(r3)
	if !woken(r3) {
		t.Fatal("a run of an ended context was not woken")
	}
}

type ctxKey string
