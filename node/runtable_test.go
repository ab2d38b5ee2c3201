package node

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/placement"
)

// ranElsewhereRef is watchRanElsewhere's lookup before the run table: the
// first alive node but local where svc runs.
func ranElsewhereRef(s monitor.Snapshot, local, svc string) string {
	for _, node := range s.ClusterNodes {
		v, ok := s.Nodes[node]
		if node == local || !ok || !v.Alive() {
			continue
		}
		if i, ok := v.Data.Services[svc]; ok && runs(i) {
			return node
		}
	}
	return ""
}

// TestRunTableMatchesLookups: over a sequence of random snapshots (a
// node's map replaced or kept, its status changed, a node gone from the
// view or from the cluster, the local map new at each pass), the run
// table kept from one to the next answers exactly what the per-service
// lookups answer: upElsewhere as monitor.UpElsewhere, runningOn as
// runningNodes (nil included), ranElsewhere as the scan. Some rounds
// query a snapshot the table was not built for (a new Nodes map, as an
// incremental pass's): the answers must still be that snapshot's, not
// the table's.
func TestRunTableMatchesLookups(t *testing.T) {
	c := &Core{cfg: Config{Name: "n1"}}
	r := rand.New(rand.NewSource(7))
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	var svcs []string
	for i := 0; i < 12; i++ {
		svcs = append(svcs, fmt.Sprintf("s%02d", i))
	}
	avails := []dataset.Status{dataset.StatusUp, dataset.StatusWarn, dataset.StatusDown, dataset.StatusNA, dataset.StatusUnknown, ""}
	statuses := []dataset.NodeStatus{dataset.NodeUp, dataset.NodeUp, dataset.NodeStMaint, dataset.NodeStShutting, dataset.NodeDown}
	newMap := func() map[string]dataset.Instance {
		m := map[string]dataset.Instance{}
		for _, svc := range svcs {
			if r.Intn(5) == 0 {
				continue // no instance there
			}
			i := dataset.Instance{Avail: avails[r.Intn(len(avails))]}
			if r.Intn(2) == 0 {
				i.Monitor.LocalExpect = dataset.ExpectStarted // n/a and started: up
			}
			m[svc] = i
		}
		return m
	}
	views := map[string]placement.NodeView{}
	for _, n := range nodes {
		views[n] = placement.NodeView{Name: n, Status: dataset.NodeUp, Data: dataset.Node{Name: n, Services: newMap()}}
	}
	cluster := append([]string(nil), nodes...)
	snap := func() monitor.Snapshot {
		m := make(map[string]placement.NodeView, len(views))
		for n, v := range views {
			m[n] = v
		}
		local := "n1"
		if r.Intn(4) == 0 {
			local = "n2" // the snapshot's Local is not always the core's name (tests' snapshots)
		}
		return monitor.Snapshot{Local: local, ClusterNodes: append([]string(nil), cluster...), Nodes: m}
	}
	built, fromTable := 0, 0
	for round := 0; round < 3000; round++ {
		for k := r.Intn(3); k >= 0; k-- {
			n := nodes[r.Intn(len(nodes))]
			v, ok := views[n]
			switch x := r.Intn(10); {
			case n == "n1" || x < 4: // new data (the local node's at every pass)
				if !ok {
					v = placement.NodeView{Name: n, Status: dataset.NodeUp}
				}
				v.Data = dataset.Node{Name: n, Services: newMap()}
				views[n] = v
			case x < 7: // same map, another status
				if ok {
					v.Status = statuses[r.Intn(len(statuses))]
					views[n] = v
				}
			case x < 8: // gone from the view
				delete(views, n)
			case x < 9: // the data of the same map in another view (same map kept)
				if ok {
					views[n] = placement.NodeView{Name: n, Status: v.Status, Data: dataset.Node{Name: n, Frozen: !v.Data.Frozen, Services: v.Data.Services}}
				}
			default: // the cluster's members change
				cluster = nil
				for _, m := range nodes {
					if r.Intn(5) > 0 {
						cluster = append(cluster, m)
					}
				}
			}
		}
		s := snap()
		if r.Intn(3) > 0 {
			c.inc.Runs.Build(s)
			built++
		}
		if c.inc.Runs.Of(s) != nil {
			fromTable++
		}
		for _, svc := range svcs {
			if got, want := c.upElsewhere(s, svc), monitor.UpElsewhere(s, svc); got != want {
				t.Fatalf("round %d %s: upElsewhere %q, lookups %q", round, svc, got, want)
			}
			want := runningNodes(s, svc)
			if got := c.runningOn(s, svc, false); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d %s: running on %#v, lookups %#v", round, svc, got, want)
			}
			few := c.runningOn(s, svc, true)
			if len(want) < 2 && few != nil || len(want) >= 2 && !reflect.DeepEqual(few, want) {
				t.Fatalf("round %d %s: running on (few) %#v, lookups %#v", round, svc, few, want)
			}
			if got, want := c.ranElsewhere(s, svc), ranElsewhereRef(s, "n1", svc); got != want {
				t.Fatalf("round %d %s: ranElsewhere %q, lookups %q", round, svc, got, want)
			}
		}
	}
	if fromTable != built || built < 1000 {
		t.Fatalf("%d tables built, %d rounds answered from one", built, fromTable)
	}
}

