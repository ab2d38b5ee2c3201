package monitor

import (
	"fmt"
	"testing"

	"haven/config"
	"haven/dataset"
)

// docs/behaviour.md 6's four affinity tables. Nodes n1 and n2; svc1 is up on n1 and
// down on n2; svc2 is down on both, with the affinity rule toward svc1.
// leader is svc2's first node (nodes order), frozen where svc2's instance is
// frozen, start where the orchestrator starts svc2 ("" for none).
var seedAffinityTables = []struct {
	rule          string
	leader        string
	frozen        string
	start         string
	seedComment   string
	rowInSeedPage int
}{
	{"hard_affinity", "n1", "", "n1", "", 1},
	{"hard_affinity", "n2", "", "n1", "n1 preferred although n2 leads the nodes order", 2},
	{"hard_affinity", "n1", "n1", "", "hard affinity can't be satisfied, the service won't be started", 3},

	{"hard_anti_affinity", "n2", "", "n2", "", 1},
	{"hard_anti_affinity", "n1", "", "n2", "n2 preferred although n1 leads the nodes order", 2},
	{"hard_anti_affinity", "n2", "n2", "", "hard anti-affinity can't be satisfied, the service won't be started", 3},

	{"soft_affinity", "n1", "", "n1", "", 1},
	{"soft_affinity", "n2", "", "n1", "n1 preferred although n2 leads the nodes order", 2},
	{"soft_affinity", "n1", "n1", "n2", "soft affinity can't be satisfied: best effort, started on n2", 3},

	{"soft_anti_affinity", "n2", "", "n2", "", 1},
	{"soft_anti_affinity", "n1", "", "n2", "n2 preferred although n1 leads the nodes order", 2},
	{"soft_anti_affinity", "n2", "n2", "n1", "soft anti-affinity can't be satisfied: best effort, started on n1", 3},
}

func TestSeedAffinityTables(t *testing.T) {
	for _, row := range seedAffinityTables {
		name := fmt.Sprintf("%s row %d (svc2 leader %s, frozen %q)", row.rule, row.rowInSeedPage, row.leader, row.frozen)
		w := newWorld(t, "n1", "n2")
		w.addSvc(&config.ServiceConfig{Name: "svc1", Nodes: []string{"n1", "n2"}})
		w.setInst("n1", "svc1", func(i *dataset.Instance) {
			i.Avail = dataset.StatusUp
			i.Monitor.LocalExpect = dataset.ExpectStarted
		})
		other := map[string]string{"n1": "n2", "n2": "n1"}[row.leader]
		svc2 := &config.ServiceConfig{Name: "svc2", Nodes: []string{row.leader, other}}
		switch row.rule {
		case "hard_affinity":
			svc2.HardAffinity = []string{"svc1"}
		case "hard_anti_affinity":
			svc2.HardAntiAffinity = []string{"svc1"}
		case "soft_affinity":
			svc2.SoftAffinity = []string{"svc1"}
		case "soft_anti_affinity":
			svc2.SoftAntiAffinity = []string{"svc1"}
		}
		w.addSvc(svc2)
		if row.frozen != "" {
			w.setInst(row.frozen, "svc2", func(i *dataset.Instance) { i.Frozen = true })
		}

		// First pass: who enters ready.
		var ready []string
		for _, n := range w.cluster {
			ds := w.step(n)
			if ds["svc1"].Changed {
				t.Errorf("%s: got svc1 decision on %s %+v, want no change (it is up)", name, n, ds["svc1"])
			}
			if ds["svc2"].Monitor.State == dataset.Ready {
				ready = append(ready, n)
			}
		}
		wantReady := []string{}
		if row.start != "" {
			wantReady = []string{row.start}
		}
		if fmt.Sprint(ready) != fmt.Sprint(wantReady) {
			t.Errorf("%s: got ready on %v, want %v (%s)", name, ready, wantReady, row.seedComment)
		}

		// Then run past the ready period: the orchestrator action.
		w.rounds(3, w.ready)
		got := w.upOn("svc2")
		if fmt.Sprint(got) != fmt.Sprint(wantReady) {
			w.dumpLog()
			t.Errorf("%s: got svc2 up on %v, want %v (%s)", name, got, wantReady, row.seedComment)
		}
	}
}
