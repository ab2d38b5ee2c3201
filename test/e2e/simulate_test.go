package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/api"
	"haven/sim"
	"haven/test/testbed"
)

// svcmgr simulate: the simulation's prediction against what
// the real daemons then do, for a kill, a drain, a freeze, a switch and a
// config change. Compared: where each service runs at the end, the nodes
// that start it in order, and when the first start begins.

// predict runs a what-if on n (svcmgr ARGS --format json).
func predict(t *testing.T, n *node, bin string, args ...string) *sim.WhatIfResult {
	t.Helper()
	out := n.must(bin, append(args, "--format", "json")...)
	var res sim.WhatIfResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return &res
}

// predictedStarts are "NODE SVC" for every start begun, in order, and the
// time of the first.
func predictedStarts(res *sim.WhatIfResult) (starts []string, first time.Duration) {
	first = -1
	for _, l := range res.Timeline {
		if l.Kind == "action_begin" && strings.HasPrefix(l.Text, "start") {
			if first < 0 {
				first = time.Duration(l.At)
			}
			starts = append(starts, l.Node+" "+l.Service)
		}
	}
	return starts, first
}

func predictedUpOn(res *sim.WhatIfResult, svc string) []string {
	for _, s := range res.Services {
		if s.Name == svc {
			return s.UpOn
		}
	}
	return nil
}

// realStarts are the starts begun on the tapped nodes since from, in time
// order, and the time of the first.
func realStarts(taps map[string]*eventTap, from map[string]int) (starts []string, first time.Time) {
	var evs []api.Event
	for n, tp := range taps {
		for _, e := range tp.since(from[n]) {
			if e.Kind == "action_begin" && e.Fields["action"] == "start" {
				evs = append(evs, e)
			}
		}
	}
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].Time.Before(evs[j-1].Time); j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
	for _, e := range evs {
		starts = append(starts, e.Node+" "+e.Service)
	}
	if len(evs) > 0 {
		first = evs[0].Time
	}
	return starts, first
}

// simBed is a 3-node loopback cluster with web (ha on n1 n2 n3, running
// on n1) and db (orchestrate = no), every node's events tapped.
type simBed struct {
	c    map[string]*node
	taps map[string]*eventTap
}

func newSimBed(t *testing.T) *simBed {
	t.Helper()
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	b := &simBed{c: c, taps: map[string]*eventTap{}}
	for _, n := range names {
		b.taps[n] = tapEvents(t, c[n])
	}
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2", "n3"]`, ""))
	createService(t, c["n1"], "db", strings.Replace(testbed.PidService, `orchestrate = "no"`, "orchestrate = \"no\"\nnodes = [\"n1\", \"n2\", \"n3\"]", 1))
	waitFor(t, 20*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	b.settle(t)
	return b
}

// settle waits until every instance monitor is idle and every node holds
// both configs.
func (b *simBed) settle(t *testing.T) {
	t.Helper()
	waitFor(t, 20*time.Second, "every monitor idle", func() bool {
		for _, n := range b.c {
			st := n.status()
			if len(st.Services) != 2 {
				return false
			}
			for _, sv := range st.Services {
				for _, in := range sv.Instances {
					if in.Monitor.State != "idle" || in.Monitor.GlobalExpect != "none" && in.Monitor.GlobalExpect != "" {
						return false
					}
				}
			}
		}
		return true
	})
}

func (b *simBed) marks() map[string]int {
	m := map[string]int{}
	for n, tp := range b.taps {
		m[n] = tp.len()
	}
	return m
}

// compare checks the real cluster against the prediction, from the tap
// marks taken just before the real change at t0.
func (b *simBed) compare(t *testing.T, what string, res *sim.WhatIfResult, svc string, from map[string]int, t0 time.Time, observer *node) {
	t.Helper()
	want := predictedUpOn(res, svc)
	if len(want) != 1 {
		t.Fatalf("%s: the prediction puts %s on %v, want one node:\n%+v", what, svc, want, res.Timeline)
	}
	waitFor(t, 40*time.Second, fmt.Sprintf("%s: %s up on %s, as predicted", what, svc, want[0]), upOnlyOn(observer, svc, want[0]))
	wantStarts, wantFirst := predictedStarts(res)
	// the start's end is the check after it: give the events a moment
	waitFor(t, 10*time.Second, what+": the start events", func() bool {
		got, _ := realStarts(b.taps, from)
		return len(got) >= len(wantStarts)
	})
	gotStarts, gotFirst := realStarts(b.taps, from)
	if !reflect.DeepEqual(gotStarts, wantStarts) {
		t.Errorf("%s: starts %v, predicted %v", what, gotStarts, wantStarts)
	}
	if len(wantStarts) > 0 {
		real := gotFirst.Sub(t0)
		t.Logf("%s: first start predicted at +%s, real +%s", what, wantFirst, real.Round(10*time.Millisecond))
		// the beats' phase moves a detection by up to hb.interval (1s)
		if d := real - wantFirst; d < -1500*time.Millisecond || d > 1500*time.Millisecond {
			t.Errorf("%s: the first start began at +%s, predicted +%s (tolerance 1.5s)", what, real, wantFirst)
		}
	}
}

// treeDigest hashes every file under the node's etc/ and var/ (the
// configs and the durable state).
func treeDigest(t *testing.T, n *node) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, dir := range []string{"etc", "var"} {
		filepath.WalkDir(filepath.Join(n.root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				out[p] = sha256.Sum256(b)
			}
			return nil
		})
	}
	return out
}

