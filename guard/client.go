package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Client is the daemon's end: one connection, kept, one request at a
// time, each bounded by the client's timeout (a guard that does not
// answer never holds the daemon's loop longer).
//
// The connection is a blocking socket whose calls the kernel bounds
// (SO_SNDTIMEO, SO_RCVTIMEO: what is left of the exchange's timeout
// before each call), not a net.Conn with a deadline: a deadline is a
// timer of the runtime, and one cleared after the answer stays in the
// runtime's heap of timers until it is due (the runtime drops such
// timers only once they are a quarter of the heap), waking an idle
// daemon's poller and its monitor thread 500 ms after every renewal for
// nothing (docs/benchmarks.md, "Idle with the quorum on").
type Client struct {
	path    string
	timeout time.Duration
	fd      int    // -1: not connected
	buf     []byte // read and not yet taken (after the last answer's line)
}

// maxReply bounds an answer's line (a reply is a few hundred bytes).
const maxReply = 64 << 10

// NewClient is a client of the guard listening on socket path; it dials
// at its first request, and again after an error.
func NewClient(path string, timeout time.Duration) *Client {
	return &Client{path: path, timeout: timeout, fd: -1}
}

// Do sends req and returns the guard's reply. A reply with an Error is
// returned as it is, with a nil error; an error is one of the exchange
// (no guard, no answer in time): the connection is then closed.
func (c *Client) Do(req Request) (Reply, error) {
	end := time.Now().Add(c.timeout)
	if c.fd < 0 {
		if err := c.dial(end); err != nil {
			return Reply{}, err
		}
	}
	rep, err := c.exchange(req, end)
	if err != nil {
		c.Close()
	}
	return rep, err
}

func (c *Client) dial(end time.Time) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "dial", Path: c.path, Err: os.NewSyscallError("socket", err)}
	}
	// a listener whose backlog is full makes connect wait: bounded too
	if err = bound(fd, unix.SO_SNDTIMEO, end); err == nil {
		for {
			if err = unix.Connect(fd, &unix.SockaddrUnix{Name: c.path}); err != unix.EINTR {
				break
			}
		}
		if err != nil {
			err = os.NewSyscallError("connect", err)
		}
	}
	if err != nil {
		unix.Close(fd)
		return &os.PathError{Op: "dial", Path: c.path, Err: err}
	}
	c.fd, c.buf = fd, c.buf[:0]
	return nil
}

// errTimeout is an exchange that took longer than the client's timeout.
var errTimeout = errors.New("i/o timeout")

// bound sets the kernel's timeout opt (SO_SNDTIMEO, SO_RCVTIMEO) of fd to
// what is left until end: errTimeout when nothing is.
func bound(fd, opt int, end time.Time) error {
	left := time.Until(end)
	if left < time.Microsecond {
		return errTimeout // (a zero timeout would be none)
	}
	tv := unix.NsecToTimeval(left.Nanoseconds())
	if tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1
	}
	return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv)
}

func (c *Client) exchange(req Request, end time.Time) (Reply, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	b = append(b, '\n')
	for len(b) > 0 {
		if err := bound(c.fd, unix.SO_SNDTIMEO, end); err != nil {
			return Reply{}, fmt.Errorf("write to the guard: %w", err)
		}
		// MSG_NOSIGNAL: a guard gone is an error, not a SIGPIPE
		n, err := unix.SendmsgN(c.fd, b, nil, nil, unix.MSG_NOSIGNAL)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return Reply{}, fmt.Errorf("write to the guard: %w", errTimeout)
		case err != nil:
			return Reply{}, fmt.Errorf("write to the guard: %w", os.NewSyscallError("sendmsg", err))
		}
		b = b[n:]
	}
	line, err := c.readLine(end)
	if err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return Reply{}, fmt.Errorf("the guard's answer: %w", err)
	}
	return rep, nil
}

// readLine returns the next line the guard wrote (without its newline).
func (c *Client) readLine(end time.Time) ([]byte, error) {
	var chunk [4096]byte
	for {
		if i := bytes.IndexByte(c.buf, '\n'); i >= 0 {
			line := bytes.Clone(c.buf[:i])
			c.buf = append(c.buf[:0], c.buf[i+1:]...)
			return line, nil
		}
		if len(c.buf) > maxReply {
			return nil, fmt.Errorf("the guard's answer: a line over %d bytes", maxReply)
		}
		if err := bound(c.fd, unix.SO_RCVTIMEO, end); err != nil {
			return nil, fmt.Errorf("the guard did not answer: %w", err)
		}
		n, err := unix.Read(c.fd, chunk[:])
		switch {
		case err == unix.EINTR: // a signal (SO_RCVTIMEO makes reads not restart)
			continue
		case err == unix.EAGAIN:
			return nil, fmt.Errorf("the guard did not answer: %w", errTimeout)
		case err != nil:
			return nil, fmt.Errorf("the guard did not answer: %w", os.NewSyscallError("read", err))
		case n == 0:
			return nil, errors.New("the guard did not answer: EOF")
		}
		c.buf = append(c.buf, chunk[:n]...)
	}
}

// Close closes the connection (the next Do dials again). The guard goes
// on as it was: a closed connection is no disarm.
func (c *Client) Close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd, c.buf = -1, c.buf[:0]
	}
}
