package placement

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"haven/config"
	"haven/dataset"
)

// TestFastPathsRankAsStages: Rank, with every fast path it may take (the
// node list resolved in Members or indexed in Cluster, the policy's order
// known before the records, the node filters or the soft affinities
// skipped, the instance states given, the caller's buffer, no Excluded
// map), ranks exactly as the stages without any of them (rank(in,
// false)), verdicts included, over generated inputs: every policy, ties,
// nodes without a view or unavailable in every way, frozen, failed or
// excluded instances, constraints with errors, hard and soft affinities
// with running and claimed services, lists longer than the fast paths'
// arrays. The seed is fixed: a failure names its iteration.
func TestFastPathsRankAsStages(t *testing.T) {
	r := rand.New(rand.NewSource(20))
	var hit struct{ members, cluster, insts, spreadPerm, long, hard, soft, lean, explain, excluded, ties int }
	for iter := 0; iter < 4000; iter++ {
		g := randomEquivInput(r)
		for _, explain := range []bool{false, true} {
			ref := g.in
			ref.Explain = explain
			want := rank(&ref, false)

			in := g.in
			in.Explain = explain
			in.Cluster = NewCluster(in.Views)
			hit.cluster++
			if in.Nodes != nil && r.Intn(3) > 0 {
				in.Instances = g.insts
				hit.insts++
			}
			if in.Nodes != nil && r.Intn(2) == 0 {
				in.Members = in.Cluster.Members(in.Nodes)
				hit.members++
			}
			if r.Intn(2) == 0 {
				in.Buf = make([]string, 0, r.Intn(4*len(g.nodes)+1))
				in.NoExcluded = r.Intn(2) == 0
				if in.NoExcluded && !explain && cap(in.Buf) >= 3*len(g.nodes) {
					hit.lean++
				}
			}
			if in.Config.Placement == PolicySpread && len(g.nodes) <= 32 {
				hit.spreadPerm++
			}
			if len(g.nodes) > 32 {
				hit.long++
			}
			if len(in.Config.HardAffinity)+len(in.Config.HardAntiAffinity) > 0 {
				hit.hard++
			}
			if len(in.Config.SoftAffinity)+len(in.Config.SoftAntiAffinity) > 0 {
				hit.soft++
			}
			if explain {
				hit.explain++
			}
			got := Rank(in)

			ctx := fmt.Sprintf("iter %d %q explain=%v members=%v insts=%v lean=%v", iter, in.Config.Placement, explain,
				in.Members != nil, in.Instances != nil, got.why != nil)
			for _, c := range []struct {
				name      string
				got, want any
			}{
				{"candidates", got.Candidates, want.Candidates},
				{"placeable", got.Placeable, want.Placeable},
				{"natural", got.Natural, want.Natural},
				{"verdicts", got.Verdicts, want.Verdicts},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Fatalf("%s: %s with the fast paths\n%+v\nby the stages\n%+v", ctx, c.name, c.got, c.want)
				}
			}
			if got.why == nil && !reflect.DeepEqual(got.Excluded, want.Excluded) {
				t.Fatalf("%s: excluded with the fast paths %v, by the stages %v", ctx, got.Excluded, want.Excluded)
			}
			for _, n := range append(slices.Clone(g.nodes), "ghost") {
				if a, b := got.Reason(n), want.Reason(n); a != b {
					t.Fatalf("%s: reason of %s with the fast paths %q, by the stages %q", ctx, n, a, b)
				}
			}
			hit.excluded += len(want.Excluded)
			if tied(g.in, want.Candidates) {
				hit.ties++
			}
		}
	}
	t.Logf("compared: %+v", hit)
	for name, n := range map[string]int{"members": hit.members, "insts": hit.insts, "spread permutation": hit.spreadPerm,
		"long lists": hit.long, "hard affinities": hit.hard, "soft affinities": hit.soft, "lean": hit.lean, "exclusions": hit.excluded,
		"ties": hit.ties} {
		if n < 100 {
			t.Errorf("only %d rankings with %s: the generator misses a fast path or a case", n, name)
		}
	}
}

// tied reports whether two of the candidates, ranked by the load or the
// score, have the same key: their order is the tie-break's (node name).
func tied(in Input, candidates []string) bool {
	key := func(n string) float64 { return in.Views[n].Data.Load15 }
	switch in.Config.Placement {
	case PolicyLoadAvg:
	case PolicyScore:
		key = func(n string) float64 { return Score(in.Views[n].Data) }
	default:
		return false
	}
	seen := map[float64]bool{}
	for _, n := range candidates {
		if seen[key(n)] {
			return true
		}
		seen[key(n)] = true
	}
	return false
}

// equivInput is a generated ranking input (with no speed-up set) and the
// instance states aligned with its node list.
type equivInput struct {
	in    Input
	nodes []string // the service's node list
	insts []InstanceState
}

