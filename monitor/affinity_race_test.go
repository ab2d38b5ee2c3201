package monitor

import (
	"fmt"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
)

// raceWorld is three nodes with services a and b, both led by n2
// (nodes n2,n1,n3), configured by the row.
func raceWorld(t *testing.T, a, b *config.ServiceConfig) *world {
	w := newWorld(t, "n1", "n2", "n3")
	for _, c := range []*config.ServiceConfig{a, b} {
		c.Nodes = []string{"n2", "n1", "n3"}
		w.addSvc(c)
	}
	return w
}

var raceRows = []struct {
	name   string
	a, b   config.ServiceConfig
	yields string // the service that leaves n2
}{
	{"one-directional: the rule holder yields",
		config.ServiceConfig{Name: "a", Priority: 1, HardAntiAffinity: []string{"b"}},
		config.ServiceConfig{Name: "b", Priority: 100}, "a"},
	{"one-directional soft: the rule holder yields",
		config.ServiceConfig{Name: "a", Priority: 1, SoftAntiAffinity: []string{"b"}},
		config.ServiceConfig{Name: "b", Priority: 100}, "a"},
	{"mutual, same priority: the higher name yields",
		config.ServiceConfig{Name: "a", Priority: 100, HardAntiAffinity: []string{"b"}},
		config.ServiceConfig{Name: "b", Priority: 100, HardAntiAffinity: []string{"a"}}, "b"},
	{"mutual: the higher priority value yields",
		config.ServiceConfig{Name: "a", Priority: 200, HardAntiAffinity: []string{"b"}},
		config.ServiceConfig{Name: "b", Priority: 100, HardAntiAffinity: []string{"a"}}, "a"},
	{"mutual soft: one yields",
		config.ServiceConfig{Name: "a", Priority: 100, SoftAntiAffinity: []string{"b"}},
		config.ServiceConfig{Name: "b", Priority: 100, SoftAntiAffinity: []string{"a"}}, "b"},
	{"mutual mixed: the hard holder yields to the soft-only one",
		config.ServiceConfig{Name: "a", Priority: 1, HardAntiAffinity: []string{"b"}},
		config.ServiceConfig{Name: "b", Priority: 100, SoftAntiAffinity: []string{"a"}}, "a"},
}

// TestAntiAffinityRace: a and b both entered ready on n2 (each node decided
// before seeing the other's claim). Exactly the row's service cancels its
// ready on n2, and the two end up on different nodes.
func TestAntiAffinityRace(t *testing.T) {
	for _, row := range raceRows {
		for _, claim := range []dataset.MonitorState{dataset.Ready, dataset.Starting} {
			name := fmt.Sprintf("%s (both %s)", row.name, claim)
			a, b := row.a, row.b
			w := raceWorld(t, &a, &b)
			for _, svc := range []string{"a", "b"} {
				w.setInst("n2", svc, func(i *dataset.Instance) { i.Monitor.State = dataset.Ready })
			}
			ds := w.step("n2")
			for _, svc := range []string{"a", "b"} {
				got := ds[svc].Monitor.State
				if svc == row.yields && got != dataset.Idle {
					t.Errorf("%s: %s on n2: got %q (%s), want idle (it yields)", name, svc, got, ds[svc].Reason)
				}
				if svc != row.yields && got != dataset.Ready {
					t.Errorf("%s: %s on n2: got %q (%s), want ready (it keeps n2)", name, svc, got, ds[svc].Reason)
				}
			}
			if claim == dataset.Starting {
				continue // the end of the action is the shell's
			}
			w.rounds(6, w.ready)
			upA, upB := w.upOn("a"), w.upOn("b")
			keeps := map[string]string{"a": "b", "b": "a"}[row.yields]
			if fmt.Sprint(w.upOn(keeps)) != "[n2]" || fmt.Sprint(w.upOn(row.yields)) != "[n1]" {
				w.dumpLog()
				t.Errorf("%s: got a up on %v, b up on %v, want %s on n2 and %s on n1", name, upA, upB, keeps, row.yields)
			}
		}
	}
}

