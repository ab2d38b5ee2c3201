package placement

import (
	"reflect"
	"strings"
	"testing"

	"haven/config"
	"haven/constraints"
	"haven/dataset"
)

// sameRanking checks that Explain changes nothing but Verdicts.
func sameRanking(t *testing.T, in Input) Ranking {
	t.Helper()
	in.Explain = false
	fast := Rank(in)
	in.Explain = true
	rich := Rank(in)
	if len(rich.Verdicts) != len(rich.Natural) {
		t.Fatalf("got %d verdicts for %d nodes", len(rich.Verdicts), len(rich.Natural))
	}
	rich2 := rich
	rich2.Verdicts = nil
	if !reflect.DeepEqual(fast, rich2) {
		t.Fatalf("the ranking differs with Explain:\nwithout %+v\nwith    %+v", fast, rich2)
	}
	return rich
}

func verdictOf(t *testing.T, r Ranking, node string) Verdict {
	t.Helper()
	for _, v := range r.Verdicts {
		if v.Node == node {
			return v
		}
	}
	t.Fatalf("no verdict for %s in %+v", node, r.Verdicts)
	return Verdict{}
}

// TestVerdictsListEveryFilter: a node failing several filters has all of
// them in its verdict, in the filter order, while Excluded keeps the first.
func TestVerdictsListEveryFilter(t *testing.T) {
	prog, err := constraints.Compile(`node.env == "PRD"`)
	if err != nil {
		t.Fatal(err)
	}
	vs := views(
		// rejoin and frozen, constraints false, db running (anti-affinity),
		// instance frozen and start failed
		dataset.Node{Name: "n1", Monitor: dataset.NodeRejoin, Frozen: true, Labels: map[string]string{"env": "DEV"},
			Services: map[string]dataset.Instance{
				"db":  {Avail: dataset.StatusUp},
				"web": {Frozen: true, Monitor: dataset.InstanceMonitor{State: dataset.StartFailed}},
			}},
		dataset.Node{Name: "n2", Labels: map[string]string{"env": "PRD"}, Load15: 0.5},
		dataset.Node{Name: "n3", Labels: map[string]string{"env": "PRD"}, Load15: 0.1},
	)
	v := vs["n3"]
	v.Status = dataset.NodeStMaint
	vs["n3"] = v
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3", "n4"}, Placement: PolicyLoadAvg,
		Constraint: prog, HardAntiAffinity: []string{"db"}, HardAffinity: []string{"app"}}
	ok, errs := ConstraintResults(cfg, vs)
	r := sameRanking(t, Input{Service: "web", Config: cfg, Views: vs, ConstraintOK: ok, ConstraintErr: errs})

	want := []string{"node monitor rejoin", ReasonNodeFrozen, ReasonConstraints,
		"hard affinity: app not running", "hard anti-affinity: db running", ReasonInstanceFrozen, ReasonStartFailed}
	if got := verdictOf(t, r, "n1").Reasons; !reflect.DeepEqual(got, want) {
		t.Errorf("n1 reasons: got %q, want %q", got, want)
	}
	if r.Excluded["n1"] != "node monitor rejoin" {
		t.Errorf("n1 excluded: got %q, want the first filter only", r.Excluded["n1"])
	}
	if got := verdictOf(t, r, "n4"); !reflect.DeepEqual(got.Reasons, []string{ReasonNodeDown}) || !got.NoData || got.Key != "load15 unknown (no data)" {
		t.Errorf("n4 (no view): got %+v, want node down, no data", got)
	}
	if got := verdictOf(t, r, "n3"); got.Reasons[0] != "node maintenance" || got.Key != "load15 0.10" || got.Candidate {
		t.Errorf("n3: got %+v, want node maintenance first, key load15 0.10", got)
	}
	if got := verdictOf(t, r, "n2"); !reflect.DeepEqual(got.Reasons, []string{"hard affinity: app not running"}) {
		t.Errorf("n2: got %q, want only the hard affinity", got.Reasons)
	}
	// natural order by load: n3 0.1, n2 0.5, n1 0, n4 no data -> n1 n3 n2 n4
	for _, v := range r.Verdicts {
		if r.Natural[v.Natural] != v.Node {
			t.Errorf("%s: natural %d, but Natural is %v", v.Node, v.Natural, r.Natural)
		}
	}
}

