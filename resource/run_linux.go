package resource

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How run starts a command and waits for it at the least cost to the
// daemon (issue 26): the calling goroutine waits in ppoll(2) for the output
// pipe, the process's pidfd (readable once it exited) and, with a context
// that can end, an eventfd that the context's end writes to; ppoll's
// timeout is the action's timeout, then killGrace, then outputGrace. No
// helper goroutine, no thread blocked in waitid, no timer, no channel.
//
// The thread waits in the kernel while the command runs, as the one in
// waitid did before. Waiting in the runtime's poller instead (the pipe and
// the pidfd in a private epoll instance, itself in the runtime's poller,
// the timeouts as read deadlines) was measured too: 157 µs of the daemon's
// CPU per check, against 110 µs for ppoll at the time; the goroutine parks
// and is woken through the scheduler where ppoll just sleeps.

// noPidfd makes run wait as on a kernel without pollable pidfds (before
// 5.3): the process is polled with wait4 at growing intervals, up to
// pollNoPidfd. Tests set it.
var noPidfd bool

// pollNoPidfd bounds the interval between two wait4 polls without a pidfd.
const pollNoPidfd = 50 * time.Millisecond

// readBufs are the buffers wait reads the output into.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// proc is one started command.
type proc struct {
	pid   int // also its process group
	pidfd int // -1 without one
	out   int // the output pipe's read end, non-blocking; -1 once it ended
	// outW is a write end of the output pipe kept until the command is
	// reaped (-1 then): its exit, not the end of its output a moment
	// before, is what wakes wait, which then sleeps once, not twice.
	outW int
}

// procStart starts path in a new process group with stdin on its standard
// input and a new pipe on its standard output and error.
func procStart(path string, argv, env []string, dir string, stdin uintptr) (proc, error) {
	var pp [2]int
	if err := syscall.Pipe2(pp[:], syscall.O_CLOEXEC); err != nil {
		return proc{}, err
	}
	// the read end only: the child's stdout and stderr stay blocking
	if _, err := unix.FcntlInt(uintptr(pp[0]), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		syscall.Close(pp[0])
		syscall.Close(pp[1])
		return proc{}, err
	}
	p := proc{pidfd: -1, out: pp[0], outW: pp[1]}
	sys := syscall.SysProcAttr{Setpgid: true}
	if !noPidfd {
		sys.PidFD = &p.pidfd // stays -1 when the kernel has none
	}
	files := [3]uintptr{stdin, uintptr(pp[1]), uintptr(pp[1])}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: dir, Env: env, Files: files[:], Sys: &sys})
	if err != nil {
		syscall.Close(pp[0])
		syscall.Close(pp[1])
		return proc{}, &os.PathError{Op: "fork/exec", Path: path, Err: err} // as os.StartProcess
	}
	p.pid = pid
	if p.pidfd < 0 {
		p.closeW() // without a pidfd, the end of the output is the hint of the exit
	}
	return p, nil
}

// wait reads the output into lines and waits for the process to exit, at
// most timeout: then the group gets SIGTERM, SIGKILL after killGrace, and
// SIGKILL again once the process is reaped (for a child that outlived it);
// the end of ctx does the same. Once reaped, the output is read until its
// end or for outputGrace at most: p.out stays open (>= 0) when a
// background child still holds it. The error is for a process that could
// not be waited for.
func (p *proc) wait(ctx context.Context, timeout time.Duration, lines *lineSplitter, res *runResult) (syscall.WaitStatus, error) {
	defer func() {
		if p.pidfd >= 0 {
			syscall.Close(p.pidfd)
			p.pidfd = -1
		}
		p.closeW()
	}()
	fds := [3]unix.PollFd{
		{Fd: int32(p.out), Events: unix.POLLIN},
		{Fd: int32(p.pidfd), Events: unix.POLLIN}, // -1: not polled
		{Fd: -1, Events: unix.POLLIN},
	}
	if ctx.Done() != nil {
		w, err := newCtxWake(ctx)
		if err != nil {
			procKill(p.pid)
			return 0, err
		}
		defer w.close()
		fds[2].Fd = int32(w.fd)
	}
	var ws syscall.WaitStatus
	reaped, term := false, false
	deadline := time.Now().Add(timeout)
	every := time.Millisecond // the wait4 period without a pidfd
	terminate := func(now time.Time) {
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		term, deadline, fds[2].Fd = true, now.Add(killGrace), -1
	}
	// the read buffer comes from a pool: on the stack, its 4 KiB made
	// every check's new goroutine grow (copy) its stack, 5 % of the
	// daemon's CPU with 200 services (docs/benchmarks.md, issue 26)
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	for p.out >= 0 || !reaped {
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			switch {
			case reaped:
				return ws, nil // the output grace is over: p.out is left open
			case !term:
				res.canceled = ctx.Err() != nil
				res.timedOut = !res.canceled
				terminate(now)
			default:
				_ = syscall.Kill(-p.pid, syscall.SIGKILL)
				deadline = time.Time{}
			}
			continue
		}
		var ts *unix.Timespec
		var t unix.Timespec
		if !deadline.IsZero() {
			t, ts = unix.NsecToTimespec(int64(deadline.Sub(now))), &t
		}
		if !reaped && fds[1].Fd < 0 {
			if ts == nil || every < deadline.Sub(now) {
				t, ts = unix.NsecToTimespec(int64(every)), &t
			}
			every = min(2*every, pollNoPidfd)
		}
		if _, err := unix.Ppoll(fds[:], ts, nil); err == unix.EINTR {
			continue
		} else if err != nil {
			procKill(p.pid)
			return 0, os.NewSyscallError("ppoll", err)
		}
		if fds[0].Revents != 0 && p.read(buf, lines) {
			fds[0].Fd = -1
		}
		if fds[2].Revents != 0 && !reaped && !term {
			res.canceled = true
			terminate(time.Now())
		}
		if reaped || fds[1].Fd >= 0 && fds[1].Revents == 0 {
			continue
		}
		if fds[1].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			fds[1].Fd = -1 // a pidfd that does not poll: wait4 polled
			p.closeW()
		}
		var err error
		pid := 0
		for pid, err = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil); err == syscall.EINTR; {
			pid, err = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
		if err != nil {
			// not our child any more (ECHILD): its group is not killed,
			// the number may be another's now
			return 0, os.NewSyscallError("wait4", err)
		}
		if pid == 0 && fds[1].Fd >= 0 {
			// readable yet not ended: a pidfd that does not poll (5.2)
			fds[1].Fd = -1
			p.closeW()
		}
		if pid == p.pid {
			reaped, deadline = true, time.Now().Add(outputGrace)
			fds[1].Fd, fds[2].Fd = -1, -1
			if term {
				// the leader may have died of SIGTERM while a child
				// ignoring it lives on: finish the group (ESRCH when empty)
				_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			}
			// the output ends now unless a background child holds it:
			// read it at once, without another ppoll
			p.closeW()
			if p.out >= 0 && p.read(buf, lines) {
				fds[0].Fd = -1
			}
		}
	}
	return ws, nil
}

