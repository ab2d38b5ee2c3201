package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

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
