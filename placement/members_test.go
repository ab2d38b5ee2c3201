package placement

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"haven/config"
	"haven/dataset"
)

// TestMembersRankAlike: Rank with Members (the node list resolved once,
// the policy order given in advance) ranks exactly as without, verdicts
// included, over random clusters (ties in load and score, nodes without
// a view, down or frozen nodes) and every policy.
func TestMembersRankAlike(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for iter := 0; iter < 2000; iter++ {
		in, m := randomRankInput(r)
		for _, explain := range []bool{false, true} {
			in.Explain, in.Members = explain, nil
			want := Rank(in)
			in.Members = m
			if got := Rank(in); !reflect.DeepEqual(got, want) {
				t.Fatalf("iter %d %s explain=%v: with Members\n%+v\nwithout\n%+v", iter, in.Config.Placement, explain, got, want)
			}
		}
	}
}

// randomRankInput is the input of a random ranking (ties in load and
// score, nodes without a view, down or frozen nodes, frozen or failed
// instances, every policy), and the Members of its node list.
func randomRankInput(r *rand.Rand) (Input, *Members) {
	policies := []string{PolicyNodesOrder, PolicyLoadAvg, PolicySpread, PolicyScore, PolicyNone}
	var nodes []string
	vs := map[string]NodeView{}
	for i := 0; i < 1+r.Intn(8); i++ {
		n := fmt.Sprintf("n%d", r.Intn(20))
		if _, dup := vs[n]; dup {
			continue
		}
		nodes = append(nodes, n)
		if r.Intn(6) == 0 {
			vs[n] = NodeView{} // placeholder: removed below (no view)
			continue
		}
		st := dataset.NodeUp
		if r.Intn(5) == 0 {
			st = dataset.NodeDown
		}
		vs[n] = NodeView{Name: n, Status: st, Data: dataset.Node{Name: n, Monitor: dataset.NodeIdle, Frozen: r.Intn(6) == 0,
			Load15: float64(r.Intn(3)) / 2, MemAvailPct: float64(r.Intn(3) * 20)}}
	}
	for n, v := range vs {
		if v.Name == "" {
			delete(vs, n)
		}
	}
	cl := NewCluster(vs)
	m := cl.Members(nodes)
	insts := make([]InstanceState, len(nodes))
	for i := range insts {
		insts[i] = InstanceState{Frozen: r.Intn(8) == 0, State: dataset.MonitorState([]string{"idle", "start failed"}[r.Intn(2)])}
	}
	cfg := &config.ServiceConfig{Name: fmt.Sprintf("s%d", r.Intn(50)), Placement: policies[r.Intn(len(policies))]}
	var cOK map[string]bool
	if r.Intn(3) == 0 { // constraints, and monitor_action exclusions
		cOK = map[string]bool{}
		for i, n := range nodes {
			cOK[n] = r.Intn(3) > 0
			if r.Intn(6) == 0 {
				insts[i].Excluded = "gave up"
			}
		}
	}
	return Input{Service: cfg.Name, Config: cfg, ClusterNodes: nodes, Nodes: nodes, Views: vs, Cluster: cl, Instances: insts, ConstraintOK: cOK}, m
}
