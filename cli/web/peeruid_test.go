package web

import (
	"context"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dialAs opens TCP connections whose sockets belong to uid (as root: the
// socket takes the thread's file-system uid, set for the dial alone).
func dialAs(uid int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := syscall.Setfsuid(uid); err != nil {
			return nil, err
		}
		defer syscall.Setfsuid(0)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

// One local user cannot hold every live page of a view on the loopback
// (no token there): past its share it gets 503, and another user (root,
// the admin) still opens its own. The users are told apart by the uid of
// the client's socket, real sockets on 127.0.0.1.
func TestLiveStreamsCappedPerLocalUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test opens sockets as another uid (setfsuid)")
	}
	s, _ := serve(t, Options{MaxStreams: 8})
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("the test server is not on the loopback: %s", s.URL)
	}
	nobody := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialAs(65534)}}
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for range 2 { // MaxStreams/4
		resp, err := nobody.Get(s.URL + "/live?view=grid")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("a live page of uid 65534: %v %v", err, resp)
		}
		open = append(open, resp)
	}
	resp, err := nobody.Get(s.URL + "/live?view=grid")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third live page of uid 65534: %d, want 503", resp.StatusCode)
	}
	root := &http.Client{Timeout: 10 * time.Second}
	resp, err = root.Get(s.URL + "/live?view=grid")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("root's live page while uid 65534 holds its share: %v %v", err, resp)
	}
	open = append(open, resp)
}
