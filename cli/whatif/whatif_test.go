package whatif

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
	"haven/sim"
)

// pair is the snapshot of a settled 2-node cluster: web (ha) runs on a.
func pair(local string) *sim.Snapshot {
	web := "[DEFAULT]\nnodes = [\"a\", \"b\"]\norchestrate = \"ha\"\n"
	return &sim.Snapshot{Format: sim.SnapshotFormat, Local: local, Cluster: "c",
		Settings: sim.SnapshotSettings{HBTimeout: sim.Duration(3 * time.Second), HBInterval: sim.Duration(time.Second),
			ReadyPeriod: sim.Duration(2 * time.Second), MaintenanceGrace: sim.Duration(6 * time.Second), RejoinGrace: sim.Duration(10 * time.Second)},
		Nodes: map[string]sim.SnapshotNode{"a": {Status: "up"}, "b": {Status: "up"}},
		Services: map[string]sim.SnapshotService{"web": {Config: web, Instances: map[string]sim.SnapshotInstance{
			"a": {Running: true, Monitor: "idle"}, "b": {Monitor: "idle"}}}}}
}

// writeSnapshot writes s as --save does and returns the file.
func writeSnapshot(t *testing.T, s *sim.Snapshot) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snap.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs RunWith as a command line of its own (the flags of svcmgr
// simulate that RunWith reads) and returns what it printed and its exit
// status.
func run(t *testing.T, events []sim.WhatIfEvent, args ...string) (string, int, error) {
	t.Helper()
	var out bytes.Buffer
	app := &cli.App{Name: "simulate", Writer: &out, ErrWriter: &out,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format"}, &cli.StringFlag{Name: "root", Value: t.TempDir()},
			&cli.StringFlag{Name: "from"}, &cli.StringFlag{Name: "save"},
			&cli.DurationFlag{Name: "for", Value: 60 * time.Second},
		},
		Action: func(c *cli.Context) error {
			return RunWith(c, func(*sim.Snapshot) []sim.WhatIfEvent { return events }, c.Duration("for"))
		}}
	err := app.Run(append([]string{"simulate"}, args...))
	return out.String(), cliutil.StatusOf(err), err
}

func event(t *testing.T, verb, arg string) sim.WhatIfEvent {
	t.Helper()
	e, err := sim.ParseWhatIfEvent(verb, arg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A what-if from a snapshot file needs no daemon: the owner killed, web
// moves to b; the human form says so and that nothing was sent, the JSON
// form is the simulation's result.
func TestRunFromSnapshot(t *testing.T) {
	from := writeSnapshot(t, pair("b"))
	kill := []sim.WhatIfEvent{event(t, "kill", "a@+1s")}
	out, code, err := run(t, kill, "--from", from, "--for", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, want := range []string{"What if: --kill a@+1s\n", "Simulated 30s from b's view of cluster c (2 nodes, 1 service)",
		"Nothing was sent to the cluster.", "Timeline:\n", "After 30s:\n", "web              up on b"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, code, err = run(t, kill, "--from", from, "--for", "30s", "--format", "json")
	var res sim.WhatIfResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("--format json: exit %d %v, not a result:\n%s", code, err, out)
	}
	if res.Local != "b" || len(res.Services) != 1 || strings.Join(res.Services[0].UpOn, ",") != "b" {
		t.Fatalf("--format json: %+v, want web up on b from b's view", res)
	}
	// no event: nothing happens, and the output says so
	out, code, _ = run(t, nil, "--from", from, "--for", "10s")
	if code != 0 || !strings.Contains(out, "What if: no event\n") || !strings.Contains(out, "web              up on a") {
		t.Fatalf("no event: exit %d\n%s", code, out)
	}
}

// Bad usage is exit 2 with a message naming what is wrong, before any
// simulation; a snapshot that cannot be taken (no daemon) is exit 1.
func TestRunRefusals(t *testing.T) {
	from := writeSnapshot(t, pair("b"))
	bad := pair("b")
	bad.Format = sim.SnapshotFormat + 1
	newer := writeSnapshot(t, bad)
	garbage := filepath.Join(t.TempDir(), "garbage.json")
	if err := os.WriteFile(garbage, []byte("{\"format\": 1, \"surprise\": true}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		events []sim.WhatIfEvent
		args   []string
		code   int
		want   string
	}{
		{"zero duration", nil, []string{"--from", from, "--for", "0s"}, 2, "want a positive duration"},
		{"from and save", nil, []string{"--from", from, "--save", filepath.Join(t.TempDir(), "s.json")}, 2, "exclude each other"},
		{"unknown format", nil, []string{"--from", from, "--format", "xml"}, 2, "unknown format"},
		{"missing file", nil, []string{"--from", filepath.Join(t.TempDir(), "none.json")}, 2, "simulate --from"},
		{"unknown field", nil, []string{"--from", garbage}, 2, "simulate --from"},
		{"newer format", nil, []string{"--from", newer}, 2, "this version reads format"},
		{"unknown node", []sim.WhatIfEvent{event(t, "kill", "zz")}, []string{"--from", from}, 2, "zz"},
		{"no daemon", nil, []string{"--save", filepath.Join(t.TempDir(), "s.json")}, 1, "the daemon is not running"},
	} {
		out, code, err := run(t, c.events, c.args...)
		if code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: exit %d, %v, want exit %d saying %q\n%s", c.name, code, err, c.code, c.want, out)
		}
		if strings.Contains(out, "Timeline:") {
			t.Errorf("%s: simulated anyway:\n%s", c.name, out)
		}
	}
}

// The snapshot's names come from the cluster (node names, the cluster's):
// the human form prints no control character of theirs.
func TestRenderWhatIfCleansNames(t *testing.T) {
	s := pair("b")
	s.Cluster = "c\x1b[2J\x07"
	res, err := sim.WhatIf(s, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res.Assumptions = append(res.Assumptions, "an assumption\x1b]0;title\x07")
	out := RenderWhatIf(s, []sim.WhatIfEvent{{Verb: "kill", Arg: "a\x1b[1m"}}, res)
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("control characters reach the terminal:\n%q", out)
	}
	if !strings.Contains(out, "(nothing happens)") {
		t.Fatalf("an empty timeline is not said:\n%s", out)
	}
}

// A rollout of a what-if prints its batches, each turn's times, and the
// instances up it kept, one line each (a peer's cause made inert, the
// lines kept).
func TestRenderRollout(t *testing.T) {
	b0, e0 := sim.Duration(0), sim.Duration(4*time.Second)
	res := &sim.WhatIfResult{For: sim.Duration(time.Minute), Rollouts: []sim.WhatIfRollout{{Service: "app", ID: "n2-1", State: "paused: n3: restart failed: \x1b[31mboom",
		Batches:  [][]sim.WhatIfRolloutTurn{{{Node: "n1", State: "ok", Begin: &b0, End: &e0}}, {{Node: "n3", State: "failed", Cause: "restart failed: \x1b[31mboom", Begin: &e0}}},
		FewestUp: 2, MostUp: 3, Least: 2, Most: 3}}}
	out := RenderWhatIf(&sim.Snapshot{Local: "n2", Cluster: "c"}, nil, res)
	for _, want := range []string{"\nRollout n2-1 of app, batch by batch: paused: n3: restart failed: ",
		"\n  batch 1: n1 ok (restart +0.000s, ended +4.000s)\n",
		"\n  batch 2: n3 failed (restart +4.000s, ended -): restart failed: ",
		"\n  instances up at once: fewest 2 since the request (bound 2, flex_target - update_parallelism), most 3 (at most 3)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape left in:\n%q", out)
	}
}
