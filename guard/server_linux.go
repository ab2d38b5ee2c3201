package guard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"haven/internal/fsutil"
)

// Config is where the guard keeps its socket, lock and record.
type Config struct {
	// Socket is the unix socket the daemon talks to (made mode 0600);
	// Lock is locked while the guard runs (one guard a root).
	Socket string
	Lock   string
	// Record is the file of the last firing (read at the start,
	// written after each firing and acknowledgement).
	Record string
	// Log receives the guard's lines (its log file).
	Log *log.Logger
	// KillWait bounds the wait for the killed cgroups to empty (0:
	// KillWait).
	KillWait time.Duration
}

// maxLine bounds a request (a kill set of hundreds of instances fits).
const maxLine = 4 << 20

// replyTimeout bounds the write of a reply: a daemon that does not read
// (paused) never holds the guard.
const replyTimeout = time.Second

// BootNow is CLOCK_BOOTTIME: the time since boot, suspended time
// included, the clock of the lease.
func BootNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("clock_gettime(CLOCK_BOOTTIME): " + err.Error()) // Linux 2.6.39 and later have it
	}
	return time.Duration(ts.Nano())
}

// ErrRunning is returned by Run when another guard holds the lock.
var ErrRunning = errors.New("a guard already runs on this root")

type server struct {
	cfg   Config
	log   *log.Logger
	mu    sync.Mutex // the lease, the timer, the record file
	lease Lease
	tfd   int
}

// Run is the guard: it serves the daemon's requests and ends the kill set
// when the lease runs out, until ctx ends or an exit request comes
// (disarmed). Its process set-up (memory locked, oom_score_adj, one
// processor) is Process's.
func Run(ctx context.Context, cfg Config) error {
	if cfg.KillWait <= 0 {
		cfg.KillWait = KillWait
	}
	lg := cfg.Log
	if lg == nil {
		lg = log.New(os.Stderr, "guard: ", log.LstdFlags|log.Lmicroseconds)
	}
	lock, err := os.OpenFile(cfg.Lock, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("%w (%s is locked)", ErrRunning, cfg.Lock)
	}
	// the lock names the guard's process (scripts that clean up read it)
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	s := &server{cfg: cfg, log: lg}
	if rec, err := readRecord(cfg.Record); err != nil {
		lg.Printf("record %s unreadable, ignored: %v", cfg.Record, err)
	} else if rec != nil {
		s.lease.Restore(rec)
	}
	if s.tfd, err = unix.TimerfdCreate(unix.CLOCK_BOOTTIME, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK); err != nil {
		return os.NewSyscallError("timerfd_create", err)
	}
	tf := os.NewFile(uintptr(s.tfd), "timerfd") // non-blocking: in the runtime's poller
	defer tf.Close()
	os.Remove(cfg.Socket) // the lock is ours: a socket there is a dead guard's
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Socket, Net: "unix"})
	if err != nil {
		return err
	}
	defer os.Remove(cfg.Socket)
	defer ln.Close()
	if err := os.Chmod(cfg.Socket, 0o600); err != nil {
		return err
	}
	lg.Printf("started, pid %d, socket %s, disarmed", os.Getpid(), cfg.Socket)

	exit := make(chan struct{})
	var once sync.Once
	quit := func() { once.Do(func() { close(exit) }) }
	go s.timer(tf)
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					lg.Printf("accept: %v", err)
				}
				quit()
				return
			}
			go s.serve(c, quit)
		}
	}()
	select {
	case <-ctx.Done():
		s.mu.Lock()
		armed := s.lease.State(BootNow()).Armed
		s.mu.Unlock()
		if armed {
			lg.Printf("stopped by a signal while ARMED: nothing will end the services if the daemon dies")
		} else {
			lg.Printf("stopped by a signal (disarmed)")
		}
	case <-exit:
		lg.Printf("exit (disarmed)")
	}
	return nil
}

// timer waits for the timerfd to expire and acts when the lease is due.
func (s *server) timer(tf *os.File) {
	buf := make([]byte, 8)
	for {
		if _, err := tf.Read(buf); err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			s.log.Printf("timerfd read: %v", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.lease.Due(BootNow()) {
			s.fire()
		}
		s.mu.Unlock()
	}
}

// conn is a connection the guard serves (a *net.UnixConn).
type conn interface {
	io.ReadWriteCloser
	SetWriteDeadline(time.Time) error
}

// serve answers the requests of one connection, one line each way.
func (s *server) serve(c conn, quit func()) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		var req Request
		var rep Reply
		exit := false
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			s.mu.Lock()
			rep = s.lease.State(BootNow())
			s.mu.Unlock()
			rep.Error = "bad request: " + err.Error()
		} else {
			rep, exit = s.handle(req)
		}
		rep.Pid = os.Getpid()
		b, _ := json.Marshal(rep)
		c.SetWriteDeadline(time.Now().Add(replyTimeout))
		if _, err := c.Write(append(b, '\n')); err != nil {
			return
		}
		// cleared once written: a deadline left set is a runtime timer
		// that wakes the idle guard when it passes, for nothing
		c.SetWriteDeadline(time.Time{})
		if exit {
			quit()
			return
		}
	}
}

