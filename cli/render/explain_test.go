package render

import (
	"strings"
	"testing"
	"time"

	"haven/cli/cliutil"
	"haven/config"
	"haven/constraints"
	"haven/dataset"
	"haven/monitor"
	"haven/placement"
)

var explainT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// explainWorld is a snapshot of nodes n1..nN (all up, idle, loads given)
// with web down and idle everywhere, seen from local at t0+1s.
type explainWorld struct {
	s monitor.Snapshot
}

func newExplainWorld(local string, loads ...float64) *explainWorld {
	w := &explainWorld{s: monitor.Snapshot{
		Now: explainT0.Add(time.Second), Local: local, Nodes: map[string]placement.NodeView{},
		Services: map[string]*config.ServiceConfig{}, Compat: true, ReadyPeriod: 2 * time.Second,
	}}
	for i, l := range loads {
		n := "n" + string(rune('1'+i))
		w.s.ClusterNodes = append(w.s.ClusterNodes, n)
		w.s.Nodes[n] = placement.NodeView{Name: n, Status: dataset.NodeUp, Data: dataset.Node{
			Name: n, Monitor: dataset.NodeIdle, Load15: l, MemAvailPct: 50,
			Services: map[string]dataset.Instance{}, Targets: map[string]dataset.Target{},
		}}
	}
	return w
}

// add installs a service, down and idle on every cluster node.
func (w *explainWorld) add(cfg *config.ServiceConfig) *config.ServiceConfig {
	if cfg.Nodes == nil {
		cfg.Nodes = []string{"*"}
	}
	if cfg.Orchestrate == "" {
		cfg.Orchestrate = monitor.OrchestrateHA
	}
	if cfg.Placement == "" {
		cfg.Placement = placement.PolicyNodesOrder
	}
	w.s.Services[cfg.Name] = cfg
	for _, n := range cfg.NodeList(w.s.ClusterNodes) {
		w.s.Nodes[n].Data.Services[cfg.Name] = dataset.Instance{Avail: dataset.StatusDown,
			Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: "none", LocalExpect: "none", StateSince: explainT0}}
	}
	return cfg
}

func (w *explainWorld) inst(node, svc string, f func(*dataset.Instance)) {
	i := w.s.Nodes[node].Data.Services[svc]
	f(&i)
	w.s.Nodes[node].Data.Services[svc] = i
}

func (w *explainWorld) node(node string, f func(*placement.NodeView)) {
	v := w.s.Nodes[node]
	f(&v)
	w.s.Nodes[node] = v
}

// explain evaluates the constraints as the daemon's snapshot does, then
// asks the decision core.
func (w *explainWorld) explain(t *testing.T, svc string, start bool) *monitor.Explanation {
	t.Helper()
	w.s.ConstraintOK = map[string]map[string]bool{}
	for name, cfg := range w.s.Services {
		if cfg.Constraint != nil {
			w.s.ConstraintOK[name] = placement.EvalConstraints(cfg, w.s.Nodes)
		}
	}
	e, ok := monitor.Explain(w.s, svc, start)
	if !ok {
		t.Fatalf("explain %s: not found", svc)
	}
	return &e
}

