package guard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// Client is the daemon's end: one connection, kept, one request at a
// time, each bounded by the client's timeout (a guard that does not
// answer never holds the daemon's loop longer).
type Client struct {
	path    string
	timeout time.Duration
	conn    net.Conn
	rd      *bufio.Reader
}

// NewClient is a client of the guard listening on socket path; it dials
// at its first request, and again after an error.
func NewClient(path string, timeout time.Duration) *Client {
	return &Client{path: path, timeout: timeout}
}

// Do sends req and returns the guard's reply. A reply with an Error is
// returned as it is, with a nil error; an error is one of the exchange
// (no guard, no answer in time): the connection is then closed.
func (c *Client) Do(req Request) (Reply, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("unix", c.path, c.timeout)
		if err != nil {
			return Reply{}, err
		}
		c.conn, c.rd = conn, bufio.NewReaderSize(conn, 64<<10)
	}
	rep, err := c.exchange(req)
	if err != nil {
		c.Close()
	}
	return rep, err
}

func (c *Client) exchange(req Request) (Reply, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return Reply{}, err
	}
	// the deadline is a timer of the runtime: left set after the answer,
	// it would wake the idle process when it passes, for nothing
	defer c.conn.SetDeadline(time.Time{})
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return Reply{}, err
	}
	line, err := c.rd.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, net.ErrClosed) || len(line) == 0 {
			return Reply{}, fmt.Errorf("the guard did not answer: %w", err)
		}
		return Reply{}, err
	}
	var rep Reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return Reply{}, fmt.Errorf("the guard's answer: %w", err)
	}
	return rep, nil
}

// Close closes the connection (the next Do dials again). The guard goes
// on as it was: a closed connection is no disarm.
func (c *Client) Close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.rd = nil, nil
	}
}
