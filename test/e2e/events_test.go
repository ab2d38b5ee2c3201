package e2e

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/test/testbed"
)

// nodemgr events --format json streams one JSON object a line, live;
// svcmgr logs shows the output of the service's commands.
func TestEventsStreamAndServiceLogs(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	createService(t, n, "web", testbed.PidService)

	cmd := exec.Command(filepath.Join(binDir, "nodemgr"), "--root", n.root, "events", "--format", "json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan api.Event, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e api.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("events: not a JSON object: %q", sc.Text())
				continue
			}
			lines <- e
		}
		close(lines)
	}()
	// the first event says the stream is live; an action after it must show up
	select {
	case e := <-lines:
		if e.Kind != "stream" {
			t.Fatalf("first event %+v, want the stream marker", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no first event within 5s")
	}
	n.must("svcmgr", "-s", "web", "start", "--local")
	deadline := time.After(5 * time.Second)
	for seen := false; !seen; {
		select {
		case e, ok := <-lines:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if e.Kind == "action_end" && e.Service == "web" && strings.Contains(e.Message, "start ok") && e.Node == "n1" {
				seen = true
			}
		case <-deadline:
			t.Fatal("no action_end event for the start of web within 5s")
		}
	}
	logs := n.must("svcmgr", "-s", "web", "logs")
	if !strings.Contains(logs, "start ok") || !strings.Contains(logs, "app#main") {
		t.Fatalf("svcmgr logs lacks the start and the resource's lines:\n%s", logs)
	}
}

// svcmgr logs --follow prints the lines appended after it started.
func TestLogsFollow(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	createService(t, n, "web", testbed.PidService)
	n.must("svcmgr", "-s", "web", "start", "--local")
	n.must("svcmgr", "-s", "web", "stop", "--local")
	cmd := exec.Command(filepath.Join(binDir, "svcmgr"), "--root", n.root, "-s", "web", "logs", "--follow", "--lines", "1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(10 * time.Second)
	// the one past line asked for, then only new lines
	select {
	case l := <-lines:
		if strings.Contains(l, "start ok") {
			t.Fatalf("--lines 1 printed an older line: %q", l)
		}
	case <-deadline:
		t.Fatal("logs --follow printed no past line within 10s")
	}
	n.must("svcmgr", "-s", "web", "start", "--local")
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("logs --follow ended")
			}
			if strings.Contains(l, "start ok") {
				return
			}
		case <-deadline:
			t.Fatal("logs --follow did not show the start within 10s")
		}
	}
}
