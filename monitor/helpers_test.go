package monitor

import (
	"sort"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// world is an in-memory cluster for the tests: the gossiped data of every
// node, seen identically by all (a perfect network), and a fake time.
type world struct {
	t         *testing.T
	now       time.Time
	cluster   []string
	nodes     map[string]placement.NodeView
	svcs      map[string]*config.ServiceConfig
	cok       map[string]map[string]bool
	compat    bool
	ready     time.Duration
	failStart map[string]bool // "node/svc": the start action fails
	failStop  map[string]bool // "node/svc": the stop action fails, the instance stays up
	noCheck   map[string]bool // "node/svc": the instance has no check: its avail stays n/a
	log       []string
}

func newWorld(t *testing.T, nodes ...string) *world {
	w := &world{t: t, now: t0, nodes: map[string]placement.NodeView{}, svcs: map[string]*config.ServiceConfig{},
		compat: true, ready: 2 * time.Second, failStart: map[string]bool{}, failStop: map[string]bool{}, noCheck: map[string]bool{}}
	for _, n := range nodes {
		w.cluster = append(w.cluster, n)
		w.nodes[n] = placement.NodeView{Name: n, Status: dataset.NodeUp, Data: dataset.Node{
			Name: n, Monitor: dataset.NodeIdle, Compat: 1, Services: map[string]dataset.Instance{}, Targets: map[string]dataset.Target{},
		}}
	}
	sort.Strings(w.cluster)
	return w
}

// addSvc installs a service: down and idle on each of its nodes.
func (w *world) addSvc(cfg *config.ServiceConfig) {
	if cfg.Orchestrate == "" {
		cfg.Orchestrate = OrchestrateHA
	}
	if cfg.Placement == "" {
		cfg.Placement = placement.PolicyNodesOrder
	}
	w.svcs[cfg.Name] = cfg
	for _, n := range cfg.NodeList(w.cluster) {
		w.nodes[n].Data.Services[cfg.Name] = dataset.Instance{
			Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone, StateSince: t0},
		}
	}
}

func (w *world) inst(node, svc string) dataset.Instance { return w.nodes[node].Data.Services[svc] }

func (w *world) setInst(node, svc string, f func(*dataset.Instance)) {
	i := w.nodes[node].Data.Services[svc]
	f(&i)
	w.nodes[node].Data.Services[svc] = i
}

func (w *world) setNode(node string, f func(*placement.NodeView)) {
	v := w.nodes[node]
	f(&v)
	w.nodes[node] = v
}

// setTarget gives every node the same effective target (as the shell's
// merge would).
func (w *world) setTarget(svc string, t dataset.Target) {
	for _, v := range w.nodes {
		if t.Expect == "" {
			delete(v.Data.Targets, svc)
		} else {
			v.Data.Targets[svc] = t
		}
	}
}

func (w *world) snap(local string) Snapshot {
	return Snapshot{Now: w.now, Local: local, ClusterNodes: w.cluster, Nodes: w.nodes, Services: w.svcs,
		ConstraintOK: w.cok, Compat: w.compat, ReadyPeriod: w.ready}
}

// step runs Step on node without applying anything.
func (w *world) step(node string) map[string]Decision {
	out := map[string]Decision{}
	for _, d := range Step(w.snap(node)) {
		if d.Changed && d.Reason == "" {
			w.t.Errorf("%s %s: got a change with no reason: %+v", node, d.Service, d)
		}
		if !d.Changed && d.Reason != "" {
			w.t.Errorf("%s %s: got a reason with no change: %+v", node, d.Service, d)
		}
		out[d.Service] = d
	}
	return out
}

// run steps node and applies the decisions as a shell would, running the
// actions instantly.
func (w *world) run(node string) map[string]Decision {
	ds := w.step(node)
	names := make([]string, 0, len(ds))
	for n := range ds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, svc := range names {
		d := ds[svc]
		i := w.inst(node, svc)
		i.Monitor = d.Monitor
		switch d.Action {
		case ActionStart:
			ok := !w.failStart[node+"/"+svc]
			if ok {
				i.Avail = dataset.StatusUp
			}
			i.Monitor = Failure(AfterStart(i.Monitor, ok, w.now), "app#main: start failed: exit code 1: boom on "+node)
		case ActionStop:
			ok := !w.failStop[node+"/"+svc]
			if ok {
				i.Avail = dataset.StatusDown
			}
			i.Monitor = Failure(AfterStop(i.Monitor, ok, w.now), "app#main: still up after its stop on "+node)
		case ActionFreeze:
			i.Frozen = true
			i.Monitor = AfterFreeze(i.Monitor, w.now)
		case ActionThaw:
			i.Frozen = false
			i.Monitor = AfterFreeze(i.Monitor, w.now)
		}
		if d.Changed {
			w.log = append(w.log, node+" "+svc+" "+string(d.Action)+" "+string(d.Monitor.State)+": "+d.Reason)
		}
		if w.noCheck[node+"/"+svc] {
			i.Avail = dataset.StatusNA
		}
		w.nodes[node].Data.Services[svc] = i
		if d.TargetReached {
			w.setTarget(svc, dataset.Target{})
			w.log = append(w.log, node+" "+svc+" target reached")
		}
	}
	return ds
}

// round runs every node once, in name order, then advances time by dt.
func (w *world) round(dt time.Duration) {
	for _, n := range w.cluster {
		if w.nodes[n].Status == dataset.NodeUp {
			w.run(n)
		}
	}
	w.now = w.now.Add(dt)
}

// rounds runs n rounds.
func (w *world) rounds(n int, dt time.Duration) {
	for i := 0; i < n; i++ {
		w.round(dt)
	}
}

// upOn returns the nodes where svc is up.
func (w *world) upOn(svc string) []string {
	var out []string
	for _, n := range w.cluster {
		if w.inst(n, svc).Avail == dataset.StatusUp {
			out = append(out, n)
		}
	}
	return out
}

func (w *world) dumpLog() {
	for _, l := range w.log {
		w.t.Log(l)
	}
}
