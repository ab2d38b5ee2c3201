package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/node"
)

// threeNodes is a snapshot of a settled 3-node cluster: web (ha, nodes
// n1 n2 n3) runs on n1, db (orchestrate = no) runs nowhere.
func threeNodes() *Snapshot {
	in := func(running bool) SnapshotInstance { return SnapshotInstance{Running: running, Monitor: "idle"} }
	return &Snapshot{Format: SnapshotFormat, Local: "n2", Cluster: "c",
		Settings: SnapshotSettings{HBTimeout: Duration(3 * time.Second), HBInterval: Duration(time.Second),
			ReadyPeriod: Duration(2 * time.Second), MaintenanceGrace: Duration(6 * time.Second), RejoinGrace: Duration(10 * time.Second)},
		Nodes: map[string]SnapshotNode{"n1": {Status: "up"}, "n2": {Status: "up"}, "n3": {Status: "up"}},
		Services: map[string]SnapshotService{
			"web": {Config: "[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]\norchestrate = \"ha\"\n",
				Instances: map[string]SnapshotInstance{"n1": in(true), "n2": in(false), "n3": in(false)}},
			"db": {Config: "[DEFAULT]\nnodes = [\"n2\", \"n3\"]\norchestrate = \"no\"\n",
				Instances: map[string]SnapshotInstance{"n2": in(false), "n3": in(false)}},
		}}
}

