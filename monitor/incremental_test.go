package monitor

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// randomSnapshot is a random cluster of 2 to 6 nodes and 3 to 12 services
// with random relations (affinities, parents, children, some towards
// services that are not installed), random instances (n/a ones included),
// node states, targets, fencing and constraints results. Half of them are
// calm (every node up and idle, most instances down and idle, no target):
// there the decisions hinge on the relations.
func randomSnapshot(r *rand.Rand) Snapshot { return randomSnapshotN(r, 3+r.Intn(10)) }

// randomSnapshotN is randomSnapshot with nSvcs services.
func randomSnapshotN(r *rand.Rand, nSvcs int) Snapshot {
	calm := r.Intn(2) == 0
	stopping := calm && r.Intn(3) == 0 // every service frozen, up here, target stopped
	nNodes := 2 + r.Intn(5)
	s := Snapshot{Now: t0.Add(time.Hour), Nodes: map[string]placement.NodeView{}, Services: map[string]*config.ServiceConfig{},
		ConstraintOK: map[string]map[string]bool{}, Compat: r.Intn(10) > 0, ReadyPeriod: 2 * time.Second}
	for i := 0; i < nNodes; i++ {
		s.ClusterNodes = append(s.ClusterNodes, fmt.Sprintf("n%d", i+1))
	}
	s.Local = s.ClusterNodes[r.Intn(nNodes)]
	pick := func(list ...string) string { return list[r.Intn(len(list))] }
	names := make([]string, nSvcs)
	for j := range names {
		names[j] = fmt.Sprintf("s%02d", j)
	}
	other := func() string {
		if r.Intn(8) == 0 {
			return "ghost"
		}
		return names[r.Intn(nSvcs)]
	}
	some := func(withNode bool) []string {
		var out []string
		for r.Intn(10) == 0 {
			o := other()
			if withNode && r.Intn(3) == 0 {
				o += "@" + pick(s.ClusterNodes...)
			}
			out = append(out, o)
		}
		return out
	}
	for _, name := range names {
		cfg := &config.ServiceConfig{Name: name, Nodes: []string{"*"},
			Orchestrate:  pick(OrchestrateHA, OrchestrateHA, OrchestrateStart, OrchestrateNo),
			Placement:    pick(placement.PolicyNodesOrder, placement.PolicyLoadAvg, placement.PolicySpread, placement.PolicyScore, placement.PolicyNone),
			Priority:     r.Intn(3) * 100,
			HardAffinity: some(false), HardAntiAffinity: some(false), SoftAffinity: some(false), SoftAntiAffinity: some(false),
			Parents: some(true), Children: some(true)}
		if r.Intn(3) == 0 {
			cfg.Nodes = nil
			for _, n := range r.Perm(nNodes)[:1+r.Intn(nNodes)] {
				cfg.Nodes = append(cfg.Nodes, s.ClusterNodes[n])
			}
		}
		if r.Intn(3) == 0 { // requests: every such service reads the others
			cfg.RequestCPU = config.MilliCPU(500 * (1 + r.Intn(4)))
		}
		s.Services[name] = cfg
		if r.Intn(4) == 0 {
			ok := map[string]bool{}
			for _, n := range s.ClusterNodes {
				ok[n] = r.Intn(3) > 0
			}
			s.ConstraintOK[name] = ok
		}
	}
	for _, n := range s.ClusterNodes {
		if r.Intn(8) == 0 && n != s.Local {
			continue // never heard: no view
		}
		st := pick(string(dataset.NodeUp), string(dataset.NodeUp), string(dataset.NodeUp), string(dataset.NodeDown),
			string(dataset.NodeStMaint), string(dataset.NodeStShutting), string(dataset.NodeStUnknown))
		if n == s.Local {
			st = pick(string(dataset.NodeUp), string(dataset.NodeUp), string(dataset.NodeStMaint), string(dataset.NodeStShutting))
		}
		if calm {
			st = string(dataset.NodeUp)
		}
		v := placement.NodeView{Name: n, Status: dataset.NodeStatus(st), Data: dataset.Node{Name: n,
			Monitor: dataset.NodeMonitor(pick(string(dataset.NodeIdle), string(dataset.NodeIdle), string(dataset.NodeIdle),
				string(dataset.NodeRejoin), string(dataset.NodeDraining), string(dataset.NodeMaintenance))),
			Frozen: r.Intn(8) == 0, Load15: float64(r.Intn(4)) / 2, MemAvailPct: float64(r.Intn(100)),
			Services: map[string]dataset.Instance{}, Targets: map[string]dataset.Target{}}}
		for _, name := range names {
			if r.Intn(6) == 0 {
				continue
			}
			v.Data.Services[name] = randomInstance(r, s.Now)
			if calm && r.Intn(4) > 0 {
				v.Data.Services[name] = dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle,
					GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone, StateSince: t0}}
			}
		}
		if r.Intn(5) > 0 {
			v.Data.Capacity = &dataset.Capacity{CPUMilli: int64(1000 * (1 + r.Intn(4)))}
		}
		if calm {
			v.Data.Monitor, v.Data.Frozen = dataset.NodeIdle, false
		}
		if stopping {
			for name, i := range v.Data.Services {
				i.Frozen = true
				if n == s.Local {
					i.Avail = dataset.StatusUp
					v.Data.Targets[name] = dataset.Target{Expect: dataset.ExpectStopped}
				}
				v.Data.Services[name] = i
			}
		}
		if n == s.Local && !stopping && (!calm || r.Intn(4) == 0) {
			for _, name := range names {
				if r.Intn(4) == 0 {
					v.Data.Targets[name] = dataset.Target{Expect: pick(dataset.ExpectStarted, dataset.ExpectStopped, dataset.ExpectPlaced,
						dataset.ExpectFrozen, dataset.ExpectThawed, dataset.ExpectNone), Node: pick("", pick(s.ClusterNodes...))}
				}
			}
		}
		s.Nodes[n] = v
	}
	if calm {
		s.Compat = true
	}
	if r.Intn(5) == 0 && !calm {
		s.Fencing = map[string]string{pick(s.ClusterNodes...): "not fenced"}
	}
	return s
}

