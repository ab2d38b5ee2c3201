package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
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
// run the same node core. The start-up is not compared: which
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

// monitoredService is testbed.HAService on n1 n2 n3 with its app named
// app#web (the simulation must follow the config's resources by name),
// monitored, with monitor_action act and restart N.
func monitoredService(act string, restart int) string {
	svc := strings.Replace(ladderService(act, restart, "500ms"), `nodes = ["n1", "n2"]`, `nodes = ["n1", "n2", "n3"]`, 1)
	return strings.Replace(svc, "[app.main]", "[app.web]", 1)
}

// realActions are "NODE ACTION" (start, stop, restart) of svc begun on
// the tapped nodes since from, in time order, and the time of the first.
func realActions(taps map[string]*eventTap, from map[string]int, svc string) ([]string, time.Time) {
	var evs []api.Event
	for n, tp := range taps {
		for _, e := range tp.since(from[n]) {
			if e.Kind == "action_begin" && e.Service == svc {
				evs = append(evs, e)
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	var out []string
	for _, e := range evs {
		kind, _, _ := strings.Cut(e.Fields["action"], " ")
		out = append(out, e.Node+" "+kind)
	}
	if len(evs) == 0 {
		return out, time.Time{}
	}
	return out, evs[0].Time
}

// predictedActions are realActions of the prediction, and the time of
// the first after the start of the simulation.
func predictedActions(res *sim.WhatIfResult, svc string) ([]string, time.Duration) {
	var out []string
	first := time.Duration(-1)
	for _, l := range res.Timeline {
		if l.Kind == "action_begin" && l.Service == svc {
			if first < 0 {
				first = time.Duration(l.At)
			}
			kind, _, _ := strings.Cut(l.Text, " ")
			out = append(out, l.Node+" "+strings.TrimSuffix(kind, ":"))
		}
	}
	return out, first
}

// svcmgr simulate --fail against real daemons: the restart ladder, then
// monitor_action (switch), with the service's own resource names. With a
// restart left, the prediction and the daemons restart it in place; with
// none, both stop it on n1 and start it on n2. The actions must be the
// same, in the same order, and the first one within a check period (the
// checks' phase is the daemons' own) of the predicted time.
func TestSimAndDaemonsAgreeOnAFailedResource(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	taps := map[string]*eventTap{}
	for _, n := range names {
		taps[n] = tapEvents(t, c[n])
	}
	createService(t, c["n1"], "api", monitoredService("switch", 1))
	createService(t, c["n1"], "web", monitoredService("switch", 0))
	for _, svc := range []string{"api", "web"} {
		waitFor(t, 20*time.Second, svc+" up on n1", upOnlyOn(c["n2"], svc, "n1"))
		waitFor(t, 10*time.Second, svc+"'s app running on n1", func() bool { return appPid(c["n1"], svc) != 0 })
	}
	waitFor(t, 20*time.Second, "every monitor idle", func() bool {
		for _, n := range c {
			for _, sv := range n.status().Services {
				for _, in := range sv.Instances {
					if in.Monitor.State != "idle" {
						return false
					}
				}
			}
		}
		return true
	})
	for _, tc := range []struct {
		svc, on string
		want    []string
	}{
		{"api", "n1", []string{"n1 restart"}},          // restart 1: in place
		{"web", "n2", []string{"n1 stop", "n2 start"}}, // restart 0, switch
	} {
		res := predict(t, c["n2"], "svcmgr", "simulate", "--fail", tc.svc)
		want, wantFirst := predictedActions(res, tc.svc)
		if !reflect.DeepEqual(want, tc.want) || !reflect.DeepEqual(predictedUpOn(res, tc.svc), []string{tc.on}) {
			t.Fatalf("%s: predicted actions %v, up on %v; want %v, up on %s\n%+v", tc.svc, want, predictedUpOn(res, tc.svc), tc.want, tc.on, res.Timeline)
		}
		from := map[string]int{}
		for n, tp := range taps {
			from[n] = tp.len()
		}
		t0, old := killApp(t, c["n1"], tc.svc)
		restartedOn(t, c[tc.on], tc.svc, old, t0, 40*time.Second)
		waitFor(t, 20*time.Second, tc.svc+" up on "+tc.on+" only", upOnlyOn(c["n3"], tc.svc, tc.on))
		waitFor(t, 10*time.Second, tc.svc+": the actions", func() bool {
			got, _ := realActions(taps, from, tc.svc)
			return len(got) >= len(want)
		})
		got, gotFirst := realActions(taps, from, tc.svc)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the daemons' actions %v, predicted %v", tc.svc, got, want)
		}
		real := gotFirst.Sub(t0)
		t.Logf("%s: first action predicted at +%s, real +%s", tc.svc, wantFirst, real.Round(10*time.Millisecond))
		// the checks' phase: a monitor check every 300ms on a loop that
		// ticks every 500ms, either side
		if d := real - wantFirst; d < -time.Second || d > time.Second {
			t.Errorf("%s: the first action began at +%s, predicted +%s (tolerance 1s)", tc.svc, real, wantFirst)
		}
	}
}