// handle applies one request; a lease that ran out is acted on first.
func (s *server) handle(req Request) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.lease.State(BootNow())
	for {
		rep, fire, exit := s.lease.Handle(BootNow(), req)
		if fire {
			s.fire()
			before = s.lease.State(BootNow())
			continue
		}
		s.arm()
		s.note(before, rep, req)
		return rep, exit
	}
}

// note logs the changes of state a request made (not every renewal).
func (s *server) note(before, after Reply, req Request) {
	switch {
	case after.Error != "":
		s.log.Printf("%s refused: %s", req.Op, after.Error)
	case after.Armed && !before.Armed:
		s.log.Printf("armed: lease %s, %d targets (kill set %d)", time.Duration(after.Left).Round(time.Millisecond), after.Targets, after.Gen)
	case !after.Armed && before.Armed:
		s.log.Printf("disarmed")
	case req.Op == OpRenew && req.SetKill && before.Gen != after.Gen:
		s.log.Printf("kill set %d: %s", after.Gen, targetNames(req.Kill))
	case req.Op == OpAck:
		s.log.Printf("record %s acknowledged by the daemon", req.Fired)
		s.writeRecord()
	}
}

// arm sets the timerfd at the lease's deadline (absolute, on
// CLOCK_BOOTTIME: one already passed expires at once), or disarms it.
func (s *server) arm() {
	var its unix.ItimerSpec
	if d, armed := s.lease.Timer(); armed {
		its.Value = unix.NsecToTimespec(max(int64(d), 1))
	}
	if err := unix.TimerfdSettime(s.tfd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
		s.log.Printf("timerfd_settime: %v", err) // never seen: the fd and the values are ours
	}
}

// fire ends the kill set, records and logs it (s.mu held).
func (s *server) fire() {
	deadline, kill := s.lease.Fire()
	start := BootNow()
	s.log.Printf("LEASE RAN OUT (%s late): the daemon did not renew it; ending %s", (start - deadline).Round(time.Millisecond), targetNames(kill))
	ended := act(kill, s.cfg.KillWait)
	took := BootNow() - start
	rec := Record{ID: fmt.Sprintf("%d-%d", start, os.Getpid()), At: time.Now(), Deadline: int64(deadline),
		Late: start - deadline, Took: took, Ended: ended}
	s.lease.Done(rec)
	for _, e := range ended {
		s.log.Printf("ended %s", e)
	}
	s.log.Printf("done in %s (record %s)", took.Round(time.Millisecond), rec.ID)
	s.writeRecord()
	s.arm()
}

func (s *server) writeRecord() {
	rec := s.lease.Last()
	if rec == nil {
		return
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := fsutil.WriteAtomic(s.cfg.Record, append(b, '\n'), 0o600); err != nil {
		s.log.Printf("record: %v", err)
	}
}

// readRecord reads the record file (nil, nil when there is none).
func readRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// ReadRecord is the last firing recorded in path (nil when none): the
// daemon reads it at its start when no guard answers.
func ReadRecord(path string) (*Record, error) { return readRecord(path) }

func targetNames(ts []Target) string {
	if len(ts) == 0 {
		return "nothing (no failover instance runs here)"
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Service
	}
	return strings.Join(names, ", ")
}

// String says what was done to one target, in one line.
func (e Ended) String() string {
	var parts []string
	if e.Cgroup != "" {
		s := fmt.Sprintf("cgroup: %d processes killed", e.Killed)
		if !e.Empty {
			s += ", NOT EMPTY after the wait"
		}
		parts = append(parts, s)
	}
	if len(e.Groups) > 0 {
		parts = append(parts, fmt.Sprintf("process groups %v killed", e.Groups))
	}
	for _, a := range e.Addrs {
		parts = append(parts, a+" removed")
	}
	for _, m := range e.Mounts {
		parts = append(parts, m+" detached")
	}
	for _, err := range e.Errors {
		parts = append(parts, "ERROR "+err)
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing was running")
	}
	return e.Service + ": " + strings.Join(parts, "; ")
}