// TestVerdictConstraintError: a constraint that cannot be evaluated
// excludes the node (as false) and its verdict shows the error.
func TestVerdictConstraintError(t *testing.T) {
	prog, err := constraints.Compile(`int(node.labels["rack"]) > 2`)
	if err != nil {
		t.Fatal(err)
	}
	vs := views(
		dataset.Node{Name: "n1", Labels: map[string]string{"rack": "3"}},
		dataset.Node{Name: "n2", Labels: map[string]string{"rack": "north"}},
		dataset.Node{Name: "n3", Labels: map[string]string{"rack": "1"}},
	)
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}, Constraint: prog}
	ok, errs := ConstraintResults(cfg, vs)
	if !reflect.DeepEqual(ok, EvalConstraints(cfg, vs)) || len(errs) != 1 || errs["n2"] == "" {
		t.Fatalf("got ok %v errs %v, want the same ok as EvalConstraints and one error on n2", ok, errs)
	}
	r := sameRanking(t, Input{Service: "web", Config: cfg, Views: vs, ConstraintOK: ok, ConstraintErr: errs})
	got := verdictOf(t, r, "n2").Reasons
	if len(got) != 1 || !strings.HasPrefix(got[0], ReasonConstraintError+": ") || !strings.Contains(got[0], "north") {
		t.Errorf("n2: got %q, want the evaluation error", got)
	}
	if got := verdictOf(t, r, "n3").Reasons; !reflect.DeepEqual(got, []string{ReasonConstraints}) {
		t.Errorf("n3: got %q, want a plain violation", got)
	}
	if r.Excluded["n2"] != ReasonConstraints || r.Leader() != "n1" {
		t.Errorf("got excluded %v leader %q, want n2 excluded as a violation, leader n1", r.Excluded, r.Leader())
	}
}

// TestVerdictSortKeysAndSoftEffect: each verdict carries the policy's key;
// the soft affinities' move is told ahead/behind; Position orders them.
func TestVerdictSortKeysAndSoftEffect(t *testing.T) {
	vs := views(
		dataset.Node{Name: "a", Load15: 2, MemAvailPct: 90},
		dataset.Node{Name: "b", Load15: 1, Services: map[string]dataset.Instance{"db": {Avail: dataset.StatusUp}}},
		dataset.Node{Name: "c", Load15: 0.5, Frozen: true},
	)
	nodes := []string{"a", "b", "c"}
	cfg := &config.ServiceConfig{Name: "web", Nodes: nodes, SoftAffinity: []string{"db"}, Placement: PolicyNodesOrder}
	r := sameRanking(t, Input{Service: "web", Config: cfg, Views: vs})
	var order []string
	for _, v := range r.Verdicts {
		order = append(order, v.Node)
	}
	if want := []string{"b", "a", "c"}; !reflect.DeepEqual(order, want) {
		t.Errorf("verdict order: got %v, want %v (candidates by soft then policy, then excluded)", order, want)
	}
	a, b, c := verdictOf(t, r, "a"), verdictOf(t, r, "b"), verdictOf(t, r, "c")
	if b.SoftEffect != SoftAhead || b.Soft != 2 || a.SoftEffect != SoftBehind || a.Soft != 1 ||
		!reflect.DeepEqual(a.SoftNotes, []string{"soft affinity: db not running"}) || c.Soft != -1 || c.SoftEffect != "" {
		t.Errorf("soft: got a %+v b %+v c %+v", a, b, c)
	}
	if a.Key != "nodes order #1" || b.Position != 0 || a.Position != 1 || c.Position != 2 {
		t.Errorf("keys/positions: got a %+v b %+v c %+v", a, b, c)
	}
	for policy, want := range map[string]string{PolicyLoadAvg: "load15 2.00", PolicyScore: "score 123.3", PolicySpread: "spread 0x"} {
		cfg := &config.ServiceConfig{Name: "web", Nodes: nodes, Placement: policy}
		r := sameRanking(t, Input{Service: "web", Config: cfg, Views: vs})
		if got := verdictOf(t, r, "a"); !strings.HasPrefix(got.Key, want) || got.Spread != SpreadKey("web", "a") {
			t.Errorf("%s: got key %q spread %x, want %q...", policy, got.Key, got.Spread, want)
		}
	}
}