func randomInstance(r *rand.Rand, now time.Time) dataset.Instance {
	pick := func(list ...string) string { return list[r.Intn(len(list))] }
	i := dataset.Instance{
		Avail:  dataset.Status(pick(string(dataset.StatusUp), string(dataset.StatusDown), string(dataset.StatusDown), string(dataset.StatusWarn), string(dataset.StatusNA), string(dataset.StatusUnknown), "")),
		Frozen: r.Intn(6) == 0,
		Monitor: dataset.InstanceMonitor{
			State: dataset.MonitorState(pick(string(dataset.Idle), string(dataset.Idle), string(dataset.Idle), string(dataset.Ready), string(dataset.Ready),
				string(dataset.Starting), string(dataset.StartFailed), string(dataset.StopFailed), string(dataset.Stopping),
				string(dataset.WaitParents), string(dataset.WaitChildren), string(dataset.WaitFence), "")),
			GlobalExpect: pick(dataset.ExpectNone, ""), LocalExpect: pick(dataset.ExpectStarted, dataset.ExpectNone),
			StateSince: now.Add(-time.Duration(r.Intn(4000)) * time.Millisecond),
		},
	}
	if r.Intn(10) == 0 {
		i.Excluded = "monitor_action switch"
	}
	if i.Monitor.State.Failed() {
		i.Monitor.Error = "exit code 1"
	}
	return i
}

// withInstance returns s where the instance of svc on node is inst (ok
// false: removed), the other data shared.
func withInstance(s Snapshot, node, svc string, inst dataset.Instance, ok bool) Snapshot {
	nodes := make(map[string]placement.NodeView, len(s.Nodes))
	for n, v := range s.Nodes {
		nodes[n] = v
	}
	v := nodes[node]
	svcs := make(map[string]dataset.Instance, len(v.Data.Services)+1)
	for k, i := range v.Data.Services {
		svcs[k] = i
	}
	if ok {
		svcs[svc] = inst
	} else {
		delete(svcs, svc)
	}
	v.Data.Services = svcs
	nodes[node] = v
	s.Nodes = nodes
	return s
}

func byService(ds []Decision) map[string]Decision {
	out := make(map[string]Decision, len(ds))
	for _, d := range ds {
		out[d.Service] = d
	}
	return out
}