func mustEvents(t *testing.T, pairs ...string) []WhatIfEvent {
	t.Helper()
	var evs []WhatIfEvent
	for i := 0; i < len(pairs); i += 2 {
		e, err := ParseWhatIfEvent(pairs[i], pairs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

func whatIf(t *testing.T, s *Snapshot, evs []WhatIfEvent, d time.Duration) *WhatIfResult {
	t.Helper()
	res, err := WhatIf(s, evs, d)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func upOn(res *WhatIfResult, svc string) []string {
	for _, s := range res.Services {
		if s.Name == svc {
			return s.UpOn
		}
	}
	return nil
}

// starts lists "NODE SVC" for every start begun, in order.
func starts(res *WhatIfResult) []string {
	var out []string
	for _, l := range res.Timeline {
		if l.Kind == (node.ActionBegin{}).Kind() && strings.HasPrefix(l.Text, "start") {
			out = append(out, l.Node+" "+l.Service)
		}
	}
	return out
}

func TestWhatIfNothingHappensWhenNothingChanges(t *testing.T) {
	res := whatIf(t, threeNodes(), nil, 60*time.Second)
	if got := upOn(res, "web"); !reflect.DeepEqual(got, []string{"n1"}) {
		t.Fatalf("web up on %v, want [n1]", got)
	}
	if s := starts(res); len(s) != 0 {
		t.Fatalf("starts in a settled cluster with no event: %v\n%s", s, dump(res))
	}
	if got := upOn(res, "db"); len(got) != 0 {
		t.Fatalf("db (orchestrate = no) up on %v", got)
	}
}

func TestWhatIfKillTheOwner(t *testing.T) {
	res := whatIf(t, threeNodes(), mustEvents(t, "kill", "n1"), 30*time.Second)
	if got := upOn(res, "web"); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Fatalf("web up on %v, want [n2]\n%s", got, dump(res))
	}
	if s := starts(res); !reflect.DeepEqual(s, []string{"n2 web"}) {
		t.Fatalf("starts %v, want [n2 web]", s)
	}
	// the start comes after the detection (hb.timeout) and the ready window
	for _, l := range res.Timeline {
		if l.Kind == (node.ActionBegin{}).Kind() {
			if at := time.Duration(l.At); at < 3*time.Second || at > 10*time.Second {
				t.Fatalf("the start at %s: want after hb.timeout + ready_period (5 s), well before 10 s", at)
			}
		}
	}
	if res.Timeline[0].Kind != "event" || res.Timeline[0].Text != "kill n1" {
		t.Fatalf("the timeline does not begin with the event: %+v", res.Timeline[0])
	}
}

func TestWhatIfFrozenCandidateAndTimedEvents(t *testing.T) {
	res := whatIf(t, threeNodes(), mustEvents(t, "freeze", "n2", "kill", "n1@+5s"), 40*time.Second)
	if got := upOn(res, "web"); !reflect.DeepEqual(got, []string{"n3"}) {
		t.Fatalf("web up on %v, want [n3] (n2 frozen)\n%s", got, dump(res))
	}
	var killAt time.Duration = -1
	for _, l := range res.Timeline {
		if l.Kind == "event" && l.Text == "kill n1" {
			killAt = time.Duration(l.At)
		}
	}
	if killAt != 5*time.Second {
		t.Fatalf("kill n1 at %s, want 5s", killAt)
	}
}

func TestWhatIfSwitchDrainAndConfigChange(t *testing.T) {
	if got := upOn(whatIf(t, threeNodes(), mustEvents(t, "switch", "web:n3"), 30*time.Second), "web"); !reflect.DeepEqual(got, []string{"n3"}) {
		t.Fatalf("switch: web up on %v, want [n3]", got)
	}
	if got := upOn(whatIf(t, threeNodes(), mustEvents(t, "drain", "n1"), 30*time.Second), "web"); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Fatalf("drain n1: web up on %v, want [n2]", got)
	}
	res := whatIf(t, threeNodes(), mustEvents(t, "set", "db:orchestrate=ha"), 30*time.Second)
	if got := upOn(res, "db"); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Fatalf("set db orchestrate=ha: db up on %v, want [n2]\n%s", got, dump(res))
	}
}

func TestWhatIfDownServiceSaysWhy(t *testing.T) {
	res := whatIf(t, threeNodes(), mustEvents(t, "freeze", "web", "kill", "n1"), 30*time.Second)
	for _, s := range res.Services {
		if s.Name != "web" {
			continue
		}
		if len(s.UpOn) != 0 || !strings.Contains(s.Reason, "frozen") || s.Explain == nil {
			t.Fatalf("web: %+v: want down, frozen, with the explanation", s)
		}
		return
	}
	t.Fatal("no web in the result")
}

func TestWhatIfMeasuredDurations(t *testing.T) {
	s := threeNodes()
	web := s.Services["web"]
	web.Instances["n2"] = SnapshotInstance{Monitor: "idle", StartDuration: Duration(7 * time.Second)}
	s.Services["web"] = web
	res := whatIf(t, s, mustEvents(t, "kill", "n1"), 30*time.Second)
	if !strings.Contains(strings.Join(res.Assumptions, "\n"), "web start 7s") {
		t.Fatalf("the assumptions do not say the measured start: %q", res.Assumptions)
	}
	var begin, end time.Duration
	for _, l := range res.Timeline {
		if l.Node == "n2" && l.Service == "web" && strings.HasPrefix(l.Text, "start") {
			switch l.Kind {
			case (node.ActionBegin{}).Kind():
				begin = time.Duration(l.At)
			case (node.ActionEnd{}).Kind():
				end = time.Duration(l.At)
			}
		}
	}
	if end-begin != 7*time.Second {
		t.Fatalf("the start took %s in the simulation, want the measured 7s\n%s", end-begin, dump(res))
	}
}

func TestWhatIfBadEvents(t *testing.T) {
	for _, c := range []struct{ verb, arg, want string }{
		{"kill", "n9", `no node "n9"`},
		{"stop", "nope", `no service "nope"`},
		{"switch", "web:n9", "member node"},
		{"set", "web:oops", "SVC:KEY=VALUE"},
		{"kill", "n1@-5s", "in the past"},
		{"kill", "n1@10:00", "in the past"},
		{"explode", "n1", "unknown event"},
	} {
		e, err := ParseWhatIfEvent(c.verb, c.arg)
		if err == nil {
			_, err = WhatIf(threeNodes(), []WhatIfEvent{e}, time.Second)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--%s %s: error %v, want one saying %q", c.verb, c.arg, err, c.want)
		}
	}
}

func TestWhatIfSnapshotRoundTrip(t *testing.T) {
	s := threeNodes()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*s, back) {
		t.Fatalf("round trip changed the snapshot:\n%+v\n%+v", *s, back)
	}
	evs := mustEvents(t, "kill", "n1", "freeze", "n3@+2s")
	a, b2 := whatIf(t, s, evs, 30*time.Second), whatIf(t, &back, evs, 30*time.Second)
	if !reflect.DeepEqual(a, b2) {
		t.Fatal("the saved snapshot does not replay to the same result")
	}
}

