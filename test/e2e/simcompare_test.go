package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"haven/api"
	hnode "haven/node"
	"haven/sim"
	"haven/test/testbed"
)

// eventTap collects the events of one node's events stream (nodemgr
// events --format json), from the moment it is live.
type eventTap struct {
	mu   sync.Mutex
	seen []api.Event
	live chan struct{}
}

func tapEvents(t *testing.T, n *node) *eventTap {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "nodemgr"), "--root", n.root, "events", "--format", "json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	tap := &eventTap{live: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e api.Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if e.Kind == "stream" {
				close(tap.live)
				continue
			}
			tap.mu.Lock()
			tap.seen = append(tap.seen, e)
			tap.mu.Unlock()
		}
	}()
	select {
	case <-tap.live:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the events stream did not start", n.name)
	}
	return tap
}

// since returns the events seen from index i on.
func (m *eventTap) since(i int) []api.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]api.Event(nil), m.seen[i:]...)
}

func (m *eventTap) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

// monitorTap is the instance_monitor transitions of one service on a tap.
type monitorTap struct {
	*eventTap
	svc string
}

func tapMonitor(t *testing.T, n *node, svc string) *monitorTap {
	return &monitorTap{tapEvents(t, n), svc}
}

// since returns the transitions ("from>to") seen from event index i on.
func (m *monitorTap) since(i int) []string {
	var out []string
	for _, e := range m.eventTap.since(i) {
		if e.Kind == "instance_monitor" && e.Service == m.svc {
			out = append(out, e.Fields["from"]+">"+e.Fields["to"])
		}
	}
	return out
}

// The owner's crash (testdata/scenarios/crash_owner.txt) on real daemons
// on loopback and in the simulation: after the crash, every surviving
// node goes through the same monitor states of the service, because both
// run the same node core (issue 9). The start-up is not compared: which
// peer a node hears first there is a race of the real network.
func TestSimAndDaemonsAgreeOnTheOwnersCrash(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	script, err := os.ReadFile(filepath.Join("..", "..", "testdata", "scenarios", "crash_owner.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.RunScript("crash_owner", string(script))
	if err != nil {
		t.Fatal(err)
	}
	crashAt := 10 * time.Second // "run 10s", then "crash n1"
	want := map[string][]string{"n2": nil, "n3": nil}
	for _, e := range res.Events {
		if m, ok := e.Event.(hnode.InstanceMonitor); ok && m.Svc == "web" && e.At >= crashAt && e.Node != "n1" {
			want[e.Node] = append(want[e.Node], string(m.From)+">"+string(m.To))
		}
	}
	if len(want["n2"]) == 0 {
		t.Fatalf("the simulation shows no monitor change on n2 after the crash: %v", want)
	}

	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	taps := map[string]*monitorTap{"n2": tapMonitor(t, c["n2"], "web"), "n3": tapMonitor(t, c["n3"], "web")}
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2", "n3"]`, ""))
	waitFor(t, 20*time.Second, "web up on n1 (the leader)", upOnlyOn(c["n2"], "web", "n1"))
	// the start-up is settled: the monitors of n2 and n3 are idle
	waitFor(t, 10*time.Second, "n2 and n3 idle", func() bool {
		st := c["n2"].status().Services["web"]
		return st.Instances["n2"].Monitor.State == "idle" && st.Instances["n3"].Monitor.State == "idle"
	})
	from := map[string]int{"n2": taps["n2"].len(), "n3": taps["n3"].len()}

	syscallKill(daemonPid(t, c["n1"]))
	killService(t, c["n1"], "web")
	waitFor(t, 30*time.Second, "web failed over to n2", upOnlyOn(c["n3"], "web", "n2"))
	waitFor(t, 10*time.Second, "the events of the failover", func() bool {
		return len(taps["n2"].since(from["n2"])) >= len(want["n2"]) && len(taps["n3"].since(from["n3"])) >= len(want["n3"])
	})
	for _, n := range []string{"n2", "n3"} {
		got := taps[n].since(from[n])
		if !reflect.DeepEqual(got, want[n]) && !(len(got) == 0 && len(want[n]) == 0) {
			t.Errorf("%s: monitor states of web after the crash: daemons %s, simulation %s",
				n, strings.Join(got, " "), strings.Join(want[n], " "))
		}
	}
}