// TestIncrementalMatchesFullPass: over many random snapshots and random
// changes of one instance (a peer's or the local one's), the decisions of
// StepOnly over the closure of the changed service are exactly those of a
// full pass over the new snapshot, and every service outside the closure
// is decided by the full pass exactly as before the change: the
// incremental path decides what the full pass would.
func TestIncrementalMatchesFullPass(t *testing.T) {
	r := rand.New(rand.NewSource(14))
	covered, skipped := 0, 0
	for iter := 0; iter < 4000; iter++ {
		s := randomSnapshot(r)
		before := byService(Step(s))
		svcs := make([]string, 0, len(s.Services))
		for name := range s.Services {
			svcs = append(svcs, name)
		}
		svc := svcs[r.Intn(len(svcs))]
		if r.Intn(10) == 0 {
			svc = "ghost" // an instance of a service not installed here
		}
		node := s.ClusterNodes[r.Intn(len(s.ClusterNodes))]
		if _, ok := s.Nodes[node]; !ok {
			continue
		}
		s2 := withInstance(s, node, svc, randomInstance(r, s.Now), r.Intn(10) > 0)
		full := byService(Step(s2))
		only := NewRelations(s2.Services).Closure([]string{svc})
		inc := StepOnly(s2, only)
		in := map[string]bool{}
		for _, n := range only {
			in[n] = true
		}
		for _, d := range inc {
			if !in[d.Service] {
				t.Fatalf("iter %d: StepOnly decided %s, outside %v", iter, d.Service, only)
			}
			if !reflect.DeepEqual(d, full[d.Service]) {
				t.Fatalf("iter %d: %s changed on %s: incremental decision of %s\n%+v\nfull pass\n%+v", iter, svc, node, d.Service, d, full[d.Service])
			}
			covered++
		}
		for name, d := range full {
			if in[name] {
				if !containsDecision(inc, name) {
					t.Fatalf("iter %d: %s decided by the full pass, not by StepOnly over %v", iter, name, only)
				}
				continue
			}
			if !reflect.DeepEqual(d, before[name]) {
				t.Fatalf("iter %d: %s changed on %s: %s, outside the closure %v, decided differently\nbefore %+v\nafter  %+v", iter, svc, node, name, only, before[name], d)
			}
			skipped++
		}
	}
	t.Logf("%d decisions compared, %d skipped ones checked unchanged", covered, skipped)
	if covered < 1000 || skipped < 1000 {
		t.Fatalf("too few comparisons: %d covered, %d skipped", covered, skipped)
	}
}

func containsDecision(ds []Decision, svc string) bool {
	for _, d := range ds {
		if d.Service == svc {
			return true
		}
	}
	return false
}

// TestEffectiveAvailEverywhere: Step reads EffectiveAvail wherever it
// reads an avail (it no longer copies the dataset with it applied): over
// random snapshots with n/a instances, deciding on the raw data or on the
// data with EffectiveAvail applied beforehand gives the same decisions.
func TestEffectiveAvailEverywhere(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	na := 0
	for iter := 0; iter < 2000; iter++ {
		s := randomSnapshot(r)
		pre := s
		pre.Nodes = effectiveNodes(s.Nodes)
		if len(pre.Nodes) > 0 && reflect.ValueOf(pre.Nodes).Pointer() != reflect.ValueOf(s.Nodes).Pointer() {
			na++
		}
		a, b := Step(s), Step(pre)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("iter %d: decisions differ on the raw data\n%+v\nand with EffectiveAvail applied\n%+v", iter, a, b)
		}
	}
	if na < 100 {
		t.Fatalf("only %d snapshots had an n/a instance that counts as up", na)
	}
}

