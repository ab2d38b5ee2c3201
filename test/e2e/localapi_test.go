package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"haven/api"
)

// rawPost sends one raw request on the node's socket and returns the status
// code and the decoded error body.
func (n *node) rawPost(path string, body []byte) (int, api.Error) {
	n.t.Helper()
	return n.rawPostAs(path, body, false)
}

// rawPostAs sends body chunked (no length announced) when chunked is set.
func (n *node) rawPostAs(path string, body []byte, chunked bool) (int, api.Error) {
	n.t.Helper()
	c, err := net.Dial("unix", filepath.Join(n.root, "run", "daemon.sock"))
	if err != nil {
		n.t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if chunked {
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: haven\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", path)
		body = append([]byte(fmt.Sprintf("%x\r\n", len(body))), append(body, "\r\n0\r\n\r\n"...)...)
	} else {
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: haven\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, len(body))
	}
	go c.Write(body) // the daemon may answer before reading it all
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		n.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var e api.Error
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &e)
	return resp.StatusCode, e
}

// A misspelled field must not change the meaning of a request:
// `"lcoal": true` was ignored and turned a local start into a cluster one.
func TestLocalAPIRefusesUnknownFields(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	code, e := n.rawPost(api.PathServiceAction, []byte(`{"name":"web","action":"start","lcoal":true}`))
	if code != http.StatusBadRequest || e.Status != 2 || !strings.Contains(e.Error, `"lcoal"`) {
		t.Fatalf("unknown field: want 400, exit status 2 naming lcoal; got %d %+v", code, e)
	}
	code, e = n.rawPost(api.PathDaemonStop, []byte(`{"mode":"stop","now":1}`))
	if code != http.StatusBadRequest || e.Status != 2 || !strings.Contains(e.Error, `"now"`) {
		t.Fatalf("unknown field on daemon stop: want 400, exit status 2; got %d %+v", code, e)
	}
	// Names are exact and given once; encoding/json
	// alone kept the last "local" (a cluster-wide action) and took "Local"
	for body, field := range map[string]string{
		`{"name":"web","action":"freeze","local":true,"local":false}`: `duplicate field "local"`,
		`{"name":"web","action":"freeze","Local":true}`:               `unknown field "Local"`,
	} {
		code, e = n.rawPost(api.PathServiceAction, []byte(body))
		if code != http.StatusBadRequest || e.Status != 2 || !strings.Contains(e.Error, field) {
			t.Fatalf("%s: want 400, exit status 2 and %s; got %d %+v", body, field, code, e)
		}
	}
	n.must("nodemgr", "daemon", "status") // and it did not stop
}

// vmHWM is the peak resident set size of pid, in kB.
func vmHWM(t *testing.T, pid int) int { return procKB(t, pid, "VmHWM") }

// procKB is the field key (VmHWM, VmRSS) of pid's /proc status, in kB.
func procKB(t *testing.T, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			var kb int
			fmt.Sscan(strings.TrimSpace(v), &kb)
			return kb
		}
	}
	t.Fatal("no " + key)
	return 0
}

func (n *node) daemonPidFromStatus() int {
	n.t.Helper()
	var ds api.DaemonStatus
	if err := json.Unmarshal([]byte(n.must("nodemgr", "daemon", "status", "--format", "json")), &ds); err != nil {
		n.t.Fatal(err)
	}
	return ds.Pid
}

// Bodies are bounded: 5 MB bodies are refused with a clear error, and 40
// of them at once do not grow the daemon by their size (they were read
// whole and parsed: 100 bodies of 4 MB took it to 1 GB).
func TestLocalAPIBoundsBodies(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	pid := n.daemonPidFromStatus()
	before := vmHWM(t, pid)
	big := []byte(`{"name":"web","config":"` + strings.Repeat("x", 5<<20) + `"}`)
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// half announce their length, half do not (chunked)
			code, e := n.rawPostAs(api.PathCreate, big, i%2 == 0)
			if code != http.StatusRequestEntityTooLarge || e.Status != 2 || !strings.Contains(e.Error, "larger than") {
				errs <- fmt.Sprintf("%d %+v", code, e)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("a 5 MB body: want 413 with exit status 2 saying it is larger than the limit, got %s", e)
	}
	grew := vmHWM(t, pid) - before
	t.Logf("peak RSS grew by %d kB for 40 bodies of 5 MB", grew)
	if grew > 64<<10 {
		t.Fatalf("peak RSS grew by %d kB (> 64 MB) for 40 refused bodies", grew)
	}
	n.must("svcmon")
}

// Connections that trickle their headers or their body do not lock the
// CLI out, and the daemon closes them.
func TestLocalAPITricklingConnectionsDoNotBlockTheCLI(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	sock := filepath.Join(n.root, "run", "daemon.sock")
	tStart := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%20 == 0 {
			// a body that trickles (10 of the 200)
			c.Write([]byte("POST /services/create HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"))
		} else {
			c.Write([]byte("GET /status HTTP/1.1\r\n"))
		}
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond):
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
	}
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		n.must("svcmon")
		n.must("nodemgr", "thaw") // a POST
		if el := time.Since(t0); el > 5*time.Second {
			t.Fatalf("svcmon and an action took %s with 200 trickling connections", el)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("CLI phase done after %s", time.Since(tStart))
	// the daemon closes every half-received request
	closed := map[int]bool{}
	waitFor(t, 20*time.Second, "the daemon to close every trickling connection", func() bool {
		for i, c := range conns {
			c.SetReadDeadline(time.Now().Add(time.Millisecond))
			// an answer (408) may come before the end of the stream
			if _, err := io.Copy(io.Discard, c); err == nil || errors.Is(err, syscall.ECONNRESET) {
				closed[i] = true
			}
		}
		return len(closed) == len(conns)
	})
	t.Logf("every trickling connection closed after %s", time.Since(tStart))
}

// A user who may not reach the root-only socket is told so, not that the
// daemon is not running.
func TestLocalAPIPermissionDeniedIsReportedAsSuch(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs the client as nobody")
	}
	n := newNode(t, "n1", "")
	n.startDaemon()
	// nobody must reach the binary and the root's parents; R/run stays 0700
	bin := t.TempDir()
	for _, d := range []string{bin, filepath.Dir(bin), filepath.Dir(n.root), filepath.Dir(filepath.Dir(n.root)), n.root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binCopy(t, "svcmon", bin), "--root", n.root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	want := "permission denied on " + filepath.Join(n.root, "run", "daemon.sock") + " (the API is root-only)"
	if err == nil || !strings.Contains(e.String(), want) {
		t.Fatalf("svcmon as nobody: want an error saying %q, got %v\nstdout: %s\nstderr: %s", want, err, o.String(), e.String())
	}
}

// Event and log-follow streams have their own cap: a client that opens
// many cannot take the connections the CLI needs.
func TestLocalAPIStreamsAreCapped(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	sock := filepath.Join(n.root, "run", "daemon.sock")
	open, refused := 0, 0
	for i := 0; i < 40; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: haven\r\n\r\n", api.PathEvents)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		switch resp.StatusCode {
		case http.StatusOK:
			open++
		case http.StatusServiceUnavailable:
			b, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(b), "too many open streams") {
				t.Fatalf("stream %d refused with %s", i, b)
			}
			refused++
		default:
			t.Fatalf("stream %d: %s", i, resp.Status)
		}
	}
	if open != 32 || refused != 8 {
		t.Fatalf("40 event streams: %d open, %d refused; want 32 and 8", open, refused)
	}
	n.must("svcmon")
	n.must("nodemgr", "thaw")
}