// TestFullPassSeesPeerChanges: through the core's full passes, a peer's
// new data and its liveness reach the three users of the run table: the
// service up on the peer resets the ladder's hold here (upElsewhere), is
// remembered as where it ran (ranElsewhere), and, running here too, is
// seen up on two nodes (multiple active); the peer lost, none of it.
func TestFullPassSeesPeerChanges(t *testing.T) {
	svcs := map[string]*config.ServiceConfig{"web": {Name: "web", Nodes: []string{"*"}, Orchestrate: monitor.OrchestrateHA, Placement: placement.PolicyNodesOrder}}
	loc := &incLocal{svcs: svcs}
	c := New(Config{Name: "n1", ClusterNodes: []string{"n1", "n2"}, Compat: 1, MaintenanceGrace: 6 * time.Second, RejoinGrace: 10 * time.Second,
		ReadyPeriod: 2 * time.Second, CheckInterval: time.Hour, MonitorInterval: time.Hour, Local: loc, WriteThrough: true}, State{})
	loc.c = c
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true, Monitored: true}, t0)
	c.start(t0)
	c.Ready()
	inst := c.insts["web"]
	peer := func(avail dataset.Status) *dataset.Node {
		return &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1, Services: map[string]dataset.Instance{
			"web": {Avail: avail, Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectStarted, StateSince: t0}}}}
	}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerUp}, t0)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: peer(dataset.StatusDown)}, t0)
	inst.Avail, inst.Overall = dataset.StatusDown, dataset.StatusDown
	c.pass(t0)
	c.Ready()
	if inst.Lad.UpElsewhere != "" || inst.RanElsewhere != "" {
		t.Fatalf("down on n2: up elsewhere %q, ran elsewhere %q", inst.Lad.UpElsewhere, inst.RanElsewhere)
	}
	// the peer's new data: web up there
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: peer(dataset.StatusUp)}, t0)
	c.pass(t0)
	c.Ready()
	if inst.Lad.UpElsewhere != "n2" || inst.RanElsewhere != "n2" {
		t.Fatalf("up on n2: up elsewhere %q, ran elsewhere %q", inst.Lad.UpElsewhere, inst.RanElsewhere)
	}
	// up here too: two nodes
	inst.Avail, inst.Overall = dataset.StatusUp, dataset.StatusUp
	c.pass(t0)
	if inst.Multi.MultiActive != "n1,n2" {
		t.Fatalf("up on n1 and n2: multiple active %q", inst.Multi.MultiActive)
	}
	c.Ready()
	// the peer lost (its map the same): nowhere else
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerDown}, t0)
	c.pass(t0)
	c.Ready()
	if inst.Lad.UpElsewhere != "" || inst.Multi.MultiActive != "" {
		t.Fatalf("n2 lost: up elsewhere %q, multiple active %q", inst.Lad.UpElsewhere, inst.Multi.MultiActive)
	}
}
