package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/node"
)

// A node action runs node.toml's command with /bin/sh -c in a worker (the
// loop does not wait on it), once, with a node_action event at error
// level and a node_action_end event when the command returns.
func TestNodeActionRunsTheConfiguredCommand(t *testing.T) {
	d := loopDaemon(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "crashed")
	d.node.CrashCommand = "echo called >> " + mark
	d.node.RebootCommand = "exit 3"
	d.ev = make(chan func(), 8)
	d.quit = make(chan struct{})
	d.actx, d.acancel = context.WithCancel(context.Background())
	defer d.acancel()
	sub := d.bus.subscribe()

	d.runNodeActions([]node.NodeAction{{Kind: node.NodeCrash, Reason: "web: app#main restarts spent (monitor_action crash)"},
		{Kind: node.NodeReboot, Reason: "test"}})
	ends := map[string]string{}
	for len(ends) < 2 {
		select {
		case f := <-d.ev:
			f()
		case e := <-sub:
			if e.Kind == "node_action_end" {
				ends[e.Fields["action"]] = e.Fields["error"]
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the node actions did not end: %v", ends)
		}
	}
	d.workers.Wait()
	b, err := os.ReadFile(mark)
	if err != nil || strings.Count(string(b), "called") != 1 {
		t.Fatalf("crash command: file %q, %v; want it called once", b, err)
	}
	if ends["crash"] != "" || !strings.Contains(ends["reboot"], "exit status 3") {
		t.Fatalf("ends: %v; want crash ok, reboot exit status 3", ends)
	}
}
