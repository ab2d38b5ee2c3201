package resource

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How run starts a command and waits for it at the least cost to the
// daemon: the output pipe's read end is in the runtime's
// poller, and the calling goroutine parks on it, the processor free, until
// output comes or the pipe ends. The end of the output is the usual sign
// of the exit: the command's exit closes the last write end (run keeps
// none), and the process is then reaped at once. No pidfd, no helper
// goroutine, no thread blocked in the kernel while the command runs.
//
// The waits measured before, with 200 services on a quiet host (a check
// a minute each, docs/benchmarks.md): the thread in ppoll(2) on the pipe,
// a pidfd and an eventfd kept the processor in a system call for the
// whole check, and the runtime's monitor thread woke up every 20 µs to
// hand it on, about six times a check; an epoll instance of its own in the
// runtime's poller cost its registrations (nested epoll checks) and its
// pool. With GOMAXPROCS=1 (the daemon's), both cost more than this.
//
// The exit is polled (wait4 WNOHANG) where the output does not tell it: a
// command that exits while a background child still holds its output (a
// start command leaving a daemon), from pollFirst after the start at
// intervals doubling to pollMax; and a command that closed its output
// before its exit, from the end of the output at intervals doubling from
// a millisecond, to pollMax.

const (
	// pollFirst is the first poll of the exit of a command whose output
	// is still open, pollMax the longest interval between two polls.
	pollFirst = 20 * time.Millisecond
	pollMax   = 500 * time.Millisecond
	// reapSpin is how long wait looks for the zombie without pause after
	// the end of the output.
	reapSpin = 100 * time.Microsecond
)

// readBufs are the buffers wait reads the output into.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// proc is one started command.
type proc struct {
	pid int    // also its process group
	out outEnd // its output; out.f nil once it ended
}

// outEnd is the read end of a command's output, non-blocking, in the
// runtime's poller.
type outEnd struct {
	f  *os.File
	rc syscall.RawConn
}

// procStart starts path in a new process group with stdin on its standard
// input and a new pipe on its standard output and error; in cgroup cg
// when not nil (cloned into it).
func procStart(path string, argv, env []string, dir string, stdin uintptr, cg *cgLeaf) (proc, error) {
	var pp [2]int
	if err := syscall.Pipe2(pp[:], syscall.O_CLOEXEC); err != nil {
		return proc{}, err
	}
	// the read end only: the child's stdout and stderr stay blocking
	if _, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(pp[0]), unix.F_SETFL, unix.O_NONBLOCK); e != 0 {
		rawClose(pp[0])
		rawClose(pp[1])
		return proc{}, os.NewSyscallError("fcntl", e)
	}
	files := [3]uintptr{stdin, uintptr(pp[1]), uintptr(pp[1])}
	fork := func(cgfd int) (int, error) {
		sys := &syscall.SysProcAttr{Setpgid: true}
		if cgfd >= 0 {
			sys.UseCgroupFD, sys.CgroupFD = true, cgfd
		}
		return syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: dir, Env: env, Files: files[:], Sys: sys})
	}
	var pid int
	var err error
	if cg != nil {
		pid, err = cg.start(fork)
	} else {
		pid, err = fork(-1)
	}
	rawClose(pp[1]) // the child's exit ends the output
	if err != nil {
		rawClose(pp[0])
		return proc{}, &os.PathError{Op: "fork/exec", Path: path, Err: err} // as os.StartProcess
	}
	f := os.NewFile(uintptr(pp[0]), "output") // non-blocking: in the runtime's poller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		procKill(pid)
		return proc{}, err
	}
	return proc{pid: pid, out: outEnd{f, rc}}, nil
}

