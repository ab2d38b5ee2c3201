package clock

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Sleeper is one goroutine's wait for a due time that others may bring
// forward: Sleep returns once d has passed, or after Wake.
type Sleeper interface {
	// Sleep returns after d, or at once when Wake was called since the
	// last Sleep returned (or during this one).
	Sleep(d time.Duration)
	// Wake ends the current Sleep, or the next one (never blocks).
	Wake()
	// Close releases the sleeper; a Sleep meanwhile returns.
	Close()
}

// NewSleeper returns a Sleeper of clk. The wall clock's waits in a timer of
// the kernel (timerfd) that the runtime's poller watches, not in a timer of
// the Go runtime: the runtime's monitor thread (sysmon) sleeps until the
// next runtime timer and wakes twice for it, so a heartbeat's period as a
// runtime timer cost two more thread wake-ups a second on an idle daemon
// (docs/benchmarks.md). Other clocks (Fake) wait on After.
func NewSleeper(clk Clock) Sleeper {
	if _, ok := clk.(Real); ok {
		if s, err := newKernelSleeper(); err == nil {
			return s
		}
	}
	return &chanSleeper{clk: clk, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// chanSleeper waits on its clock's After.
type chanSleeper struct {
	clk    Clock
	wake   chan struct{}
	done   chan struct{}
	closed atomic.Bool
}

func (s *chanSleeper) Sleep(d time.Duration) {
	select {
	case <-s.clk.After(d):
	case <-s.wake:
	case <-s.done:
	}
}

func (s *chanSleeper) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *chanSleeper) Close() {
	if !s.closed.Swap(true) {
		close(s.done)
	}
}

// kernelSleeper waits in a read of a timerfd through the runtime's poller.
type kernelSleeper struct {
	f     *os.File
	rc    syscall.RawConn
	woken atomic.Bool
	read  func(fd uintptr) bool // allocated once
}

func newKernelSleeper() (*kernelSleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "timerfd") // non-blocking: in the poller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &kernelSleeper{f: f, rc: rc}
	var buf [8]byte // the expirations, read to rearm the readiness
	s.read = func(fd uintptr) bool {
		for {
			// raw system calls, here and in arm: they never block, and
			// through syscall.Syscall each would wake sysmon
			_, _, err := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			switch err {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // park until it expires
			}
			return true
		}
	}
	return s, nil
}

// arm sets the timer to expire once, d from now (at least 1 ns: zero
// would disarm it). Setting it also forgets expirations not read. Through
// Control: never on the number of a descriptor closed meanwhile.
func (s *kernelSleeper) arm(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, 1)))}
	_ = s.rc.Control(func(fd uintptr) {
		unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	})
}

func (s *kernelSleeper) Sleep(d time.Duration) {
	if s.woken.Swap(false) {
		return
	}
	s.arm(d)
	// a Wake between the check above and the arm: its own arm may have
	// come first and been overwritten, but its mark is seen here
	if s.woken.Swap(false) {
		return
	}
	if err := s.rc.Read(s.read); err != nil && !errors.Is(err, os.ErrClosed) {
		time.Sleep(time.Millisecond) // not expected: never spin
	}
	s.woken.Store(false) // a Wake during the sleep is answered by its end
}

func (s *kernelSleeper) Wake() {
	s.woken.Store(true)
	s.arm(1)
}

func (s *kernelSleeper) Close() { s.f.Close() }