func TestSimulatePredictsSwitchDrainAndConfigChange(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	b := newSimBed(t)
	c := b.c

	// the what-if changes nothing and sends nothing
	before := map[string]map[string][32]byte{}
	for n, nd := range c {
		before[n] = treeDigest(t, nd)
	}
	from := b.marks()
	snap := filepath.Join(t.TempDir(), "snap.json")
	saved := predict(t, c["n2"], "svcmgr", "simulate", "--kill", "n1", "--freeze", "n3@+1s", "--save", snap)
	replayed := predict(t, c["n3"], "svcmgr", "simulate", "--kill", "n1", "--freeze", "n3@+1s", "--from", snap)
	if !reflect.DeepEqual(saved.Timeline, replayed.Timeline) || !reflect.DeepEqual(saved.Services, replayed.Services) {
		t.Errorf("the saved snapshot replays differently:\n%+v\n%+v", saved.Timeline, replayed.Timeline)
	}
	if got := predictedUpOn(saved, "web"); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Errorf("kill n1: predicted web on %v, want [n2]", got)
	}
	if raw, err := os.ReadFile(snap); err != nil || strings.Contains(string(raw), "secret") {
		t.Errorf("the snapshot file: %v (it must hold no secret)", err)
	}
	for _, bad := range []struct{ args []string }{
		{[]string{"--kill", "n9"}}, {[]string{"--stop", "nope"}}, {[]string{"--kill", "n1@-5s"}}, {[]string{"--switch", "web"}},
	} {
		r := c["n2"].run("svcmgr", append([]string{"simulate"}, bad.args...)...)
		if r.Code != 2 || !strings.Contains(r.Err, "svcmgr") {
			t.Errorf("simulate %v: exit %d, stderr %q: want 2 with a clear message", bad.args, r.Code, r.Err)
		}
	}
	for n, nd := range c {
		if after := treeDigest(t, nd); !reflect.DeepEqual(after, before[n]) {
			t.Errorf("%s: simulate changed files under etc/ or var/", n)
		}
	}
	for n, tp := range b.taps {
		for _, e := range tp.since(from[n]) {
			if e.Kind == "action_begin" || e.Kind == "target" || e.Kind == "node_frozen" || e.Kind == "instance_frozen" {
				t.Errorf("%s: simulate caused an event: %+v", n, e)
			}
		}
	}

	// a switch (svcmgr switch --dry-run)
	res := predict(t, c["n2"], "svcmgr", "-s", "web", "switch", "--to", "n3", "--dry-run")
	from, t0 := b.marks(), time.Now()
	c["n2"].must("svcmgr", "-s", "web", "switch", "--to", "n3")
	b.compare(t, "switch", res, "web", from, t0, c["n1"])
	b.settle(t)

	// a drain of the owner (nodemgr drain --dry-run)
	res = predict(t, c["n3"], "nodemgr", "drain", "--dry-run")
	from, t0 = b.marks(), time.Now()
	c["n3"].must("nodemgr", "drain")
	b.compare(t, "drain", res, "web", from, t0, c["n1"])
	b.settle(t)

	// a config change: db orchestrated from now on
	res = predict(t, c["n2"], "svcmgr", "simulate", "--set", "db:orchestrate=ha")
	from, t0 = b.marks(), time.Now()
	c["n2"].must("svcmgr", "-s", "db", "set", "--kw", "orchestrate=ha")
	b.compare(t, "config change", res, "db", from, t0, c["n1"])
}

