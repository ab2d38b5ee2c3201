package render

import (
	"strings"
	"testing"

	"haven/api"
	"haven/dataset"
)

// svcmon shows the nodes' capacity use once some instance holds requests,
// and a service short of capacity says where, in the status tree and in
// explain.
func TestCapacityShown(t *testing.T) {
	st := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "prod", Compat: true, FeatureLevel: 2},
		Nodes: map[string]dataset.NodeInfo{
			"n1": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1, Format: 2,
				Capacity: &dataset.NodeCapacity{CPUMilli: 4000, MemBytes: 8 << 30, RequestedCPUMilli: 3500, RequestedMemBytes: 6 << 30}},
			"n2": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1, Format: 2,
				Capacity: &dataset.NodeCapacity{CPUMilli: 4000, MemBytes: 8 << 30}},
		},
		Services: map[string]dataset.ServiceStatus{"web": {Avail: dataset.StatusDown, Orchestrate: "ha", Nodes: []string{"n1"},
			Instances:     map[string]dataset.Instance{"n1": {Avail: dataset.StatusDown}},
			CapacityShort: []string{"n1: cpu 3.5 of 4 requested, needs 1"}}},
		Local: "n1"}
	out := Svcmon(st, SvcmonOptions{})
	if !strings.Contains(out, " cpu req ") || !strings.Contains(out, "| 3.5/4  0/4\n") || !strings.Contains(out, "| 6G/8G  0G/8G\n") || !strings.Contains(out, "capacity short") {
		t.Fatalf("svcmon:\n%s", out)
	}
	if tree := StatusTree("web", st.Services["web"], "n1"); !strings.Contains(tree, "short of capacity on n1: cpu 3.5 of 4 requested, needs 1") {
		t.Fatalf("status tree:\n%s", tree)
	}
	// no requests held anywhere: no rows
	for _, n := range []string{"n1", "n2"} {
		ni := st.Nodes[n]
		ni.Capacity.RequestedCPUMilli, ni.Capacity.RequestedMemBytes = 0, 0
		st.Nodes[n] = ni
	}
	if out := Svcmon(st, SvcmonOptions{}); strings.Contains(out, "cpu req") {
		t.Fatalf("capacity rows without requests:\n%s", out)
	}
	e := &api.Explanation{Service: "web", Local: "n1", Requests: "cpu 1", CapacityShort: []string{"n1: cpu 3.5 of 4 requested, needs 1"}}
	if out := Explain(e); !strings.Contains(out, "requests: cpu 1 per instance\n  short of capacity on n1: cpu 3.5 of 4 requested, needs 1\n") {
		t.Fatalf("explain:\n%s", out)
	}
}
