package placement

import (
	"hash/fnv"
	"reflect"
	"testing"

	"haven/config"
	"haven/constraints"
	"haven/dataset"
)

func views(nodes ...dataset.Node) map[string]NodeView {
	m := map[string]NodeView{}
	for _, n := range nodes {
		if n.Monitor == "" {
			n.Monitor = dataset.NodeIdle
		}
		m[n.Name] = NodeView{Name: n.Name, Status: dataset.NodeUp, Data: n}
	}
	return m
}

func TestPolicies(t *testing.T) {
	vs := views(
		dataset.Node{Name: "n1", Load15: 2, MemAvailPct: 90},
		dataset.Node{Name: "n2", Load15: 0.5, MemAvailPct: 10},
		dataset.Node{Name: "n3", Load15: 0.5, MemAvailPct: 50},
	)
	nodes := []string{"n3", "n1", "n2"}
	cases := []struct {
		policy string
		want   []string
	}{
		{PolicyNodesOrder, []string{"n3", "n1", "n2"}},
		{PolicyNone, []string{"n3", "n1", "n2"}},
		{"bogus", []string{"n3", "n1", "n2"}},
		{PolicyLoadAvg, []string{"n2", "n3", "n1"}}, // n2 and n3 tie: by name
		// scores: n1 90+33.3=123.3, n2 10+66.7=76.7, n3 50+66.7=116.7
		{PolicyScore, []string{"n1", "n3", "n2"}},
	}
	for _, c := range cases {
		got := Order(c.policy, "svc", nodes, vs)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.policy, got, c.want)
		}
	}
}

func TestSpreadStableAndVaried(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	first := map[string]int{}
	for i := 0; i < 200; i++ {
		svc := "svc" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		a := Order(PolicySpread, svc, nodes, nil)
		b := Order(PolicySpread, svc, []string{"n4", "n3", "n2", "n1"}, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: order depends on input order: got %v and %v", svc, a, b)
		}
		first[a[0]]++
	}
	for _, n := range nodes {
		if first[n] < 20 {
			t.Errorf("spread: got %d/200 services led by %s, want a fair share", first[n], n)
		}
	}
}

// An instance whose restart ladder gave up is no candidate
// (docs/behaviour.md 1.1), but for an admin start (its node drives it
// toward the target started): the start may pick it, and ends the give-up.
func TestRankGaveUpIsNoCandidate(t *testing.T) {
	gaveUp := func(expect string) dataset.Instance {
		return dataset.Instance{Avail: dataset.StatusDown, GaveUp: "app#main down, 1 restarts spent",
			Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: expect}}
	}
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2"}, Placement: PolicyNodesOrder}
	vs := views(dataset.Node{Name: "n1", Services: map[string]dataset.Instance{"web": gaveUp(dataset.ExpectNone)}},
		dataset.Node{Name: "n2"})
	r := Rank(Input{Service: "web", Config: cfg, Views: vs, Explain: true})
	if r.Leader() != "n2" || r.Excluded["n1"] != ReasonGaveUp {
		t.Errorf("n1 gave up: leader %q, n1 excluded %q; want n2 and %q", r.Leader(), r.Excluded["n1"], ReasonGaveUp)
	}
	if v := r.Verdicts[len(r.Verdicts)-1]; v.Node != "n1" || !reflect.DeepEqual(v.Reasons, []string{ReasonGaveUp + ": app#main down, 1 restarts spent"}) {
		t.Errorf("n1's verdict: %+v, want the give-up and its reason", v)
	}
	vs = views(dataset.Node{Name: "n1", Services: map[string]dataset.Instance{"web": gaveUp(dataset.ExpectStarted)}},
		dataset.Node{Name: "n2"})
	if r := Rank(Input{Service: "web", Config: cfg, Views: vs}); r.Leader() != "n1" {
		t.Errorf("n1 gave up, admin start: leader %q, want n1", r.Leader())
	}
}

