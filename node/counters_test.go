package node

import (
	"math"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// Attack: an insider announces a config at version
// counter 2^64-1 (and one whose lineage claims edits after its version).
// Before, the entry won for good and poisoned the Lamport clock: the next
// edit's version wrapped to 0, was acknowledged at once (counter 0 counted
// as included) and lost. Now they are refused, the clock is untouched, and
// an edit after them is installed and acknowledged only once the peer
// holds it. 2^48, the absolute bound of an earlier release, is far ahead of
// the clock: refused too.
func TestInsaneCountersRefused(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), "a\n", map[string]uint64{"n2": 5})}, t0)
	d.drive(t0)
	for _, evil := range []dataset.ConfigEntry{
		entry(ver(math.MaxUint64, "n2"), "evil\n", map[string]uint64{"n2": math.MaxUint64}),
		entry(ver(1<<48, "n2"), "evil\n", nil),
		entry(ver(6, "n2"), "evil\n", map[string]uint64{"n1": math.MaxUint64, "n2": 6}),
	} {
		announce(c, map[string]dataset.ConfigEntry{"web": evil}, t0)
		rd := d.drive(t0)
		if r := eventsOf[ConfigRefused](rd); len(rd.Configs) != 0 || len(r) != 1 || r[0].From != "n2" || r[0].Err == "" {
			t.Fatalf("entry %+v: got configs %+v refusals %+v, want it refused", evil.Version, rd.Configs, r)
		}
		if l := c.State().Lamport; l != 5 {
			t.Fatalf("entry %+v moved the Lamport clock to %d", evil.Version, l)
		}
	}
	c.mergeTargets("n2", map[string]dataset.Target{"web": {Expect: dataset.ExpectStopped, ID: "x", Version: ver(math.MaxUint64, "n2")}}, t0, nil)
	c.mergeClears("n2", map[string]dataset.ClearRequest{"web": {Version: ver(math.MaxUint64, "n2")}}, t0)
	if ss := c.State().Services["web"]; ss.Target.Version.Counter != 0 || ss.Clear.Version.Counter != 0 || c.State().Lamport != 5 {
		t.Fatalf("a target or clear at 2^64-1 was taken: %+v lamport %d", ss, c.State().Lamport)
	}
	if r := eventsOf[VersionRefused](d.drive(t0)); len(r) != 2 || r[0].What != "target" || r[1].What != "clear" || r[0].From != "n2" {
		t.Fatalf("got refusals %+v, want the target and the clear said", r)
	}

	raw := "a\nset x=1\n"
	tk := c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte(raw)}, What: "changed", Op: "set", Kws: []string{"x=1"}, Now: t0})
	rd := d.drive(t0)
	mine := c.KnownConfig("web")
	if len(rd.Answers) != 0 || mine.Version.Counter != 6 || string(d.svcs["web"].Raw) != raw {
		t.Fatalf("edit: answers %+v version %+v raw %q, want unanswered at version 6", rd.Answers, mine.Version, d.svcs["web"].Raw)
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(mine.Version, raw, mine.Includes)}, t0)
	if rd = d.drive(t0); len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil {
		t.Fatalf("got %+v, want the edit answered once n2 holds it", rd.Answers)
	}
	if !strings.Contains(string(d.svcs["web"].Raw), "x=1") {
		t.Fatal("the edit was lost")
	}
}

// An edit has a counter: counter 0 is never included in any content.
func TestIncludesEditNeverCounterZero(t *testing.T) {
	if (dataset.ConfigEntry{Includes: map[string]uint64{}}).IncludesEdit("n1", 0) {
		t.Fatal("counter 0 counted as included")
	}
}

// capAt is the highest counter a node takes at now (a node whose own
// counters are below its clock).
func capAt(now time.Time) uint64 {
	return uint64(now.UnixMilli()) + uint64(VersionLead.Milliseconds())
}

