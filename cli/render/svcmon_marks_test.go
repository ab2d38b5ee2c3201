package render

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// svcmon's cosmetics that misled: a node never heard
// shows no compat or load rather than 0; a node whose daemon stopped for
// maintenance is not "hb up"; a drained (frozen) node does not make the
// services "partly frozen" (the node row shows it), a service's own
// freeze on some instances does.
func TestSvcmonMarksOfUnknownMaintAndDrain(t *testing.T) {
	nodes := threeNodes()
	n3 := nodes["n3"]
	n3.Compat, n3.Load15, n3.Status = 0, 0, dataset.NodeStUnknown
	nodes["n3"] = n3
	n1 := nodes["n1"]
	n1.Status, n1.Frozen = dataset.NodeStMaint, true
	nodes["n1"] = n1
	web := svc(dataset.StatusUp, []string{"n1", "n2"}, map[string]dataset.Instance{
		"n1": inst(dataset.StatusDown, dataset.Idle, "none", false),
		"n2": inst(dataset.StatusUp, dataset.Idle, "started", true),
	})
	web.Frozen = "mixed" // n1 is frozen (drained), not web
	st := &dataset.ClusterStatus{
		Cluster:   dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:     nodes,
		Services:  map[string]dataset.ServiceStatus{"web": web},
		Local:     "n2",
		Heartbeat: map[string]dataset.HBPeer{"n1": {Up: true, LastHeardMs: 800}},
	}
	out := Svcmon(st, SvcmonOptions{})
	line := func(prefix string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return l
			}
		}
		t.Fatalf("no %q line in\n%s", prefix, out)
		return ""
	}
	if f := strings.Fields(line("compat")); f[len(f)-1] != "-" {
		t.Errorf("compat of a node never heard: %q", line("compat"))
	}
	if f := strings.Fields(line("15m")); f[len(f)-1] != "-" {
		t.Errorf("load of a node never heard: %q", line("15m"))
	}
	if l := line("hb "); !strings.Contains(l, "maint 0.8s") || strings.Contains(l, "up 0.8s") {
		t.Errorf("hb of a node in maintenance: %q", l)
	}
	if strings.Contains(out, "partly frozen") {
		t.Errorf("a drained node made web partly frozen:\n%s", out)
	}
	i := web.Instances["n2"]
	i.Frozen = true
	web.Instances["n2"] = i
	st.Services["web"] = web
	if out := Svcmon(st, SvcmonOptions{}); !strings.Contains(out, "partly frozen") {
		t.Errorf("web frozen on n2 itself is not partly frozen:\n%s", out)
	}
}

// A one-vote arbitrator says whose its vote is and until when this node
// counts it.
func TestSvcmonOneVoteArbitrator(t *testing.T) {
	until := time.Date(2030, 1, 1, 10, 0, 8, 0, time.UTC)
	q := &dataset.QuorumInfo{Arbitrators: []dataset.ArbitratorState{
		{Name: "a1", Weight: 1, OneVote: true, Answered: true, Exclusive: true, LeaseUntil: until},
		{Name: "a2", Weight: 1, OneVote: true, Winner: []string{"n1"}},
		{Name: "w", Weight: 1, Answered: true},
	}}
	out := quorumLines(q, false)
	for _, want := range []string{"a1 (weight 1) one-vote, vote here alone until 10:00:08.0", "a2 (weight 1) one-vote, vote with n1", "w (weight 1) answers"} {
		if !strings.Contains(out, want) {
			t.Errorf("quorum lines lack %q:\n%s", want, out)
		}
	}
}

// A hard affinity only gates starts: an instance up where its rule is now
// broken (flag A) is said in the service's notes.
func TestSvcmonSaysAffinityViolated(t *testing.T) {
	web := svc(dataset.StatusUp, []string{"n1", "n2"}, map[string]dataset.Instance{
		"n1": inst(dataset.StatusUp, dataset.Idle, "started", true),
		"n2": inst(dataset.StatusDown, dataset.Idle, "none", false),
	})
	i := web.Instances["n1"]
	i.Flags = "AL"
	web.Instances["n1"] = i
	st := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "prod", Compat: true}, Nodes: threeNodes(),
		Services: map[string]dataset.ServiceStatus{"web": web}, Local: "n1"}
	if out := Svcmon(st, SvcmonOptions{}); !strings.Contains(out, "affinity violated on n1") {
		t.Errorf("svcmon does not say the affinity is violated:\n%s", out)
	}
}

// One "^": a node that shut down (or stopped its daemon) keeps the
// placement leader flag of its last data while another node leads now.
func TestOneLeaderMarkAfterAShutdown(t *testing.T) {
	st := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "c", Compat: true}, Local: "n2",
		Nodes: map[string]dataset.NodeInfo{
			"n1": {Status: dataset.NodeStShutting, Monitor: dataset.NodeShutting, Compat: 1},
			"n2": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1},
		},
		Services: map[string]dataset.ServiceStatus{"web": {Avail: dataset.StatusUp, Overall: dataset.StatusUp, Orchestrate: "ha", Nodes: []string{"n1", "n2"},
			Instances: map[string]dataset.Instance{
				"n1": {Avail: dataset.StatusDown, PlacementLeader: true, Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
				"n2": {Avail: dataset.StatusUp, PlacementLeader: true, Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
			}}}}
	out := Svcmon(st, SvcmonOptions{})
	if n := strings.Count(out, "^"); n != 1 || !strings.Contains(out, "O^") {
		t.Fatalf("%d leader marks, want one, on n2:\n%s", n, out)
	}
}

// A flex service shows its instances up of its target beside its avail
// ("warn 2/3"), each instance in its node's column, and its counts in
// the status tree.
func TestFlexServiceView(t *testing.T) {
	st := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "c", Compat: true}, Local: "n1",
		Nodes: map[string]dataset.NodeInfo{
			"n1": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1},
			"n2": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1},
			"n3": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1},
		},
		Services: map[string]dataset.ServiceStatus{"app": {Avail: dataset.StatusWarn, Overall: dataset.StatusWarn, Orchestrate: "ha", Nodes: []string{"n1", "n2", "n3"},
			Flex: &dataset.FlexStatus{Up: 2, Target: 3, Min: 1, Max: 3},
			Instances: map[string]dataset.Instance{
				"n1": {Avail: dataset.StatusUp, Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
				"n2": {Avail: dataset.StatusUp, Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
				"n3": {Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Ready}},
			}}}}
	out := Svcmon(st, SvcmonOptions{})
	if !strings.Contains(out, "warn 2/3") || strings.Count(out, "O") < 2 || !strings.Contains(out, "ready") {
		t.Fatalf("svcmon of a flex service:\n%s", out)
	}
	tree := StatusTree("app", st.Services["app"], "n1")
	if !strings.Contains(tree, "flex: 2 of 3 up (min 1, max 3)") {
		t.Fatalf("status tree:\n%s", tree)
	}
}