func dump(res *WhatIfResult) string {
	var b strings.Builder
	for _, l := range res.Timeline {
		b.WriteString(time.Duration(l.At).String() + " " + l.Node + " " + l.Service + " " + l.Kind + " " + l.Text + "\n")
	}
	return b.String()
}

// monitoredWeb is threeNodes with web's one resource, app#web, monitored:
// monitor_action act, restart N.
func monitoredWeb(act string, restart int) *Snapshot {
	s := threeNodes()
	web := s.Services["web"]
	web.Config = fmt.Sprintf("[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]\norchestrate = \"ha\"\nmonitor_action = %q\n\n"+
		"[app.web]\nstart = \"true\"\ncheck = \"true\"\nmonitor = true\nrestart = %d\n", act, restart)
	s.Services["web"] = web
	return s
}

// actions lists "NODE KIND" of every action begun (start, stop, restart).
func actions(res *WhatIfResult) []string {
	var out []string
	for _, l := range res.Timeline {
		if l.Kind == (node.ActionBegin{}).Kind() {
			kind, _, _ := strings.Cut(l.Text, " ")
			out = append(out, l.Node+" "+strings.TrimSuffix(kind, ":"))
		}
	}
	return out
}

// --fail follows the restart ladder, then monitor_action, as a real node
// does with the service's own resources (app#web here, not a resource
// of the simulation's own naming).
func TestWhatIfFailFollowsTheLadder(t *testing.T) {
	// no restart, monitor_action switch: n1 stops it, n2 takes it
	res := whatIf(t, monitoredWeb("switch", 0), mustEvents(t, "fail", "web"), 30*time.Second)
	if got := upOn(res, "web"); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Fatalf("switch, restart 0: web up on %v, want [n2]\n%s", got, dump(res))
	}
	if got := actions(res); !reflect.DeepEqual(got, []string{"n1 stop", "n2 start"}) {
		t.Fatalf("switch, restart 0: actions %v, want [n1 stop, n2 start]\n%s", got, dump(res))
	}
	// one restart: in place, nothing moves
	res = whatIf(t, monitoredWeb("switch", 1), mustEvents(t, "fail", "web"), 30*time.Second)
	if got := upOn(res, "web"); !reflect.DeepEqual(got, []string{"n1"}) {
		t.Fatalf("switch, restart 1: web up on %v, want [n1]\n%s", got, dump(res))
	}
	if got := actions(res); !reflect.DeepEqual(got, []string{"n1 restart"}) {
		t.Fatalf("switch, restart 1: actions %v, want [n1 restart]\n%s", got, dump(res))
	}
	// the restart comes within monitor_interval + restart_delay of the failure
	for _, l := range res.Timeline {
		if l.Kind == (node.ActionBegin{}).Kind() {
			if at := time.Duration(l.At); at > 5*time.Second+500*time.Millisecond {
				t.Fatalf("the restart at +%s: want within monitor_interval 5s + restart_delay 500ms", at)
			}
		}
	}
	// monitor_action freezestop, no restart: stopped and frozen on n1, the
	// next leader takes it
	res = whatIf(t, monitoredWeb("freezestop", 0), mustEvents(t, "fail", "web"), 30*time.Second)
	if got := upOn(res, "web"); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Fatalf("freezestop: web up on %v, want [n2]\n%s", got, dump(res))
	}
	for _, sv := range res.Services {
		if sv.Name == "web" && !reflect.DeepEqual(sv.Frozen, []string{"n1"}) {
			t.Fatalf("freezestop: web frozen on %v, want [n1]", sv.Frozen)
		}
	}
	// the snapshot's monitor_interval is the one simulated
	s := monitoredWeb("switch", 1)
	s.Settings.MonitorInterval = Duration(300 * time.Millisecond)
	res = whatIf(t, s, mustEvents(t, "fail", "web"), 30*time.Second)
	for _, l := range res.Timeline {
		if l.Kind == (node.ActionBegin{}).Kind() {
			// the daemon's loop ticks every 500ms at most (driver.TickPeriod)
			if at := time.Duration(l.At); at > 500*time.Millisecond+500*time.Millisecond {
				t.Fatalf("the restart at +%s with monitor_interval 300ms: want within a tick (500ms) + restart_delay (500ms)\n%s", at, dump(res))
			}
		}
	}
}

