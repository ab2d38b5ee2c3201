package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/test/testbed"
)

// A [hook.NAME] of node.toml receives the failover event of a real
// failover: the event as JSON on stdin, HAVEN_EVENT_* in its environment.
func TestHookReceivesFailover(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{timeout: "3s", interval: "1s"})
	dir := t.TempDir()
	for _, n := range names {
		p := filepath.Join(c[n].root, "etc", "node.toml")
		conf := strings.Replace(readFile(t, p), `ready_period = "2s"`, `ready_period = "1s"`, 1)
		conf += fmt.Sprintf("\n[hook.notify]\nevents = [\"failover\"]\ncommand = \"sh -c 'env > %[1]s/$HAVEN_EVENT_NODE.env; cat > %[1]s/$HAVEN_EVENT_NODE.json'\"\ntimeout = \"5s\"\n", dir)
		writeFile(t, p, conf)
		c[n].startDaemon()
	}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				waitFor(t, 20*time.Second, a+" sees "+b+" up", func() bool { return peerStatus(c[a], b) == dataset.NodeUp })
			}
		}
	}
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 30*time.Second, "web up on n1 (the leader)", upOnlyOn(c["n2"], "web", "n1"))

	// the crash of n1: its daemon and the service process it runs
	syscallKill(daemonPid(t, c["n1"]))
	killService(t, c["n1"], "web")
	waitFor(t, 30*time.Second, "web failed over to n2", upOnlyOn(c["n2"], "web", "n2"))
	out := filepath.Join(dir, "n2.json")
	waitFor(t, 20*time.Second, "the hook of n2 ran on the failover", func() bool {
		b, err := os.ReadFile(out)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	var ev api.Event
	if err := json.Unmarshal([]byte(readFile(t, out)), &ev); err != nil {
		t.Fatalf("the hook's stdin is not an event: %v", err)
	}
	if ev.Kind != "failover" || ev.Node != "n2" || ev.Service != "web" || ev.Fields["from"] != "n1" || ev.Fields["reason"] == "" {
		t.Fatalf("the hook got %+v, want the failover of web from n1 on n2", ev)
	}
	env := "\n" + readFile(t, filepath.Join(dir, "n2.env"))
	for _, want := range []string{"HAVEN_HOOK=notify", "HAVEN_EVENT_KIND=failover", "HAVEN_EVENT_NODE=n2", "HAVEN_EVENT_SERVICE=web", "HAVEN_EVENT_FROM=n1"} {
		if !strings.Contains(env, "\n"+want+"\n") {
			t.Errorf("the hook's environment lacks %s", want)
		}
	}
	// the first start, on n1, was no failover
	if _, err := os.Stat(filepath.Join(dir, "n1.json")); err == nil {
		t.Errorf("the hook of n1 ran: %s", readFile(t, filepath.Join(dir, "n1.json")))
	}
}