// Attack: an insider announces a version at exactly the
// bound of the counters. With the bound of an earlier release (2^48, taken)
// every version made after it was beyond the bound and refused by every
// peer, for good. The bound is the node's clock now: a target at the
// bound is taken, and the version a node makes after it is taken by a peer
// a millisecond later (the bound moved on), so that a freeze made there
// reaches it; a target beyond it is ignored and said, once.
func TestCounterAtTheBoundFreezesNothing(t *testing.T) {
	n1 := newCore("n1")
	n2 := New(Config{Name: "n2", WriteThrough: true}, State{})
	n2.install("web")
	n2.Ready()
	bound := capAt(t0)
	evil := dataset.Target{Expect: dataset.ExpectNone, ID: "evil", Version: ver(bound, "n3")}
	beyond := dataset.Target{Expect: dataset.ExpectStopped, ID: "evil2", Version: ver(bound+1, "n3")}
	for _, c := range []*Core{n1, n2} {
		c.mergeTargets("n3", map[string]dataset.Target{"web": beyond}, t0, noSnap)
		if r := eventsOf[VersionRefused](c.Ready()); len(r) != 1 || r[0].Counter != bound+1 || !strings.Contains(r[0].Err, "ahead of this node's clock") {
			t.Fatalf("%s: got refusals %+v, want the target beyond the bound said", c.name(), r)
		}
		c.mergeTargets("n3", map[string]dataset.Target{"web": beyond}, t0, noSnap)
		if r := eventsOf[VersionRefused](c.Ready()); len(r) != 0 {
			t.Fatalf("%s: the same refusal said again: %+v", c.name(), r)
		}
		c.mergeTargets("n3", map[string]dataset.Target{"web": evil}, t0, noSnap)
		c.Ready()
		if c.Target("web").ID != "evil" || c.State().Lamport != bound {
			t.Fatalf("%s: target %+v lamport %d, want the insider's at the bound taken", c.name(), c.Target("web"), c.State().Lamport)
		}
	}
	now := t0.Add(time.Millisecond)
	tk := n1.adminTarget(TargetRequest{Service: "web", Action: "freeze", Now: now})
	if a := answers(n1)[tk]; a.Err != nil {
		t.Fatalf("freeze on n1: %v", a.Err)
	}
	frz := n1.Target("web")
	if frz.Version.Counter != bound+1 {
		t.Fatalf("n1's freeze at %d, want %d", frz.Version.Counter, bound+1)
	}
	n2.mergeTargets("n1", map[string]dataset.Target{"web": frz}, now, noSnap)
	if r := eventsOf[VersionRefused](n2.Ready()); len(r) != 0 || n2.Target("web") != frz {
		t.Fatalf("n2: target %+v refusals %+v, want n1's freeze taken", n2.Target("web"), r)
	}
}

// A node whose counter is at its bound makes no version its peers would
// refuse: the admin request is refused and says when to retry; a moment
// later it is taken.
func TestLocalVersionRefusedAheadOfTheClock(t *testing.T) {
	c := newCore("n1")
	bound := capAt(t0)
	c.mergeTargets("n2", map[string]dataset.Target{"web": {Expect: dataset.ExpectNone, ID: "x", Version: ver(bound, "n2")}}, t0, noSnap)
	c.Ready()
	tk := c.adminTarget(TargetRequest{Service: "web", Action: "freeze", Now: t0})
	a := answers(c)[tk]
	if a.Err == nil || a.Bad || !strings.Contains(a.Err.Error(), "retry in 1ms") || c.Target("web").ID != "x" {
		t.Fatalf("got %+v, target %+v: want the freeze refused, retry in 1ms", a, c.Target("web"))
	}
	tk = c.adminTarget(TargetRequest{Service: "web", Action: "clear", Now: t0})
	if a := answers(c)[tk]; a.Err == nil {
		t.Fatalf("clear: got %+v, want it refused", a)
	}
	tk = c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte("x")}, Now: t0})
	if a := answers(c)[tk]; a.Err == nil || c.State().Lamport != bound {
		t.Fatalf("edit: got %+v lamport %d, want it refused before any version", a, c.State().Lamport)
	}
	tk = c.adminTarget(TargetRequest{Service: "web", Action: "freeze", Now: t0.Add(time.Millisecond)})
	if a := answers(c)[tk]; a.Err != nil || c.Target("web").Version.Counter != bound+1 {
		t.Fatalf("got %+v target %+v, want the freeze taken a millisecond later", a, c.Target("web"))
	}
}

