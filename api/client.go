package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"haven/dataset"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// ErrNoDaemon is returned when nothing listens on the socket (no socket
// file, or a connection refused): no daemon runs.
var ErrNoDaemon = errors.New("the daemon is not running")

// ErrNoAnswer is returned when a daemon took the connection (or its
// listener exists) but did not answer in time: it runs, busy or hung. It is
// never ErrNoDaemon: "not running" would be a lie (nodemgr daemon stop
// would report a busy daemon stopped).
var ErrNoAnswer = errors.New("the daemon did not answer in time (it is running, but busy or hung)")

// ErrPermission is returned when the user may not use the socket.
var ErrPermission = errors.New("permission denied")

// StatusError is a refusal from the daemon with the exit status to use.
type StatusError struct {
	Msg    string
	Status int
}

func (e *StatusError) Error() string { return e.Msg }

// Client talks to the local daemon over its unix socket.
type Client struct {
	Socket string
	http   *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &Client{Socket: socket, http: &http.Client{Transport: tr}}
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := "http://haven" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.connErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e Error
		b, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("daemon answered %s", resp.Status)
		}
		if e.Status == 0 {
			e.Status = 1
		}
		return &StatusError{Msg: e.Error, Status: e.Status}
	}
	if out == nil {
		return nil
	}
	if s, ok := out.(*string); ok {
		b, err := io.ReadAll(resp.Body)
		*s = string(b)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// connErr says why the socket did not answer: a permission refusal (the
// API is root-only), a daemon too busy to take the connection, or no
// daemon at all.
func (c *Client) connErr(err error) error {
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%w on %s (the API is root-only)", ErrPermission, c.Socket)
	case errors.Is(err, syscall.EAGAIN):
		return fmt.Errorf("the daemon is not accepting connections (its queue on %s is full): retry", c.Socket)
	}
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w (socket %s)", ErrNoDaemon, c.Socket)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w (socket %s)", ErrNoAnswer, c.Socket)
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("%w (socket %s: %v)", ErrNoDaemon, c.Socket, oe.Err)
	}
	return err
}

// Status returns the cluster status object.
func (c *Client) Status(ctx context.Context) (*dataset.ClusterStatus, error) {
	var s dataset.ClusterStatus
	return &s, c.do(ctx, "GET", PathStatus, nil, nil, &s)
}

// DaemonStatus returns the daemon's own status.
func (c *Client) DaemonStatus(ctx context.Context) (*DaemonStatus, error) {
	var s DaemonStatus
	return &s, c.do(ctx, "GET", PathDaemonStatus, nil, nil, &s)
}

// Stop asks the daemon to stop ("stop" or "shutdown").
func (c *Client) Stop(ctx context.Context, mode string) error {
	return c.do(ctx, "POST", PathDaemonStop, nil, StopRequest{Mode: mode}, nil)
}

// NodeAction runs freeze, thaw or drain on this node.
func (c *Client) NodeAction(ctx context.Context, action string) error {
	return c.do(ctx, "POST", PathNodeAction, nil, NodeActionRequest{Action: action}, nil)
}

// Services lists the services this node knows.
func (c *Client) Services(ctx context.Context) ([]ServiceEntry, error) {
	var out []ServiceEntry
	return out, c.do(ctx, "GET", PathServices, nil, nil, &out)
}

// Create installs a service config.
func (c *Client) Create(ctx context.Context, req CreateRequest) (*ConfigResponse, error) {
	var out ConfigResponse
	return &out, c.do(ctx, "POST", PathCreate, nil, req, &out)
}

// Action runs an action on a service.
func (c *Client) Action(ctx context.Context, req ActionRequest) (*ActionResponse, error) {
	var out ActionResponse
	return &out, c.do(ctx, "POST", PathServiceAction, nil, req, &out)
}

// Config returns the installed config text of a service.
func (c *Client) Config(ctx context.Context, name string) (string, error) {
	var s string
	return s, c.do(ctx, "GET", PathConfig, url.Values{"name": {name}}, nil, &s)
}

// Keyword runs set, unset or get.
func (c *Client) Keyword(ctx context.Context, req KeywordRequest) (*KeywordResponse, error) {
	var out KeywordResponse
	return &out, c.do(ctx, "POST", PathKeyword, nil, req, &out)
}

// Logs returns the last lines of a service's log on node (this node when "").
func (c *Client) Logs(ctx context.Context, node, name string, lines int) (string, error) {
	var s string
	q := url.Values{"name": {name}, "lines": {fmt.Sprint(lines)}}
	if node != "" {
		q.Set("node", node)
	}
	return s, c.do(ctx, "GET", PathLogs, q, nil, &s)
}

// Stream opens a streaming GET (events, logs --follow) and calls fn for each
// line until ctx ends, the daemon closes the stream, or fn returns an error.
func (c *Client) Stream(ctx context.Context, path string, q url.Values, fn func(line []byte) error) error {
	u := "http://haven" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return c.connErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e Error
		json.NewDecoder(resp.Body).Decode(&e)
		return &StatusError{Msg: e.Error, Status: 1}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

// WaitReady polls until the daemon answers or the deadline passes.
func (c *Client) WaitReady(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.DaemonStatus(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
