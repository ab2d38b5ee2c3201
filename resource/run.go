package resource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"haven/internal/cmdline"
	"haven/internal/fsutil"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	pid      int      // the process started (its process group), 0 if none
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
	// envOnce tells that env has each variable once (checkCmd, prepared
	// once per lookup): run does not look again.
	envOnce bool
	// cgroup is the group the command runs in (nil: a process group
	// only).
	cgroup *cgLeaf
}

// run executes c without a shell, in a new process group, and waits for it
// to exit or for its timeout. On timeout the whole group gets SIGTERM, then
// SIGKILL after killGrace, so that the children of the command die too;
// the end of ctx does the same (the result says canceled).
//
// stdout and stderr go to one pipe read line by line. When the command
// exits but something else still holds the pipe (typically a daemon the
// start command left running in the background), run returns after
// outputGrace without killing it; a goroutine stays behind, draining the
// pipe so that the daemon never blocks or gets SIGPIPE on a write, and
// ends when the last holder closes it.
//
// Checks run this for every resource every minute or less, so it is
// lean: the calling goroutine itself reads the output, parked in the
// runtime's poller between two reads, and reaps the process when the
// output ends (proc.wait, run_linux.go), with no helper goroutine or
// channel; a goroutine runs only to write stdin or to drain what a
// background child still writes.
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
		// at every run, checks too: a link planted there is never
		// followed (docs/security.md)
		if err := makeVarDir(c.dir); err != nil {
			return res, err
		}
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	path := c.path
	if path == "" {
		// as exec.Command: a bare name is looked up in PATH, a path is
		// taken as it is (relative to dir)
		if path = argv[0]; filepath.Base(path) == path {
			if path, err = exec.LookPath(path); err != nil {
				return res, err
			}
		}
		if path == "" {
			return res, errors.New("exec: no command")
		}
	}
	env := c.env
	if env == nil {
		// as os/exec: the daemon's environment, PWD following dir
		env = os.Environ()
		if c.dir != "" {
			if pwd, err := filepath.Abs(c.dir); err == nil {
				env = append(env, "PWD="+pwd)
			}
		}
	}
	if !c.envOnce {
		if env, err = dedupEnv(env); err != nil {
			return res, err
		}
	}

	var stdin uintptr
	var inR, inW *os.File
	if c.stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			return res, err
		}
		stdin = inR.Fd() // blocking again, for the child
	} else if null, err := devNull(); err == nil {
		stdin = null.Fd() // os/exec would open and close it for each run
	} else {
		return res, err
	}
	p, err := procStart(path, argv, env, c.dir, stdin, c.cgroup)
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		if inW != nil {
			inW.Close()
		}
		return res, err
	}
	res.pid = p.pid
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
	lines := lineSplitter{emit: out.add}
	ws, werr := p.wait(ctx, timeout, &lines, &res)
	res.lines = out.snapshot()
	if p.out.f != nil {
		// a background child holds the output: drain it until it closes it
		go procDrain(p.out, lines.clone())
	}
	if werr != nil {
		return res, werr
	}
	switch {
	case ws.Signaled():
		res.signal = ws.Signal().String()
	case ws.Exited():
		res.code = ws.ExitStatus()
	}
	return res, nil
}

// makeVarDir makes dir, a service's {var} (R/var/services/NAME), if it is
// not there. It is private, and neither it nor services/ may be a link:
// the command would run, and write its files, wherever it points.
func makeVarDir(dir string) error {
	// every run comes here, each check of an app resource too: the usual
	// case, both there, is two lstat(2) and nothing else
	if isDir(filepath.Dir(dir)) && isDir(dir) {
		return nil
	}
	base := filepath.Dir(filepath.Dir(dir))
	if err := fsutil.MkdirBeneath(base, strings.TrimPrefix(dir, base+string(filepath.Separator))); err != nil {
		return fmt.Errorf("{var}: %w", err)
	}
	return nil
}

// isDir reports whether path is a directory, itself not followed if a link.
func isDir(path string) bool {
	var st syscall.Stat_t
	return syscall.Lstat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

// devNull is /dev/null opened once for reading, the standard input of
// every command run without one (handed to each child as is).
var devNull = sync.OnceValues(func() (*os.File, error) { return os.Open(os.DevNull) })

// dedupEnv returns env with each variable once, its last value winning, as
// os/exec does (the app's HAVEN_ variables and the fencing token come after
// the daemon's environment); env itself when it needs no change, the usual
// case, checked without allocating. A NUL byte is an error.
func dedupEnv(env []string) ([]string, error) {
	const small = 128
	if len(env) > small {
		return dedupEnvAll(env)
	}
	var keyLen [small]int
	for i, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("exec: environment variable contains NUL")
		}
		k := envKeyLen(kv)
		if k < 0 {
			if kv == "" {
				return dedupEnvAll(env) // dropped
			}
			keyLen[i] = -1
			continue
		}
		keyLen[i] = k
		for j := range i {
			if keyLen[j] == k && env[j][:k] == kv[:k] {
				return dedupEnvAll(env)
			}
		}
	}
	return env, nil
}

// dedupEnvAll is dedupEnv building a new list: the last entry of each
// variable, in their order; entries that are no variable are kept, empty
// ones dropped.
func dedupEnvAll(env []string) ([]string, error) {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("exec: environment variable contains NUL")
		}
		k := envKeyLen(kv)
		if k < 0 {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		if !seen[kv[:k]] {
			seen[kv[:k]] = true
			out = append(out, kv)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// envKeyLen is the length of kv's name (before its first "=", a leading
// "=" being part of the name), or -1 when kv has no "=".
func envKeyLen(kv string) int {
	if i := strings.IndexByte(kv, '='); i != 0 {
		return i
	}
	if i := strings.IndexByte(kv[1:], '='); i >= 0 {
		return i + 1
	}
	return 0 // "=" alone: os/exec's key ""
}

// lineSplitter cuts an output into lines as it arrives, in pieces of any
// size, as bufio.Reader.ReadLine did: a line ends at "\n" or "\r\n" (not
// kept), a line longer than maxLine is cut to maxLine bytes, and a last line
// without an end is given by end.
type lineSplitter struct {
	emit func(string)
	buf  []byte // the current line, at most maxLine bytes of it
	n    int    // the current line's length so far, the cut bytes included
}

func (s *lineSplitter) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if room := maxLine - len(s.buf); room > 0 {
			s.buf = append(s.buf, part[:min(len(part), room)]...)
		}
		s.n += len(part)
		if i < 0 {
			return
		}
		line := s.buf
		if s.n <= maxLine && len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1] // "\r\n", when the line was not cut
		}
		s.emit(string(line))
		s.buf, s.n = s.buf[:0], 0
		b = b[i+1:]
	}
}

// end gives the last line when it has no end of line.
func (s *lineSplitter) end() {
	if len(s.buf) > 0 {
		s.emit(string(s.buf))
	}
	s.buf, s.n = s.buf[:0], 0
}

// clone is a copy of s that shares nothing with it but emit.
func (s *lineSplitter) clone() *lineSplitter {
	return &lineSplitter{emit: s.emit, buf: bytes.Clone(s.buf), n: s.n}
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