func TestRankFilters(t *testing.T) {
	vs := views(
		dataset.Node{Name: "n1", Services: map[string]dataset.Instance{"web": {Frozen: true}}},
		dataset.Node{Name: "n2", Frozen: true},
		dataset.Node{Name: "n3", Monitor: dataset.NodeRejoin},
		dataset.Node{Name: "n4", Services: map[string]dataset.Instance{"web": {Monitor: dataset.InstanceMonitor{State: dataset.StartFailed}}}},
		dataset.Node{Name: "n5"},
		dataset.Node{Name: "n6", Services: map[string]dataset.Instance{"db": {Avail: dataset.StatusUp}}},
		dataset.Node{Name: "n7"},
		dataset.Node{Name: "n8"},
		dataset.Node{Name: "n9"},
	)
	v := vs["n5"]
	v.Status = dataset.NodeDown
	vs["n5"] = v
	v = vs["n9"]
	v.Status = dataset.NodeStMaint
	vs["n9"] = v
	cfg := &config.ServiceConfig{
		Name: "web", Nodes: []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"},
		Placement: PolicyNodesOrder, HardAntiAffinity: []string{"db"},
	}
	r := Rank(Input{Service: "web", Config: cfg, Views: vs,
		ConstraintOK: map[string]bool{"n1": true, "n2": true, "n3": true, "n4": true, "n5": true, "n6": true, "n7": false, "n8": true, "n9": true, "n10": true}})
	wantEx := map[string]string{
		"n1": ReasonInstanceFrozen, "n2": ReasonNodeFrozen, "n3": "node monitor rejoin",
		"n4": ReasonStartFailed, "n5": ReasonNodeDown, "n6": "hard anti-affinity: db running",
		"n7": ReasonConstraints, "n9": "node maintenance", "n10": ReasonNodeDown,
	}
	if !reflect.DeepEqual(r.Excluded, wantEx) {
		t.Errorf("excluded: got %v, want %v", r.Excluded, wantEx)
	}
	if !reflect.DeepEqual(r.Candidates, []string{"n8"}) {
		t.Errorf("candidates: got %v, want [n8]", r.Candidates)
	}
	if !reflect.DeepEqual(r.Placeable, []string{"n1", "n4", "n8"}) {
		t.Errorf("placeable: got %v, want [n1 n4 n8]", r.Placeable)
	}
	if r.NaturalLeader() != "n1" || r.Leader() != "n8" {
		t.Errorf("leaders: got natural %q leader %q, want n1 n8", r.NaturalLeader(), r.Leader())
	}
	if p := r.Position("n8"); p != 0 {
		t.Errorf("position n8: got %d, want 0", p)
	}
	if p := r.Position("n1"); p != 1 {
		t.Errorf("position n1: got %d, want 1 (after the candidates)", p)
	}
}

func TestRankSoftAndStar(t *testing.T) {
	vs := views(
		dataset.Node{Name: "a"},
		dataset.Node{Name: "b", Services: map[string]dataset.Instance{"db": {Avail: dataset.StatusUp}}},
		dataset.Node{Name: "c"},
	)
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"c", "*"}, SoftAffinity: []string{"db"}}
	r := Rank(Input{Service: "web", Config: cfg, ClusterNodes: []string{"a", "b", "c"}, Views: vs})
	if want := []string{"c", "a", "b"}; !reflect.DeepEqual(r.Natural, want) {
		t.Errorf("natural: got %v, want %v", r.Natural, want)
	}
	if want := []string{"b", "c", "a"}; !reflect.DeepEqual(r.Candidates, want) {
		t.Errorf("candidates: got %v, want %v", r.Candidates, want)
	}
	if r.Excluded != nil {
		t.Errorf("excluded: got %v, want nil", r.Excluded)
	}
}

func TestSpreadKeyIsFNV1a(t *testing.T) {
	h := fnv.New64a()
	h.Write([]byte("web\x00n1"))
	if got, want := SpreadKey("web", "n1"), h.Sum64(); got != want {
		t.Errorf("got %x, want %x", got, want)
	}
}