// closeW closes the write end of the output kept by run.
func (p *proc) closeW() {
	if p.outW >= 0 {
		syscall.Close(p.outW)
		p.outW = -1
	}
}

// read reads the output that is there into lines; at its end it closes it
// and reports true. It stops at a short read (what was there: ppoll tells
// when more comes) and after a bounded number of full ones, so that wait
// still sees its deadline with a command writing without pause.
func (p *proc) read(buf []byte, lines *lineSplitter) (ended bool) {
	for range 16 {
		n, err := syscall.Read(p.out, buf)
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return false
		case err == nil && n > 0:
			lines.feed(buf[:n])
			if n < len(buf) {
				return false
			}
		default: // 0: the last writer closed it; an error: nothing more to read
			syscall.Close(p.out)
			p.out = -1
			lines.end()
			return true
		}
	}
	return false
}

// procKill kills the group of a process that cannot be waited for and
// reaps it (blocking), so that no zombie is left.
func procKill(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

// procDrain reads the rest of an output that a background child holds,
// into lines, until the child closes it: the child never blocks on a write
// or gets SIGPIPE. The descriptor is non-blocking: the read waits in the
// runtime's poller, no thread is held.
func procDrain(fd int, lines *lineSplitter) {
	f := os.NewFile(uintptr(fd), "output")
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			lines.feed(buf[:n])
		}
		if err != nil {
			lines.end()
			return
		}
	}
}

// ctxWake is an eventfd that becomes readable, for good, when a context
// ends. The runs of one context share it: every check of the daemon runs
// with the daemon's context, and an eventfd, a close and a context.AfterFunc
// per check (whose registrations contend on that context's lock when a
// slot's checks start together) were 4 % of perf's samples of a daemon
// with 200 services (issue 26; BenchmarkAppCheck: fewer allocations per
// check; in the daemon itself the difference is within the noise of an
// A/B, docs/benchmarks.md). The one of the context last used is kept while no
// run uses it, for the next; the others close when their last run ends,
// and each once its context ended and no run uses it.
type ctxWake struct {
	fd    int
	done  <-chan struct{} // the context's Done, its key in wakes
	refs  int             // runs using it
	ended bool            // the context ended: fd was written to
	stop  func() bool     // stops the context.AfterFunc
}

var wakes struct {
	sync.Mutex
	byDone map[<-chan struct{}]*ctxWake
	idle   *ctxWake // kept without a run
}

// newCtxWake returns the wake of ctx, whose Done is not nil, for one run;
// the run gives it back with close.
func newCtxWake(ctx context.Context) (*ctxWake, error) {
	done := ctx.Done()
	wakes.Lock()
	defer wakes.Unlock()
	if w := wakes.byDone[done]; w != nil {
		w.refs++
		if wakes.idle == w {
			wakes.idle = nil
		}
		return w, nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	w := &ctxWake{fd: fd, done: done, refs: 1}
	if wakes.byDone == nil {
		wakes.byDone = make(map[<-chan struct{}]*ctxWake)
	}
	wakes.byDone[done] = w
	w.stop = context.AfterFunc(ctx, w.wake) // runs in its own goroutine
	return w, nil
}

// wake marks the end of the context: the runs waiting wake up.
func (w *ctxWake) wake() {
	wakes.Lock()
	defer wakes.Unlock()
	one := [8]byte{1}
	_, _ = unix.Write(w.fd, one[:])
	w.ended = true
	delete(wakes.byDone, w.done) // a run after the end gets a new one (woken at once)
	if w.refs == 0 {
		w.closeLocked()
	}
}

// close gives the wake back after a run.
func (w *ctxWake) close() {
	wakes.Lock()
	defer wakes.Unlock()
	if w.refs--; w.refs > 0 || w.ended {
		if w.refs == 0 {
			w.closeLocked()
		}
		return
	}
	if old := wakes.idle; old != nil && old != w && old.stop() {
		// its context did not end: nothing else closes it
		// (stop false: wake is about to run, and closes it)
		delete(wakes.byDone, old.done)
		old.closeLocked()
	}
	wakes.idle = w
}

func (w *ctxWake) closeLocked() {
	if wakes.idle == w {
		wakes.idle = nil
	}
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}