func TestSimulatePredictsKill(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	b := newSimBed(t)
	res := predict(t, b.c["n2"], "svcmgr", "simulate", "--kill", "n1")
	delete(b.taps, "n1")
	from, t0 := b.marks(), time.Now()
	syscallKill(daemonPid(t, b.c["n1"]))
	killService(t, b.c["n1"], "web")
	b.compare(t, "kill", res, "web", from, t0, b.c["n3"])
}

func TestSimulatePredictsFreezeThenKill(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	b := newSimBed(t)
	res := predict(t, b.c["n3"], "svcmgr", "simulate", "--freeze", "n2", "--kill", "n1")
	delete(b.taps, "n1")
	from, t0 := b.marks(), time.Now()
	b.c["n2"].must("nodemgr", "freeze")
	syscallKill(daemonPid(t, b.c["n1"]))
	killService(t, b.c["n1"], "web")
	b.compare(t, "freeze n2, kill n1", res, "web", from, t0, b.c["n3"])
}

// A crafted snapshot (svcmgr simulate --from) is refused at once with exit
// 2, naming what is out of bounds; a large one within the bounds stops
// at SIGINT or SIGTERM instead of running to its end.
func TestSimulateBoundsAndSignals(t *testing.T) {
	t.Parallel() // no daemon: svcmgr alone on files of its own
	n := newNode(t, "n1", "")
	dir := t.TempDir()
	write := func(name string, s *sim.Snapshot) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		writeFile(t, p, string(b))
		return p
	}
	snap := func(nodes int, interval time.Duration) *sim.Snapshot {
		s := &sim.Snapshot{Format: sim.SnapshotFormat, Local: "n1", Cluster: "c", Nodes: map[string]sim.SnapshotNode{},
			Settings: sim.SnapshotSettings{HBTimeout: sim.Duration(3 * time.Second), HBInterval: sim.Duration(interval),
				ReadyPeriod: sim.Duration(2 * time.Second), MaintenanceGrace: sim.Duration(6 * time.Second), RejoinGrace: sim.Duration(10 * time.Second)},
			Services: map[string]sim.SnapshotService{"web": {Config: "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\norchestrate = \"ha\"\n",
				Instances: map[string]sim.SnapshotInstance{"n1": {Running: true, Monitor: "idle"}}}}}
		for i := range nodes {
			s.Nodes[fmt.Sprintf("n%d", i+1)] = sim.SnapshotNode{Status: "up"}
		}
		return s
	}
	for _, c := range []struct {
		file string
		args []string
		want string
	}{
		{write("tiny.json", snap(3, time.Nanosecond)), nil, "hb.interval 1ns must be at least 10ms"},
		{write("crowd.json", snap(3000, time.Second)), nil, "3000 nodes"},
		{write("ok.json", snap(3, time.Second)), []string{"--for", "1000h"}, "at most 24h"},
	} {
		start := time.Now()
		r := n.run("svcmgr", append([]string{"simulate", "--from", c.file, "--kill", "n2"}, c.args...)...)
		if r.Code != 2 || !strings.Contains(r.Err, c.want) {
			t.Errorf("simulate --from %s %v: %s, want exit 2 saying %q", filepath.Base(c.file), c.args, r, c.want)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("simulate --from %s took %s to refuse", filepath.Base(c.file), took)
		}
	}
	// within the bounds, long: SIGINT, then SIGTERM, end it
	big := write("big.json", snap(57, time.Second))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(filepath.Join(binDir, "svcmgr"), "--root", n.root, "simulate", "--from", big, "--kill", "n2")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Fatalf("the large simulation ended by itself within 1s (%v): not a test of the signal", err)
		case <-time.After(time.Second):
		}
		cmd.Process.Signal(sig)
		sent := time.Now()
		select {
		case <-exited:
			t.Logf("%s: svcmgr simulate ended %s after it", sig, time.Since(sent).Round(time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("%s: exit %d, stderr %q: want 1, interrupted", sig, code, stderr.String())
			}
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("svcmgr simulate still running 5s after %s", sig)
		}
	}
}
