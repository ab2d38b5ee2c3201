package guard

import (
	"bufio"
	"io"
	"log"
	"net"
	"strings"
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

// An exchange is bounded by the kernel (the socket's timeouts), with no
// timer of the runtime: a guard that takes the request and never
// answers, or answers a byte at a time too slowly, fails the exchange
// within the client's timeout; one that answers in pieces is read whole;
// the connection closed, the next request dials again.
func TestClientBoundsItsExchangeWithoutARuntimeTimer(t *testing.T) {
	dir := t.TempDir()
	sock := dir + "/g.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type mode int
	const (
		silent mode = iota
		trickle
		pieces
	)
	modes := make(chan mode, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func(conn net.Conn, m mode) {
				defer conn.Close()
				rd := bufio.NewReader(conn)
				for {
					if _, err := rd.ReadBytes('\n'); err != nil {
						return
					}
					rep := []byte(`{"version":1,"armed":true,"deadline_ns":42}` + "\n")
					switch m {
					case silent:
						// no answer: the connection stays open until the
						// client gives up and closes it
						io.Copy(io.Discard, rd)
						return
					case trickle:
						// the fault itself is the pace: each byte within
						// the client's bound, the whole answer far beyond it
						for _, c := range rep {
							conn.Write([]byte{c})
							time.Sleep(100 * time.Millisecond)
						}
					case pieces:
						// a pause between the pieces, so that the client
						// reads them apart
						conn.Write(rep[:5])
						time.Sleep(20 * time.Millisecond)
						conn.Write(rep[5:])
					}
				}
			}(conn, <-modes)
		}
	}()
	const timeout = 300 * time.Millisecond
	c := NewClient(sock, timeout)
	defer c.Close()
	for _, m := range []mode{silent, trickle} {
		modes <- m
		done := make(chan error, 1)
		go func() {
			_, err := c.Do(Request{Op: OpStatus})
			done <- err
		}()
		// the bound, not a timing: an unbounded read would wait for the
		// whole answer (trickle: 4 s) or forever (silent)
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "timeout") {
				t.Fatalf("mode %d: %v, want a timeout", m, err)
			}
		case <-time.After(timeout + time.Second):
			t.Fatalf("mode %d: the exchange is still waiting after %s, its bound is %s", m, timeout+time.Second, timeout)
		}
	}
	modes <- pieces
	for i := 0; i < 2; i++ {
		rep, err := c.Do(Request{Op: OpStatus})
		if err != nil || !rep.Armed || rep.Deadline != 42 {
			t.Fatalf("exchange %d, an answer in two pieces: %+v, %v", i, rep, err)
		}
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