// wait reads the output into lines and waits for the process to exit, at
// most timeout: then the group gets SIGTERM, SIGKILL after killGrace, and
// SIGKILL again once the process is reaped (for a child that outlived it);
// the end of ctx does the same. Once reaped, the output is read until its
// end or for outputGrace at most: p.out stays open (out.f not nil) when a
// background child still holds it. The error is for a process that could
// not be waited for.
func (p *proc) wait(ctx context.Context, timeout time.Duration, lines *lineSplitter, res *runResult) (syscall.WaitStatus, error) {
	var cs *cancelSet
	if ctx.Done() != nil {
		cs = watchCancel(ctx, p.out.f)
		defer cs.leave(p.out.f)
	}
	var ws syscall.WaitStatus
	reaped, term := false, false
	now := time.Now()
	deadline := now.Add(timeout)
	every := pollFirst
	pollAt := now.Add(every) // the next wait4 while the process is not reaped
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	for p.out.f != nil || !reaped {
		now = time.Now()
		if cs != nil && !reaped && !term && ctx.Err() != nil {
			res.canceled = true
			_ = syscall.Kill(-p.pid, syscall.SIGTERM)
			term, deadline = true, now.Add(killGrace)
		}
		if !deadline.IsZero() && !now.Before(deadline) {
			switch {
			case reaped:
				return ws, nil // the output grace is over: p.out is left open
			case !term:
				res.canceled = ctx.Err() != nil
				res.timedOut = !res.canceled
				_ = syscall.Kill(-p.pid, syscall.SIGTERM)
				term, deadline = true, now.Add(killGrace)
			default:
				_ = syscall.Kill(-p.pid, syscall.SIGKILL)
				deadline = time.Time{}
			}
			continue
		}
		if !reaped && !now.Before(pollAt) {
			pid, err := rawWait4(p.pid, &ws)
			if err != nil {
				// not our child any more (ECHILD): its group is not killed,
				// the number may be another's now
				return 0, os.NewSyscallError("wait4", err)
			}
			if pid == p.pid {
				reaped, deadline = true, p.reaped(now, term)
				continue
			}
			every = min(2*every, pollMax)
			pollAt = now.Add(every)
		}
		until := deadline
		if !reaped && (until.IsZero() || pollAt.Before(until)) {
			until = pollAt
		}
		if p.out.f == nil {
			// the output ended before the exit: wait for the next poll
			sleepUntil(ctx, until, term)
			continue
		}
		if err := p.out.f.SetReadDeadline(until); err != nil {
			procKill(p.pid)
			return 0, err
		}
		if cs != nil && !term && !reaped && ctx.Err() != nil {
			continue // ended before the deadline was set: it may have been undone
		}
		ended, err := p.out.read(buf, lines)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			procKill(p.pid)
			return 0, err
		}
		if ended {
			if cs != nil {
				cs.leave(p.out.f)
			}
			p.out.f.Close()
			p.out.f = nil
			if !reaped {
				// the usual end of a command: its exit closed the output,
				// and it becomes a zombie a few microseconds later (its
				// last open file closes near the end of its exit): look
				// again at once for a while, then at growing intervals
				if p.reapSoon(&ws) {
					reaped, deadline = true, p.reaped(time.Now(), term)
					continue
				}
				every, pollAt = time.Millisecond/2, now
			}
		}
	}
	return ws, nil
}

