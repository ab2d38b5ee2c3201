package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/internal/clock"
)

// Budgets of the local API (docs/security.md, "Local API"). The socket is
// root-only; these bound what a buggy or hostile local client costs.
const (
	// maxConns bounds the open connections (file descriptors, goroutines).
	// A connection costs little until it sends a request, so the cap is
	// well above what the CLI and a few scripts hold: connections that
	// trickle their headers are closed after apiHeaderTimeout and cannot
	// lock the CLI out by filling it.
	maxConns = 256
	// maxBody is the largest request body: a service config of 1 MiB
	// fits; a larger body is refused before it is read whole.
	maxBody = 1 << 20
	// maxBodies requests have their body read and decoded at once, so
	// that bodies cost at most maxBodies*maxBody of memory.
	maxBodies = 16
	// maxStreams bounds the open event and log-follow streams, which stay
	// open for as long as their client wants.
	maxStreams = 32
	// apiHeaderTimeout and apiBodyTimeout bound how long a request may
	// take to arrive (a local client sends it in one go).
	apiHeaderTimeout = 2 * time.Second
	apiBodyTimeout   = 5 * time.Second
	// apiIdleTimeout closes a keep-alive connection left idle (the CLI
	// sends its few requests at once); at maxConns the idlest is closed
	// sooner, to make room (connguard.go)
	apiIdleTimeout = 5 * time.Second
	// A refused body is read and thrown away, up to drainMax bytes for up
	// to drainTime, after the refusal is sent: a client still writing it
	// then reads the refusal instead of a reset connection.
	drainMax  = 8 << 20
	drainTime = time.Second
)

// apiLimits holds the semaphores of one daemon's API.
type apiLimits struct {
	bodies  chan struct{}
	streams chan struct{}
	clk     clock.Clock
}

func newAPILimits(clk clock.Clock) *apiLimits {
	return &apiLimits{bodies: make(chan struct{}, maxBodies), streams: make(chan struct{}, maxStreams), clk: clk}
}

// newAPIServer serves h on ln with the budgets above. Errors of the HTTP
// server itself (a panic in a handler, accept errors) go to the node log.
func newAPIServer(ln net.Listener, h http.Handler, log *zap.Logger) (*http.Server, net.Listener) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: apiHeaderTimeout,
		IdleTimeout:       apiIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errorLog(log.Named("api")),
	}
	// No ReadTimeout: net/http would cancel the context of the event and
	// log streams when it fires; decode bounds the body read instead.
	// idle keep-alive connections give way to new ones at the cap
	return srv, guardServer(srv, ln, maxConns, 0)
}

func writeStatus(w http.ResponseWriter, code, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(api.Error{Error: msg, Status: status})
}

// decode reads the JSON body of r into v, strictly: an unknown field (a
// misspelled "local" would turn a local action into a cluster-wide one),
// a field name that matches only case-insensitively, a field given twice
// (`{"local":true,"local":false}`), data after the object, a body over maxBody or one that does not arrive
// within apiBodyTimeout are refused. It answers the refusal itself.
func (l *apiLimits) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	what := r.Method + " " + r.URL.Path
	if r.ContentLength > maxBody {
		w.Header().Set("Connection", "close")
		writeStatus(w, http.StatusRequestEntityTooLarge, 2, tooLarge(what))
		drainRefused(w, r)
		return false
	}
	select {
	case l.bodies <- struct{}{}:
		defer func() { <-l.bodies }()
	case <-r.Context().Done():
		return false
	case <-l.clk.After(apiBodyTimeout):
		writeStatus(w, http.StatusServiceUnavailable, 1,
			fmt.Sprintf("the daemon is busy: %d requests are being read; retry", maxBodies))
		return false
	}
	rc := http.NewResponseController(w)
	// a socket deadline is compared with the wall clock by the runtime's
	// poller, not with the daemon's Clock
	rc.SetReadDeadline(clock.Wall.Now().Add(apiBodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
		if err == nil && dec.Decode(&json.RawMessage{}) != io.EOF {
			err = errors.New("data after the JSON object")
		}
		if err == nil {
			// field names exactly as spelled, each at most once
			err = checkExactJSON(body, reflect.TypeOf(v))
		}
	}
	if err == nil {
		// no deadline once the body is in: the connection stays open
		// for the answer (actions with --wait take minutes)
		rc.SetReadDeadline(time.Time{})
		return true
	}
	// the rest of a refused body is not read: the connection ends with
	// the answer
	w.Header().Set("Connection", "close")
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeStatus(w, http.StatusRequestEntityTooLarge, 2, tooLarge(what))
		drainRefused(w, r)
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeStatus(w, http.StatusRequestTimeout, 2, fmt.Sprintf("%s: the request body did not arrive within %s", what, apiBodyTimeout))
	default:
		writeStatus(w, http.StatusBadRequest, 2, fmt.Sprintf("bad request body (%s): %s", what, strings.TrimPrefix(err.Error(), "json: ")))
	}
	return false
}

// drainRefused sends the refusal written to w, then reads and discards
// the rest of r's body (at most drainMax bytes, for at most drainTime; no
// memory is kept): a client that is still writing a body the daemon
// refused gets the refusal, where closing with its bytes unread reset the
// connection under it ("connection reset by peer" instead of the limit).
func drainRefused(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	rc.Flush()
	rc.SetReadDeadline(clock.Wall.Now().Add(drainTime))
	io.CopyN(io.Discard, r.Body, drainMax)
}

func tooLarge(what string) string {
	return fmt.Sprintf("%s: request body larger than %d KiB, the limit of the local API", what, maxBody>>10)
}

// stream bounds the open streams: h holds a slot for as long as it runs.
// A log request without follow is not a stream.
func (l *apiLimits) stream(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.PathLogs && r.URL.Query().Get("follow") == "" {
			h(w, r)
			return
		}
		select {
		case l.streams <- struct{}{}:
			defer func() { <-l.streams }()
		default:
			writeStatus(w, http.StatusServiceUnavailable, 1,
				fmt.Sprintf("too many open streams (%d: nodemgr events, svcmgr logs --follow); close some and retry", maxStreams))
			return
		}
		h(w, r)
	}
}

// errorLog turns the HTTP server's messages into ERROR lines of the node log.
func errorLog(log *zap.Logger) *stdlog.Logger {
	l, err := zap.NewStdLogAt(log, zap.ErrorLevel)
	if err != nil { // only for a level zap does not know
		return zap.NewStdLog(log)
	}
	return l
}