// A node whose clock lags a peer's refuses a version made right after the
// counters were pushed to the peer's bound, says so, and takes it once its
// own clock reached it (the peer's data merged again at the tick due).
func TestVersionAheadTakenOnceTheClockReachesIt(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), "a\n", map[string]uint64{"n2": 5})}, t0)
	d.drive(t0)
	v := capAt(t0) + 500 // made on n2, whose clock is 500ms ahead
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1,
		Services: map[string]dataset.Instance{}, Configs: map[string]dataset.ConfigEntry{"web": entry(ver(v, "n2"), "b\n", map[string]uint64{"n2": v})},
		Targets: map[string]dataset.Target{"web": {Expect: dataset.ExpectFrozen, ID: "n2-f", Version: ver(v+1, "n2")}}}}, t0)
	rd := d.drive(t0)
	if len(rd.Configs) != 0 || len(eventsOf[ConfigRefused](rd)) != 1 || len(eventsOf[VersionRefused](rd)) != 1 {
		t.Fatalf("got configs %+v events %v, want the config and the target refused and said", rd.Configs, rd.Events)
	}
	due := c.NextTick(t0, time.Hour)
	if want := t0.Add(500 * time.Millisecond); due.After(want) {
		t.Fatalf("next tick at %v, want by %v (when the clock reaches the version)", due, want)
	}
	c.tick(t0.Add(400 * time.Millisecond))
	if rd := d.drive(t0); len(rd.Configs) != 0 {
		t.Fatalf("taken before the clock reached it: %+v", rd.Configs)
	}
	now := t0.Add(501 * time.Millisecond)
	c.tick(now)
	d.drive(now)
	if got := string(d.svcs["web"].Raw); got != "b\n" || c.Target("web").ID != "n2-f" {
		t.Fatalf("config %q target %+v, want n2's taken once the clock reached them", got, c.Target("web"))
	}
}

// The counters a node holds when it starts bound it too: a cluster whose
// counters went past the clock (2^48, under an earlier release) goes on
// from there, a thousand versions a second at most.
func TestCountersPastTheClockGoOn(t *testing.T) {
	st := State{Lamport: 1 << 48, Services: map[string]ServiceState{"web": {}}}
	n1 := New(Config{Name: "n1", WriteThrough: true}, st.Clone())
	n2 := New(Config{Name: "n2", WriteThrough: true}, st.Clone())
	now := t0
	for i := range 4 {
		now = now.Add(time.Second)
		if i%2 == 0 {
			tk := n1.adminTarget(TargetRequest{Service: "web", Action: "freeze", Now: now})
			if a := answers(n1)[tk]; a.Err != nil {
				t.Fatalf("n1: %v", a.Err)
			}
		} else {
			n1.targetReached("web", nil, noSnap())
			n1.Ready()
		}
		n2.mergeTargets("n1", n1.Targets(), now, noSnap)
		if r := eventsOf[VersionRefused](n2.Ready()); len(r) != 0 || n2.Target("web") != n1.Target("web") {
			t.Fatalf("n2: refusals %+v target %+v, want n1's %+v", r, n2.Target("web"), n1.Target("web"))
		}
	}
	if c := n2.Target("web").Version.Counter; c != 1<<48+4 {
		t.Fatalf("n2's target at %d, want 2^48+4", c)
	}
	// and never further than the lead ahead of where they started
	far := dataset.Target{Expect: dataset.ExpectStopped, ID: "far", Version: ver(1<<48+uint64((VersionLead+time.Hour).Milliseconds()), "n3")}
	n2.mergeTargets("n3", map[string]dataset.Target{"web": far}, now, noSnap)
	if n2.Target("web").ID == "far" {
		t.Fatal("a counter an hour past the run's own was taken")
	}
}