func mustCompile(t *testing.T, src string) *constraints.Program {
	t.Helper()
	p, err := constraints.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExplainGolden(t *testing.T) {
	cases := map[string]func(t *testing.T) *monitor.Explanation{
		// n3 is not DEV: excluded by the constraints; n1 leads, ready.
		"explain_constraints": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n1", 0.3, 0.1, 0.2)
			for n, env := range map[string]string{"n1": "DEV", "n2": "DEV", "n3": "PRD"} {
				w.node(n, func(v *placement.NodeView) { v.Data.Labels = map[string]string{"env": env} })
			}
			w.add(&config.ServiceConfig{Name: "web", Constraint: mustCompile(t, `node.env == "DEV"`)})
			w.inst("n1", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.Ready })
			return w.explain(t, "web", false)
		},
		// db runs on n1: web's hard anti-affinity excludes n1; seen from
		// n2, the leader, which goes ready.
		"explain_hard_anti_affinity": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n2", 0, 0, 0)
			w.add(&config.ServiceConfig{Name: "db", Nodes: []string{"n1"}})
			w.inst("n1", "db", func(i *dataset.Instance) { i.Avail, i.Monitor.LocalExpect = dataset.StatusUp, "started" })
			w.add(&config.ServiceConfig{Name: "web", HardAntiAffinity: []string{"db"}, SoftAffinity: []string{"cache"}})
			w.add(&config.ServiceConfig{Name: "cache", Nodes: []string{"n3"}})
			w.inst("n3", "cache", func(i *dataset.Instance) { i.Avail, i.Monitor.LocalExpect = dataset.StatusUp, "started" })
			return w.explain(t, "web", false)
		},
		// n2 (local) is frozen, n3 down; web runs on n1.
		"explain_frozen_node": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n2", 0, 0, 0)
			w.add(&config.ServiceConfig{Name: "web"})
			w.inst("n1", "web", func(i *dataset.Instance) { i.Avail, i.Monitor.LocalExpect = dataset.StatusUp, "started" })
			w.node("n2", func(v *placement.NodeView) { v.Data.Frozen = true })
			w.node("n3", func(v *placement.NodeView) { v.Status = dataset.NodeDown })
			return w.explain(t, "web", false)
		},
		// load avg: the least loaded first; n4 is in maintenance and the
		// instance on n1 failed its start.
		"explain_load_avg": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n1", 0.3, 1.75, 0.12, 0.01)
			w.add(&config.ServiceConfig{Name: "web", Placement: placement.PolicyLoadAvg})
			w.inst("n1", "web", func(i *dataset.Instance) { i.Monitor.State = dataset.StartFailed })
			w.node("n4", func(v *placement.NodeView) { v.Status = dataset.NodeStMaint })
			return w.explain(t, "web", false)
		},
		// a label that is not a number: the constraint cannot be evaluated
		// on n2, shown as an error; n3 is a plain violation.
		// a flex service of 3 in a rollout of 1 at a time: n1 ok, n2
		// monitoring, n3 waits for batch 2 (then for a config it does not
		// hold yet); seen from n3.
		"explain_rollout": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n3", 0, 0, 0)
			w.add(&config.ServiceConfig{Name: "app", Topology: "flex", FlexTarget: 3, FlexMin: 1, FlexMax: 3})
			r := &dataset.Rollout{ID: "n1-12", Digest: "8d04e7a1c2f3aa", Nodes: []string{"n1", "n2", "n3"}, Parallelism: 1,
				MonitorMs: 3000, FailureAction: "pause"}
			for n, m := range map[string]*dataset.RolloutMark{
				"n1": {ID: "n1-12", State: dataset.TurnOK},
				"n2": {ID: "n1-12", State: dataset.TurnMonitoring, SinceMs: explainT0.UnixMilli()},
				"n3": nil,
			} {
				w.inst(n, "app", func(i *dataset.Instance) {
					i.Avail, i.Monitor.LocalExpect = dataset.StatusUp, "started"
					i.Rollout, i.RolloutMark, i.ConfigDigest, i.RunDigest = r, m, "8d04e7a1c2f3aa", "8d04e7a1c2f3aa"
					if n == "n3" {
						i.ConfigDigest, i.RunDigest = "1c2f38d04e7abb", "1c2f38d04e7abb"
					}
				})
			}
			return w.explain(t, "app", false)
		},
		"explain_constraint_error": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n1", 0, 0, 0)
			for n, rack := range map[string]string{"n1": "3", "n2": "north", "n3": "1"} {
				w.node(n, func(v *placement.NodeView) { v.Data.Labels = map[string]string{"rack": rack} })
			}
			w.add(&config.ServiceConfig{Name: "web", Constraint: mustCompile(t, `int(node.labels["rack"]) > 2`)})
			return w.explain(t, "web", false)
		},
		// web runs on n1; a start now would wait for its parent db.
		"explain_start_wait_parents": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n1", 0, 0)
			w.add(&config.ServiceConfig{Name: "db", Nodes: []string{"n2"}, Orchestrate: monitor.OrchestrateNo})
			w.add(&config.ServiceConfig{Name: "web", Parents: []string{"db"}})
			w.inst("n1", "web", func(i *dataset.Instance) { i.Avail, i.Monitor.LocalExpect = dataset.StatusUp, "started" })
			return w.explain(t, "web", true)
		},
		// a stop target in progress on n1 waits for the child front.
		"explain_target_wait_children": func(t *testing.T) *monitor.Explanation {
			w := newExplainWorld("n1", 0, 0)
			w.add(&config.ServiceConfig{Name: "front", Nodes: []string{"n1"}, Orchestrate: monitor.OrchestrateNo})
			w.inst("n1", "front", func(i *dataset.Instance) { i.Avail = dataset.StatusUp })
			w.add(&config.ServiceConfig{Name: "web", Children: []string{"front"}})
			w.inst("n1", "web", func(i *dataset.Instance) {
				i.Avail, i.Frozen, i.Monitor.LocalExpect = dataset.StatusUp, true, "started"
			})
			w.inst("n2", "web", func(i *dataset.Instance) { i.Frozen = true })
			for _, n := range []string{"n1", "n2"} {
				w.s.Nodes[n].Data.Targets["web"] = dataset.Target{Expect: dataset.ExpectStopped, ID: "n2-12"}
			}
			return w.explain(t, "web", false)
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			e := build(t)
			golden(t, name, Explain(e))
		})
	}
	// --format json: the same explanation, as JSON
	e := cases["explain_constraint_error"](t)
	var out strings.Builder
	if err := cliutil.PrintJSON(&out, e); err != nil {
		t.Fatal(err)
	}
	golden(t, "explain_constraint_error_json", out.String())
}

// The leader line says what the leader does: it starts a service that
// runs nowhere; a service running elsewhere stays where it runs (the web
// view showed "n1 (would start it now)" beside web running on n2).
func TestExplainLeaderWhileRunningElsewhere(t *testing.T) {
	for _, c := range []struct {
		running   []string
		want, not string
	}{
		{nil, "leader: n1 (would start it now)", "runs"},
		{[]string{"n1"}, "leader: n1 (it runs there)", "would start"},
		{[]string{"n2"}, "leader: n1 (the first candidate; it runs on n2, and stays there: svcmgr giveback moves it)", "would start"},
	} {
		out := Explain(&monitor.Explanation{Service: "web", Local: "n1", Orchestrate: "ha", Policy: "nodes order", Leader: "n1", NaturalLeader: "n1", Running: c.running})
		if !strings.Contains(out, c.want) || strings.Contains(out, c.not) {
			t.Errorf("running on %v:\n%s\nwant %q", c.running, out, c.want)
		}
	}
}
