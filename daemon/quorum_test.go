package daemon

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"haven/config"
)

// An arbitrator votes when it answers 2xx (http) or accepts (tcp) within
// its timeout; a 5xx, a refused connection or a silent server do not.
func TestProbeArbitrator(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer bad.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpAddr := l.Addr().String()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	defer l.Close()
	cases := []struct {
		uri  string
		want bool
		why  string
	}{
		{ok.URL + "/health", true, "200"},
		{bad.URL, false, "503"},
		{slow.URL, false, "deadline"},
		{"tcp://" + tcpAddr, true, "accepted"},
		{"tcp://" + closedAddr, false, "refused"},
	}
	for _, c := range cases {
		start := time.Now()
		got, detail := probeArbitrator(context.Background(), config.Arbitrator{Name: "a", URI: c.uri, Weight: 1, Timeout: 300 * time.Millisecond})
		if got != c.want || !strings.Contains(detail, c.why) {
			t.Errorf("%s: got %v %q, want %v and %q", c.uri, got, detail, c.want, c.why)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: the probe took %s, more than its timeout", c.uri, took)
		}
	}
}

// A fence command succeeds on exit 0, with HAVEN_FENCE_NODE set; it fails
// on another status (with its output) or when it outlasts its timeout.
func TestRunFence(t *testing.T) {
	if err := runFence(context.Background(), config.Stonith{Node: "n1", Command: `test "$HAVEN_FENCE_NODE" = n1`, Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("fence of n1: %v", err)
	}
	err := runFence(context.Background(), config.Stonith{Node: "n1", Command: "echo no power; exit 3", Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exit status 3: no power") {
		t.Fatalf("failing fence: %v", err)
	}
	start := time.Now()
	err = runFence(context.Background(), config.Stonith{Node: "n1", Command: "sleep 10", Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") || time.Since(start) > 3*time.Second {
		t.Fatalf("slow fence: %v after %s", err, time.Since(start))
	}
}
