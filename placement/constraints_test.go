package placement

import (
	"fmt"
	"reflect"
	"testing"

	"haven/config"
	"haven/constraints"
	"haven/dataset"
)

// TestConstraintsFollowNodeData: the constraints results of one pass are
// never those of the previous pass when a node's data changed in between
// (a guard for any memoization of the results): a label changed in the
// very map of the previous pass or in a new one, a load read by the
// expression, flip the result on that node only.
func TestConstraintsFollowNodeData(t *testing.T) {
	compile := func(src string) *config.ServiceConfig {
		p, err := constraints.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		return &config.ServiceConfig{Name: "web", Nodes: []string{"*"}, Constraint: p}
	}
	byEnv, byLoad := compile(`node.env == "DEV"`), compile(`node.load15 < 2`)
	n1Labels := map[string]string{"env": "DEV"}
	vs := views(dataset.Node{Name: "n1", Labels: n1Labels, Load15: 1}, dataset.Node{Name: "n2", Load15: 3})
	check := func(step string, cfg *config.ServiceConfig, want map[string]bool) {
		t.Helper()
		for pass := 0; pass < 2; pass++ { // a fresh evaluation, then a memoized one
			if got := EvalConstraints(cfg, vs); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, pass %d, %s: got %v, want %v", step, pass, cfg.Constraints, got, want)
			}
		}
	}
	byEnv.Constraints, byLoad.Constraints = "env", "load"
	check("start", byEnv, map[string]bool{"n1": true, "n2": false})
	check("start", byLoad, map[string]bool{"n1": true, "n2": false})

	n1Labels["env"] = "PRD" // the same map
	check("n1 label changed in place", byEnv, map[string]bool{"n1": false, "n2": false})
	v := vs["n2"]
	v.Data.Labels = map[string]string{"env": "DEV"}
	v.Data.Load15 = 0.5
	vs["n2"] = v
	check("n2 new labels and load", byEnv, map[string]bool{"n1": false, "n2": true})
	check("n2 new labels and load", byLoad, map[string]bool{"n1": true, "n2": true})
	v = vs["n1"]
	v.Data.Load15 = 2.5
	vs["n1"] = v
	check("n1 loaded", byLoad, map[string]bool{"n1": false, "n2": true})
}

// BenchmarkEvalConstraints2000x16 is what the node evaluates before each
// decision pass (view.Snapshot): the constraints of 2,000 services (of
// 4 different expressions, each service compiling its own) on 16 nodes
// whose labels do not change, with a new load at each pass.
func BenchmarkEvalConstraints2000x16(b *testing.B) {
	srcs := []string{`node.env == "PRD"`, `node.env in ["PRD", "DEV"] and nodename != "n03"`,
		`$("{node.az}" == "a")`, `"az" in node.labels`}
	cfgs := make([]*config.ServiceConfig, 2000)
	for i := range cfgs {
		p, err := constraints.Compile(srcs[i%len(srcs)])
		if err != nil {
			b.Fatal(err)
		}
		cfgs[i] = &config.ServiceConfig{Name: fmt.Sprintf("svc%04d", i), Nodes: []string{"*"}, Constraint: p}
	}
	var nodes []dataset.Node
	for i := 0; i < 16; i++ {
		nodes = append(nodes, dataset.Node{Name: fmt.Sprintf("n%02d", i),
			Labels: map[string]string{"env": []string{"PRD", "DEV"}[i%2], "az": []string{"a", "b", "c"}[i%3]}})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range nodes {
			nodes[k].Load15 = float64(i%7) / 3
		}
		vs := views(nodes...)
		for _, cfg := range cfgs {
			EvalConstraints(cfg, vs)
		}
	}
}
