package monitor

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// TestRankCacheFollowsChanges: a full pass with a Cache never decides on
// a ranking of the previous pass that its inputs no longer give. Three
// nodes, services down everywhere, n1 ranks first (nodes order; the
// lowest load for load avg), the local node n2 second: then, between two
// passes, n1's instance of a service fails (a new map), n1's load rises,
// n1 is frozen. Each time n2 becomes the leader of the services concerned,
// with the cache as without.
func TestRankCacheFollowsChanges(t *testing.T) {
	s := Snapshot{Now: t0.Add(time.Hour), Local: "n2", ClusterNodes: []string{"n1", "n2", "n3"},
		Nodes: map[string]placement.NodeView{}, Services: map[string]*config.ServiceConfig{}, Compat: true, ReadyPeriod: DefaultReadyPeriod}
	for j := 0; j < scanRows; j++ {
		name := fmt.Sprintf("s%02d", j)
		policy := placement.PolicyNodesOrder
		if j%2 == 1 {
			policy = placement.PolicyLoadAvg
		}
		s.Services[name] = &config.ServiceConfig{Name: name, Nodes: []string{"*"}, Orchestrate: OrchestrateHA, Placement: policy}
	}
	for i, n := range s.ClusterNodes {
		v := placement.NodeView{Name: n, Status: dataset.NodeUp, Data: dataset.Node{Name: n, Monitor: dataset.NodeIdle,
			Load15: float64(i), Services: map[string]dataset.Instance{}}}
		for name := range s.Services {
			v.Data.Services[name] = dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle,
				GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone, StateSince: t0}}
		}
		s.Nodes[n] = v
	}
	k := &Cache{}
	leads := func(step string, want ...string) {
		t.Helper()
		cached := s
		cached.Cache = k
		got, fresh := Step(cached), Step(s)
		if !reflect.DeepEqual(got, fresh) {
			t.Fatalf("%s: with the cache\n%+v\nwithout\n%+v", step, got, fresh)
		}
		var leading []string
		for _, d := range got {
			if d.PlacementLeader {
				leading = append(leading, d.Service)
			}
		}
		if !reflect.DeepEqual(leading, want) {
			t.Fatalf("%s: n2 leads %v, want %v", step, leading, want)
		}
	}
	leads("start")
	leads("again (from the cache)")
	if k.rc.reused != scanRows {
		t.Fatalf("%d rankings reused, want %d", k.rc.reused, scanRows)
	}
	s = withInstance(s, "n1", "s04", dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{
		State: dataset.StartFailed, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone, StateSince: t0}}, true)
	leads("s04 failed on n1", "s04")

	nodes := make(map[string]placement.NodeView, len(s.Nodes))
	for n, v := range s.Nodes {
		nodes[n] = v
	}
	v := nodes["n1"]
	v.Data.Load15 = 5 // its instances: the same map
	nodes["n1"] = v
	s.Nodes = nodes
	var odd []string
	for j := 1; j < scanRows; j += 2 {
		odd = append(odd, fmt.Sprintf("s%02d", j))
	}
	odd = append(odd, "s04")
	sort.Strings(odd)
	leads("n1 loaded", odd...)

	nodes = make(map[string]placement.NodeView, len(s.Nodes))
	for n, v := range s.Nodes {
		nodes[n] = v
	}
	v = nodes["n1"]
	v.Data.Frozen = true
	nodes["n1"] = v
	s.Nodes = nodes
	var all []string
	for j := 0; j < scanRows; j++ {
		all = append(all, fmt.Sprintf("s%02d", j))
	}
	leads("n1 frozen", all...)
}