// TestAntiAffinityRaceFromIdle: both services idle and down everywhere; the
// cluster runs. Whatever the order, they never run (or start) on the same
// node, and each one ends up started. (Both may be ready on a node for one
// Step, when the service without a rule is decided after the rule holder.)
func TestAntiAffinityRaceFromIdle(t *testing.T) {
	for _, row := range raceRows {
		a, b := row.a, row.b
		w := raceWorld(t, &a, &b)
		for i := 0; i < 8; i++ {
			w.round(w.ready)
			for _, n := range w.cluster {
				if ia, ib := w.inst(n, "a"), w.inst(n, "b"); claims(ia) && claims(ib) && hardPair(&a, &b) {
					w.dumpLog()
					t.Fatalf("%s: round %d: a %q/%s and b %q/%s both on %s", row.name, i, ia.Monitor.State, ia.Avail, ib.Monitor.State, ib.Avail, n)
				}
			}
		}
		if ua, ub := w.upOn("a"), w.upOn("b"); len(ua) != 1 || len(ub) != 1 || ua[0] == ub[0] {
			w.dumpLog()
			t.Errorf("%s: got a up on %v, b up on %v, want one node each, different", row.name, ua, ub)
		}
	}
}

func claims(i dataset.Instance) bool {
	return i.Avail == dataset.StatusUp || i.Monitor.State == dataset.Starting
}

func hardPair(a, b *config.ServiceConfig) bool {
	return len(a.HardAntiAffinity) > 0 || len(b.HardAntiAffinity) > 0
}

// TestAntiAffinitySingleNode: two single-node services (no ready window)
// mutually anti-affine on the same node: one Step starts only one of them.
func TestAntiAffinitySingleNode(t *testing.T) {
	w := newWorld(t, "n1")
	w.addSvc(&config.ServiceConfig{Name: "a", Nodes: []string{"n1"}, HardAntiAffinity: []string{"b"}})
	w.addSvc(&config.ServiceConfig{Name: "b", Nodes: []string{"n1"}, HardAntiAffinity: []string{"a"}})
	ds := w.run("n1")
	if ds["a"].Action != ActionStart || ds["b"].Action != ActionNone {
		t.Fatalf("got a %q b %q, want a started only (b: %s)", ds["a"].Action, ds["b"].Action, ds["b"].Reason)
	}
	w.rounds(3, w.ready)
	if got := w.upOn("b"); len(got) != 0 {
		t.Errorf("b: got up on %v, want nowhere (hard anti-affinity: wait)", got)
	}
}

// TestClaimDoesNotSatisfyHardAffinity: svc1 is ready (claimed, not up) on
// n1; svc2 with hard_affinity svc1 waits until svc1 runs (the startup
// serialization), then starts on n1.
func TestClaimDoesNotSatisfyHardAffinity(t *testing.T) {
	for _, claim := range []dataset.MonitorState{dataset.Ready, dataset.Starting} {
		w := newWorld(t, "n1", "n2")
		w.addSvc(&config.ServiceConfig{Name: "svc1", Nodes: []string{"n1", "n2"}})
		w.addSvc(&config.ServiceConfig{Name: "svc2", Nodes: []string{"n1", "n2"}, HardAffinity: []string{"svc1"}})
		w.setInst("n1", "svc1", func(i *dataset.Instance) { i.Monitor.State = claim })
		for _, n := range w.cluster {
			d := w.step(n)["svc2"]
			if d.Monitor.State != dataset.Idle || !strings.Contains(d.Flags, "A") {
				t.Errorf("svc1 %s on n1: svc2 on %s: got %q flags %q, want idle with flag A", claim, n, d.Monitor.State, d.Flags)
			}
		}
		if claim == dataset.Starting {
			w.setInst("n1", "svc1", func(i *dataset.Instance) { i.Monitor.State = dataset.Idle })
		}
		w.rounds(6, w.ready)
		if got1, got2 := w.upOn("svc1"), w.upOn("svc2"); fmt.Sprint(got1, got2) != "[n1] [n1]" {
			w.dumpLog()
			t.Errorf("svc1 %s: got svc1 on %v svc2 on %v, want both on n1", claim, got1, got2)
		}
	}
}