// reaped is what follows the reap of the process at now: the end of the
// output grace, and SIGKILL to the group after a SIGTERM (term: the leader
// may have died of it while a child ignoring it lives on; ESRCH when the
// group is empty).
func (p *proc) reaped(now time.Time, term bool) (outputEnd time.Time) {
	if term {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	return now.Add(outputGrace)
}

// reapSoon reaps the process if it becomes a zombie within reapSpin,
// yielding the CPU between two looks (sched_yield(2): not the runtime's
// Gosched, which keeps the thread on the CPU that the command, woken with
// it on the same, needs to finish its exit; measured: 1.2 ms to the reap
// with Gosched, 15-40 µs with sched_yield).
func (p *proc) reapSoon(ws *syscall.WaitStatus) bool {
	begin := time.Now()
	for {
		if pid, err := rawWait4(p.pid, ws); err != nil || pid == p.pid {
			return err == nil // an error shows again at the next poll
		}
		if time.Since(begin) > reapSpin {
			return false
		}
		// the exiting command may be waiting for this very CPU
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

// read reads the output that is there into lines, parking in the runtime's
// poller until some is or until the file's deadline; at its end it reports
// true. It stops after a bounded number of full reads, so that wait still
// sees its deadline with a command writing without pause.
func (o outEnd) read(buf []byte, lines *lineSplitter) (ended bool, err error) {
	full := 0
	err = o.rc.Read(func(fd uintptr) bool {
		for full < 16 {
			r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			n := int(r)
			switch {
			case e == unix.EINTR:
			case e == unix.EAGAIN:
				return full > 0 // park only when nothing was read
			case e == 0 && n > 0:
				lines.feed(buf[:n])
				if n < len(buf) {
					return true
				}
				full++
			default: // 0: the last writer closed it; an error: nothing more to read
				lines.end()
				ended = true
				return true
			}
		}
		return true
	})
	return ended, err
}

// sleepUntil waits until t, or until the end of ctx unless term (the end
// was seen).
func sleepUntil(ctx context.Context, t time.Time, term bool) {
	d := time.Until(t)
	if t.IsZero() {
		d = pollMax
	}
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	done := ctx.Done()
	if term {
		done = nil
	}
	select {
	case <-tm.C:
	case <-done:
	}
}

func rawClose(fd int) { unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }

// rawWait4 is wait4(pid, WNOHANG) by a raw system call: it does not block,
// and the runtime need not hand the processor on around it.
func rawWait4(pid int, ws *syscall.WaitStatus) (int, error) {
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, uintptr(pid), uintptr(unsafe.Pointer(ws)), uintptr(syscall.WNOHANG), 0, 0, 0)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
		default:
			return 0, e
		}
	}
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
// or gets SIGPIPE. The read parks in the runtime's poller, no thread is
// held.
func procDrain(o outEnd, lines *lineSplitter) {
	defer o.f.Close()
	_ = o.f.SetReadDeadline(time.Time{})
	buf := make([]byte, 4096)
	for {
		n, err := o.f.Read(buf)
		if n > 0 {
			lines.feed(buf[:n])
		}
		if err != nil {
			lines.end()
			return
		}
	}
}

// cancelSet is the outputs of the runs of one context: its end sets their
// read deadline in the past, which wakes each run parked on its output.
// The runs of one context share it: every check of the daemon runs with
// the daemon's context, and a context.AfterFunc per check (whose
// registrations contend on that context's lock when a slot's checks start
// together) was a cost of its own. The one of the context last
// used is kept while no run uses it, for the next; the others go once
// their last run left, and each once its context ended.
type cancelSet struct {
	done  <-chan struct{}       // the context's Done, its key in cancels
	outs  map[*os.File]struct{} // the outputs of the runs using it
	ended bool                  // the context ended
	stop  func() bool           // stops the context.AfterFunc
}

var cancels struct {
	sync.Mutex
	byDone map[<-chan struct{}]*cancelSet
	idle   *cancelSet // kept without a run
}

// pastDeadline is the deadline that wakes a parked read at once.
var pastDeadline = time.Unix(1, 0)

// watchCancel makes the end of ctx (whose Done is not nil) wake the run
// parked on out; the run leaves with leave.
func watchCancel(ctx context.Context, out *os.File) *cancelSet {
	done := ctx.Done()
	cancels.Lock()
	defer cancels.Unlock()
	s := cancels.byDone[done]
	if s == nil {
		s = &cancelSet{done: done, outs: make(map[*os.File]struct{})}
		if cancels.byDone == nil {
			cancels.byDone = make(map[<-chan struct{}]*cancelSet)
		}
		cancels.byDone[done] = s
		s.stop = context.AfterFunc(ctx, s.end) // runs in its own goroutine
	}
	if cancels.idle == s {
		cancels.idle = nil
	}
	s.outs[out] = struct{}{}
	return s
}

// end is the end of the context: every run parked on its output wakes.
func (s *cancelSet) end() {
	cancels.Lock()
	defer cancels.Unlock()
	s.ended = true
	for f := range s.outs {
		_ = f.SetReadDeadline(pastDeadline)
	}
	delete(cancels.byDone, s.done) // a run after the end makes a new one (ended at once)
	if cancels.idle == s {
		cancels.idle = nil
	}
}

// leave takes out out of the set, once the run's output ended or when the
// run returns (a second leave does nothing).
func (s *cancelSet) leave(out *os.File) {
	cancels.Lock()
	defer cancels.Unlock()
	if _, ok := s.outs[out]; !ok {
		return
	}
	delete(s.outs, out)
	if len(s.outs) > 0 || s.ended {
		return
	}
	if old := cancels.idle; old != nil && old != s && len(old.outs) == 0 && old.stop() {
		// its context did not end: nothing else would let it go
		// (stop false: end is about to run, and lets it go)
		delete(cancels.byDone, old.done)
	}
	cancels.idle = s
}