// TestCacheMatchesFresh: a full pass with a Cache warmed by the previous
// passes decides exactly as one without: over random snapshots of 64 to
// 100 services (the size from which a pass reads whole maps) where one
// node's data is replaced by a changed copy at each pass, and sometimes
// the services change (the cache forgets its columns), or are renamed
// (as many services: the sorted names of the last pass do not hold), and
// sometimes a node's own data changes (load, memory, frozen, status,
// monitor: the rankings of the last pass do not hold).
func TestCacheMatchesFresh(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	hits, renames, nodeChanges := 0, 0, 0
	var reused uint64
	for iter := 0; iter < 60; iter++ {
		s := randomSnapshotN(r, scanRows+r.Intn(36))
		k := &Cache{}
		for pass := 0; pass < 8; pass++ {
			cached := s
			cached.Cache = k
			if got, want := Step(cached), Step(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("iter %d pass %d: with the cache\n%+v\nwithout\n%+v", iter, pass, got, want)
			}
			if pass > 0 && len(k.cols) > 0 {
				hits++
			}
			reused += k.rc.reused
			k.rc.reused = 0
			node := s.ClusterNodes[r.Intn(len(s.ClusterNodes))]
			if _, ok := s.Nodes[node]; !ok {
				continue
			}
			svcs := make([]string, 0, len(s.Services))
			for name := range s.Services {
				svcs = append(svcs, name)
			}
			sort.Strings(svcs)
			s = withInstance(s, node, svcs[r.Intn(len(svcs))], randomInstance(r, s.Now), r.Intn(10) > 0)
			if r.Intn(3) == 0 { // a node's own data changes, not its instances (the same map)
				nodes := make(map[string]placement.NodeView, len(s.Nodes))
				for n, v := range s.Nodes {
					nodes[n] = v
				}
				n := s.ClusterNodes[r.Intn(len(s.ClusterNodes))]
				if v, ok := nodes[n]; ok {
					switch r.Intn(5) {
					case 0:
						v.Data.Load15 = float64(r.Intn(4)) / 2
					case 1:
						v.Data.MemAvailPct = float64(r.Intn(100))
					case 2:
						v.Data.Frozen = !v.Data.Frozen
					case 3:
						v.Status = []dataset.NodeStatus{dataset.NodeUp, dataset.NodeDown, dataset.NodeStMaint}[r.Intn(3)]
					default:
						v.Data.Monitor = []dataset.NodeMonitor{dataset.NodeIdle, dataset.NodeRejoin, dataset.NodeDraining}[r.Intn(3)]
					}
					nodes[n] = v
					nodeChanges++
				}
				s.Nodes = nodes
			}
			if r.Intn(6) == 0 { // a service removed: other rows
				svcs := make(map[string]*config.ServiceConfig, len(s.Services))
				for name, cfg := range s.Services {
					svcs[name] = cfg
				}
				delete(svcs, fmt.Sprintf("s%02d", r.Intn(len(svcs))))
				s.Services = svcs
			} else if r.Intn(5) == 0 { // a service renamed: as many, not the same
				svcs := make(map[string]*config.ServiceConfig, len(s.Services))
				for name, cfg := range s.Services {
					svcs[name] = cfg
				}
				old := fmt.Sprintf("s%02d", r.Intn(len(svcs)))
				if cfg := svcs[old]; cfg != nil {
					delete(svcs, old)
					renamed := *cfg
					renamed.Name = "r" + old
					svcs[renamed.Name] = &renamed
					renames++
				}
				s.Services = svcs
			}
		}
	}
	if hits == 0 || renames == 0 || reused < 1000 || nodeChanges < 50 {
		t.Fatalf("the cache was used %d times (%d rankings reused), with %d renames and %d node changes", hits, reused, renames, nodeChanges)
	}
	t.Logf("%d passes with cached columns, %d rankings reused, %d renames, %d node changes", hits, reused, renames, nodeChanges)
}

// TestPassReadsAsLookups: the per-pass table (filled by lookups for a few
// services, by scanning whole maps for many, from a Cache or not) gives,
// for every service and node, what looking the instance up gives, and its
// aggregate is the one computed from the views.
func TestPassReadsAsLookups(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for iter := 0; iter < 300; iter++ {
		s := randomSnapshotN(r, 3+r.Intn(2*scanRows))
		if r.Intn(2) == 0 {
			s.Cache = &Cache{}
		}
		names := make([]string, 0, len(s.Services))
		for name := range s.Services {
			names = append(names, name)
		}
		sort.Strings(names)
		for round := 0; round < 2; round++ {
			p := newPass(&s, names)
			for _, svc := range append(names, "ghost") {
				for _, n := range s.ClusterNodes {
					got, alive := p.instance(n, svc)
					v, ok := s.Nodes[n]
					want, wantAlive := placement.InstanceState{}, ok && v.Alive()
					if wantAlive {
						want = stateOf(v.Data.Services[svc])
					}
					if got != want || alive != wantAlive {
						t.Fatalf("iter %d: %s on %s: got %+v (alive %v), want %+v (alive %v)", iter, svc, n, got, alive, want, wantAlive)
					}
				}
				if got, want := p.aggregate(svc), aggregate(s.Nodes, svc); got != want {
					t.Fatalf("iter %d: aggregate of %s: got %s, want %s", iter, svc, got, want)
				}
			}
		}
	}
}
