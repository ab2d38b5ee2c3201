package daemon

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"haven/internal/clock"
)

// A panic inside an API request is caught by net/http, which keeps the
// daemon running: its stack must reach node.log, not only stderr.
func TestAPIServerLogsAHandlerPanicToNodeLog(t *testing.T) {
	dir := t.TempDir()
	f, err := openNodeLog(filepath.Join(dir, "node.log"), false)
	if err != nil {
		t.Fatal(err)
	}
	log := newLogger(f, false, clock.Real{})
	ln, err := net.Listen("unix", filepath.Join(dir, "api.sock"))
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	srv, lln := newAPIServer(ln, h, log)
	go srv.Serve(lln)
	defer srv.Close()
	cl := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return net.Dial("unix", filepath.Join(dir, "api.sock"))
	}}}
	if resp, err := cl.Get("http://haven/status"); err == nil {
		resp.Body.Close()
		t.Fatal("the request of a panicking handler got an answer")
	}
	log.Sync()
	got := lines(t, filepath.Join(dir, "node.log"))
	if count(got, "ERROR") == 0 || count(got, "panic serving") == 0 || count(got, "handler bug") == 0 {
		t.Fatalf("node.log lacks the handler's panic at ERROR:\n%s", strings.Join(got, "\n"))
	}
}
