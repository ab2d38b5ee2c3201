package guard

import (
	"bufio"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// deadlines records the deadlines set on a connection.
type deadlines struct {
	net.Conn
	mu   sync.Mutex
	sets int
	last time.Time // the deadline in place
}

func (d *deadlines) SetDeadline(t time.Time) error      { d.note(t); return d.Conn.SetDeadline(t) }
func (d *deadlines) SetWriteDeadline(t time.Time) error { d.note(t); return d.Conn.SetWriteDeadline(t) }

func (d *deadlines) note(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sets++
	d.last = t
}

func (d *deadlines) state() (int, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sets, d.last
}

// An exchange bounds itself with a deadline and clears it once answered:
// a deadline left set is a timer of the runtime that wakes the idle
// daemon when it passes, for nothing (once per renewal).
func TestClientClearsItsDeadline(t *testing.T) {
	cfg, _ := startGuard(t)
	raw, err := net.Dial("unix", cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	rec := &deadlines{Conn: raw}
	c := NewClient(cfg.Socket, time.Second)
	c.conn, c.rd = rec, bufio.NewReader(rec)
	defer c.Close()
	if _, err := c.Do(Request{Op: OpStatus}); err != nil {
		t.Fatal(err)
	}
	if sets, last := rec.state(); sets < 2 || !last.IsZero() {
		t.Fatalf("%d deadlines set, the last %v: want the exchange's, then none", sets, last)
	}
}

// The guard bounds each reply's write with a deadline and clears it once
// written (the same idle wake-up in the guard, a second after each reply).
func TestServerClearsItsWriteDeadline(t *testing.T) {
	tfd, err := unix.TimerfdCreate(unix.CLOCK_BOOTTIME, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tfd)
	s := &server{log: log.New(testWriter{t}, "guard: ", 0), tfd: tfd}
	a, b := net.Pipe()
	defer b.Close()
	rec := &deadlines{Conn: a}
	go s.serve(rec, func() {})
	if _, err := b.Write([]byte(`{"op":"status"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(b).ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the reply's write deadline cleared", func() bool {
		sets, last := rec.state()
		return sets >= 2 && last.IsZero()
	})
}