func TestEvalConstraints(t *testing.T) {
	prog, err := constraints.Compile(`nodename == "n1" or node.env == "DEV"`)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	vs := views(
		dataset.Node{Name: "n1"},
		dataset.Node{Name: "n2", Labels: map[string]string{"env": "DEV"}},
		dataset.Node{Name: "n3", Labels: map[string]string{"env": "PRD"}},
	)
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}, Constraint: prog}
	got := EvalConstraints(cfg, vs)
	want := map[string]bool{"n1": true, "n2": true, "n3": false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	r := Rank(Input{Service: "web", Config: cfg, Views: vs, ConstraintOK: got})
	if !reflect.DeepEqual(r.Candidates, []string{"n1", "n2"}) || r.Excluded["n3"] != ReasonConstraints {
		t.Errorf("rank: got candidates %v excluded %v, want [n1 n2] and n3 constraints violation", r.Candidates, r.Excluded)
	}
	if EvalConstraints(&config.ServiceConfig{Name: "x"}, vs) != nil {
		t.Errorf("no constraint: got a map, want nil (true everywhere)")
	}
}

// TestRankClaims: an instance in ready or starting (not up) counts against
// the anti-affinity of a service that yields to it (the default environment
// reads the other configs from Input.Services), never for an affinity; a
// claim on a dead node counts for nothing.
func TestRankClaims(t *testing.T) {
	claim := func(st dataset.MonitorState) dataset.Instance {
		return dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: st}}
	}
	vs := views(
		dataset.Node{Name: "n1", Services: map[string]dataset.Instance{"db": claim(dataset.Ready)}},
		dataset.Node{Name: "n2", Services: map[string]dataset.Instance{"db": claim(dataset.Starting)}},
		dataset.Node{Name: "n3", Services: map[string]dataset.Instance{"db": claim(dataset.StartFailed)}},
		dataset.Node{Name: "n4", Services: map[string]dataset.Instance{"db": claim(dataset.Ready)}},
	)
	v := vs["n4"]
	v.Status = dataset.NodeDown
	vs["n4"] = v
	nodes := []string{"n1", "n2", "n3", "n4"}
	db := &config.ServiceConfig{Name: "db", Nodes: nodes}
	svcs := map[string]*config.ServiceConfig{"db": db}

	anti := &config.ServiceConfig{Name: "batch", Nodes: nodes, HardAntiAffinity: []string{"db"}}
	r := Rank(Input{Service: "batch", Config: anti, Views: vs, Services: svcs})
	wantEx := map[string]string{"n1": "hard anti-affinity: db claimed", "n2": "hard anti-affinity: db claimed", "n4": ReasonNodeDown}
	if !reflect.DeepEqual(r.Excluded, wantEx) || !reflect.DeepEqual(r.Candidates, []string{"n3"}) {
		t.Errorf("hard anti: got candidates %v excluded %v, want [n3] and %v", r.Candidates, r.Excluded, wantEx)
	}

	aff := &config.ServiceConfig{Name: "app", Nodes: nodes, HardAffinity: []string{"db"}}
	r = Rank(Input{Service: "app", Config: aff, Views: vs, Services: svcs})
	if len(r.Candidates) != 0 || r.Excluded["n1"] != "hard affinity: db not running" {
		t.Errorf("hard affinity: got candidates %v excluded %v, want none (a claim is not running)", r.Candidates, r.Excluded)
	}

	// mutual rule, same priority: batch takes precedence by name, db yields.
	mutual := &config.ServiceConfig{Name: "db", Nodes: nodes, HardAntiAffinity: []string{"batch"}}
	vs2 := views(dataset.Node{Name: "n1", Services: map[string]dataset.Instance{"db": claim(dataset.Ready), "batch": claim(dataset.Ready)}})
	svcs2 := map[string]*config.ServiceConfig{"db": mutual, "batch": anti}
	if r := Rank(Input{Service: "batch", Config: anti, Views: vs2, Services: svcs2, Nodes: []string{"n1"}}); !reflect.DeepEqual(r.Candidates, []string{"n1"}) {
		t.Errorf("mutual, batch: got candidates %v, want [n1] (it keeps the node)", r.Candidates)
	}
	if r := Rank(Input{Service: "db", Config: mutual, Views: vs2, Services: svcs2, Nodes: []string{"n1"}}); len(r.Candidates) != 0 {
		t.Errorf("mutual, db: got candidates %v, want none (it yields to batch)", r.Candidates)
	}
}