// A crafted snapshot or an absurd duration is refused at once, never
// simulated for hours: a beat period of a nanosecond, thousands of
// members, a day and more of simulated time, more work than the bound.
func TestWhatIfBounds(t *testing.T) {
	many := func(n int) *Snapshot {
		s := threeNodes()
		for i := range n {
			s.Nodes[fmt.Sprintf("x%d", i)] = SnapshotNode{Status: "up"}
		}
		return s
	}
	for _, c := range []struct {
		what string
		s    *Snapshot
		dur  time.Duration
		want string
	}{
		{"hb.interval 1ns", func() *Snapshot { s := threeNodes(); s.Settings.HBInterval = 1; return s }(), time.Minute, "hb.interval 1ns must be at least 10ms"},
		{"3000 members", many(3000), time.Minute, "3003 nodes"},
		{"monitor_interval 1us", func() *Snapshot { s := threeNodes(); s.Settings.MonitorInterval = Duration(time.Microsecond); return s }(), time.Minute, "monitor_interval 1µs"},
		{"a ready_period of a year", func() *Snapshot { s := threeNodes(); s.Settings.ReadyPeriod = Duration(8760 * time.Hour); return s }(), time.Minute, "ready_period"},
		{"--for 1000h", threeNodes(), 1000 * time.Hour, "at most 24h0m0s"},
		{"60 members for a day", many(57), 24 * time.Hour, "too much to simulate"},
	} {
		done := make(chan error, 1)
		go func() { _, err := WhatIf(c.s, nil, c.dur); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error saying %q", c.what, err, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: still simulating after 20 s, want a refusal", c.what)
		}
	}
}

// A what-if whose context ends stops at its next step: svcmgr simulate
// honours SIGINT and SIGTERM.
func TestWhatIfInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WhatIfContext(ctx, threeNodes(), mustEvents(t, "kill", "n1"), 30*time.Second); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("an ended context: %v, want ErrInterrupted", err)
	}
}

// The nodes' capacity goes into the simulation: web (2 cores) loses n1;
// n2 is full with db's 3 of 4 cores, so web goes to n3, and the answer
// says why n2 was passed over.
func TestWhatIfCapacity(t *testing.T) {
	s := threeNodes()
	for _, n := range []string{"n1", "n2", "n3"} {
		sn := s.Nodes[n]
		sn.Capacity = &dataset.Capacity{CPUMilli: 4000, MemBytes: 8 << 30}
		s.Nodes[n] = sn
	}
	web := s.Services["web"]
	web.Config += "request_cpu = 2\n"
	s.Services["web"] = web
	s.Services["db"] = SnapshotService{Config: "[DEFAULT]\nnodes = [\"n2\"]\norchestrate = \"no\"\nrequest_cpu = 3\n",
		Instances: map[string]SnapshotInstance{"n2": {Running: true, Monitor: "idle"}}}
	res := whatIf(t, s, mustEvents(t, "kill", "n1"), 30*time.Second)
	if got := upOn(res, "web"); !reflect.DeepEqual(got, []string{"n3"}) {
		t.Fatalf("web up on %v, want [n3] (n2 full)\n%s", got, dump(res))
	}
}