// randomEquivInput generates the input of a ranking: a cluster of 1 to 40
// nodes (some without a view), each up, down, in maintenance, shutting or
// unknown, announcing any node monitor, frozen or not, with tied loads
// and memory (in one cluster in three, the same on every node; one in
// three has every node up, idle and not frozen); the ranked service and two others with instances in every
// state; the service's node list given or computed ("*" or names,
// unknown ones included); constraints (with evaluation errors), hard and
// soft affinities.
func randomEquivInput(r *rand.Rand) equivInput {
	policies := []string{PolicyNodesOrder, PolicyLoadAvg, PolicySpread, PolicyScore, PolicyNone, "bogus"}
	statuses := []dataset.NodeStatus{dataset.NodeUp, dataset.NodeUp, dataset.NodeUp, dataset.NodeDown, dataset.NodeStMaint, dataset.NodeStShutting, dataset.NodeStUnknown, ""}
	monitors := []dataset.NodeMonitor{dataset.NodeIdle, dataset.NodeIdle, dataset.NodeIdle, dataset.NodeInit, dataset.NodeRejoin, dataset.NodeMaintenance, dataset.NodeShutting, dataset.NodeDraining}
	states := []dataset.MonitorState{dataset.Idle, dataset.Idle, dataset.Ready, dataset.Starting, dataset.StartFailed, dataset.StopFailed, dataset.Stopping}
	avails := []dataset.Status{dataset.StatusDown, dataset.StatusUp, dataset.StatusWarn, dataset.StatusUnknown}
	svcs := []string{"s", "o1", "o2"}

	size := 1 + r.Intn(8)
	if r.Intn(8) == 0 {
		size = 30 + r.Intn(11) // around the fast paths' 32
	}
	// one cluster in three has one load and one memory on every node:
	// the candidates of the load and score policies tie, and their order
	// is the tie-break's
	sameLoad, sameMem := -1, -1
	if r.Intn(3) == 0 {
		sameLoad, sameMem = r.Intn(3), r.Intn(3)
	}
	// and one in three is calm: every node up, idle and not frozen, so
	// that most are candidates
	calm := r.Intn(3) == 0
	var cluster []string
	vs := map[string]NodeView{}
	for i := 0; i < size; i++ {
		n := fmt.Sprintf("n%02d", i)
		cluster = append(cluster, n)
		if r.Intn(7) == 0 {
			continue // no view
		}
		load, mem := r.Intn(3), r.Intn(3)
		if sameLoad >= 0 {
			load, mem = sameLoad, sameMem
		}
		d := dataset.Node{Name: n, Monitor: monitors[r.Intn(len(monitors))], Frozen: r.Intn(7) == 0,
			Load15: float64(load) / 2, MemAvailPct: float64(mem * 20), Services: map[string]dataset.Instance{}}
		status := statuses[r.Intn(len(statuses))]
		if calm {
			d.Monitor, d.Frozen, status = dataset.NodeIdle, false, dataset.NodeUp
		}
		for _, s := range svcs {
			if r.Intn(3) == 0 {
				continue
			}
			inst := dataset.Instance{Avail: avails[r.Intn(len(avails))], Frozen: r.Intn(8) == 0}
			inst.Monitor.State = states[r.Intn(len(states))]
			if r.Intn(10) == 0 {
				inst.Excluded = "switched away"
			}
			if r.Intn(10) == 0 {
				inst.GaveUp = "restarts spent"
				inst.Monitor.GlobalExpect = []string{dataset.ExpectNone, dataset.ExpectStarted}[r.Intn(2)]
			}
			d.Services[s] = inst
		}
		vs[n] = NodeView{Name: n, Status: status, Data: d}
	}
	r.Shuffle(len(cluster), func(i, j int) { cluster[i], cluster[j] = cluster[j], cluster[i] })

	cfg := &config.ServiceConfig{Name: "s", Placement: policies[r.Intn(len(policies))]}
	switch r.Intn(3) {
	case 0:
		cfg.Nodes = []string{"*"}
	case 1:
		for _, n := range cluster {
			if r.Intn(3) > 0 {
				cfg.Nodes = append(cfg.Nodes, n)
			}
		}
		if r.Intn(4) == 0 {
			cfg.Nodes = append(cfg.Nodes, "stranger") // not a member: no view
		}
		if len(cfg.Nodes) == 0 {
			cfg.Nodes = []string{cluster[0]}
		}
	default:
		cfg.Nodes = []string{cluster[len(cluster)-1], "*"}
	}
	pick := func() []string {
		var out []string
		for _, s := range []string{"o1", "o2", "s", "gone"} {
			if r.Intn(5) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	if r.Intn(3) == 0 {
		cfg.HardAffinity, cfg.HardAntiAffinity = pick(), pick()
	}
	if r.Intn(3) == 0 {
		cfg.SoftAffinity, cfg.SoftAntiAffinity = pick(), pick()
	}
	var services map[string]*config.ServiceConfig
	if r.Intn(2) == 0 {
		services = map[string]*config.ServiceConfig{"s": cfg, "o1": {Name: "o1"}, "o2": {Name: "o2", HardAntiAffinity: []string{"s"}}}
	}

	nodes := NodeList(cfg, cluster)
	in := Input{Service: "s", Config: cfg, ClusterNodes: cluster, Views: vs, Services: services}
	if r.Intn(4) > 0 {
		in.Nodes = nodes
	}
	if r.Intn(3) == 0 {
		in.ConstraintOK = map[string]bool{}
		for _, n := range nodes {
			switch r.Intn(5) {
			case 0: // missing: false
			case 1:
				in.ConstraintOK[n] = false
				if r.Intn(2) == 0 {
					if in.ConstraintErr == nil {
						in.ConstraintErr = map[string]string{}
					}
					in.ConstraintErr[n] = "unknown label"
				}
			default:
				in.ConstraintOK[n] = true
			}
		}
	}
	insts := make([]InstanceState, len(nodes))
	for i, n := range nodes {
		insts[i] = StateOf(vs[n].Data.Services["s"])
	}
	return equivInput{in: in, nodes: nodes, insts: insts}
}
