package resource

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"haven/internal/cmdline"
	"haven/internal/fsutil"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// defaultTimeout bounds an action when the resource sets no timeout.
	defaultTimeout = 30 * time.Second
	// killGrace is how long a timed-out process group has between SIGTERM
	// and SIGKILL.
	killGrace = 2 * time.Second
	// outputGrace is how long a command's output is still awaited after
	// the command exited. A background child that keeps the output open is
	// not waited for beyond it (see run).
	outputGrace = 200 * time.Millisecond
	// maxLine truncates very long output lines.
	maxLine = 4096
)

// runResult is what one command run produced.
type runResult struct {
	code     int      // exit code; -1 when killed by a signal or not run
	signal   string   // the signal that ended it, if any
	timedOut bool     // the action timeout expired and the group was killed
	canceled bool     // the caller's context ended and the group was killed
	lines    []string // the last output lines (at most keep of them)
}

// last returns the last output line that is not blank, or "".
func (r runResult) last() string {
	for i := len(r.lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(r.lines[i]); l != "" {
			return l // a trailing blank line (echo; printf '\n') is no cause
		}
	}
	return ""
}

// describe renders how the command ended, with its last output line.
func (r runResult) describe() string {
	var s string
	switch {
	case r.timedOut:
		s = "timed out"
	case r.canceled:
		s = "canceled"
	case r.signal != "":
		s = "killed by signal " + r.signal
	default:
		s = fmt.Sprintf("exit code %d", r.code)
	}
	if l := r.last(); l != "" {
		s += ": " + l
	}
	return s
}

// command is one command line to run for an action.
type command struct {
	cmdline string
	action  string // start | stop | check | info
	timeout time.Duration
	env     []string // the whole environment
	dir     string
	// live receives each output line as it arrives (nil: none). After run
	// returned it may still receive the lines of a background child that
	// kept the output open, until that child closes it.
	live func(line string)
	keep int // how many last lines to keep in the result
	// stdin is written to the command's standard input (nil: none).
	stdin []byte
	// argv, when set, is run as is instead of cmdline split into words.
	argv []string
	// path, when set, is the executable of argv[0] already looked up in
	// PATH (checkCmd): run does not look it up again.
	path string
}

// run executes c without a shell, in a new process group, and waits for it
// to exit or for its timeout. On timeout the whole group gets SIGTERM, then
// SIGKILL after killGrace, so that the children of the command die too.
//
// stdout and stderr go to one pipe read line by line. When the command
// exits but something else still holds the pipe (typically a daemon the
// start command left running in the background), run returns after
// outputGrace without killing it; the reading goroutine stays behind,
// draining the pipe so that the daemon never blocks or gets SIGPIPE on a
// write, and ends when the last holder closes it.
//
// The error is for a command that could not be run (bad quoting, not
// found, not executable); an exit code or a timeout is in the result.
func run(ctx context.Context, c command) (runResult, error) {
	res := runResult{code: -1}
	argv, err := c.argv, error(nil)
	if argv == nil {
		if argv, err = cmdline.Split(c.cmdline); err != nil {
			return res, fmt.Errorf("parse %s command: %w", c.action, err)
		}
	}
	if len(argv) == 0 {
		return res, fmt.Errorf("empty %s command", c.action)
	}
	if c.dir != "" {
		// {var} is R/var/services/NAME: private, and neither it nor
		// services/ may be a link (the command would run, and write its
		// files, wherever it points)
		base := filepath.Dir(filepath.Dir(c.dir))
		if err := fsutil.MkdirBeneath(base, strings.TrimPrefix(c.dir, base+string(filepath.Separator))); err != nil {
			return res, fmt.Errorf("{var}: %w", err)
		}
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return res, err
	}
	var cmd *exec.Cmd
	if c.path != "" {
		cmd = &exec.Cmd{Path: c.path, Args: argv} // argv[0] as written
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Dir = c.dir
	cmd.Env = c.env
	cmd.Stdout = pw // an *os.File: handed to the child as is, no copying goroutine
	cmd.Stderr = pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var inR, inW *os.File
	if c.stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			pr.Close()
			pw.Close()
			return res, err
		}
		cmd.Stdin = inR // an *os.File: Wait never waits on a copy
	} else if null, err := devNull(); err == nil {
		cmd.Stdin = null // os/exec would open and close it for each run
	}
	err = cmd.Start()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		pr.Close()
		pw.Close()
		if inW != nil {
			inW.Close()
		}
		return res, err
	}
	pw.Close()
	if inW != nil {
		// a command that does not read its input is not waited for: the
		// write ends when the pipe is closed below (run's return)
		go func() {
			inW.Write(c.stdin)
			inW.Close()
		}()
		defer inW.Close()
	}

	out := &tail{keep: c.keep, live: c.live}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer pr.Close()
		readLines(pr, out.add)
	}()

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var werr error
	select {
	case werr = <-waitDone:
	case <-tctx.Done():
		res.canceled = ctx.Err() != nil
		res.timedOut = !res.canceled
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case werr = <-waitDone:
		case <-time.After(killGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			werr = <-waitDone
		}
		// The leader may have died of SIGTERM while a child ignoring it
		// lives on: finish the group. ESRCH when it is already empty.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}

	select {
	case <-readDone:
	case <-time.After(outputGrace):
	}
	res.lines = out.snapshot()

	var ee *exec.ExitError
	switch {
	case werr == nil:
		res.code = 0
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signal = ws.Signal().String()
		} else {
			res.code = ee.ExitCode()
		}
	default:
		return res, werr
	}
	return res, nil
}

// devNull is /dev/null opened once for reading, the standard input of
// every command run without one (handed to each child as is).
var devNull = sync.OnceValues(func() (*os.File, error) { return os.Open(os.DevNull) })

// readLines calls fn with each line read from r (without its end of line),
// truncating lines longer than maxLine, until r fails or ends.
func readLines(r io.Reader, fn func(string)) {
	br := bufio.NewReaderSize(r, maxLine)
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 && len(buf) < maxLine {
			n := min(len(chunk), maxLine-len(buf))
			buf = append(buf, chunk[:n]...)
		}
		if err != nil {
			if len(buf) > 0 {
				fn(string(buf))
			}
			return
		}
		if !isPrefix {
			fn(string(buf))
			buf = buf[:0]
		}
	}
}

// tail keeps the last lines of an output and forwards each to live.
type tail struct {
	keep  int
	live  func(string)
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	if t.live != nil {
		t.live(line)
	}
	if t.keep <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == t.keep {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:t.keep-1]
	}
	t.lines = append(t.lines, line)
}

func (t *tail) snapshot() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}
