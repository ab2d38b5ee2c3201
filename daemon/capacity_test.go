package daemon

import (
	"slices"
	"testing"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// The status says where a service with requests below its target does not
// fit, and nothing once it runs.
func TestStatusCapacityShort(t *testing.T) {
	views := map[string]placement.NodeView{}
	for _, n := range []string{"n1", "n2"} {
		views[n] = placement.NodeView{Name: n, Status: dataset.NodeUp, Data: dataset.Node{Name: n,
			Capacity: &dataset.Capacity{CPUMilli: 4000, MemBytes: 8 << 30}, Services: map[string]dataset.Instance{}}}
	}
	views["n1"].Data.Services["big"] = dataset.Instance{Avail: dataset.StatusUp}
	big := &config.ServiceConfig{Name: "big", Nodes: []string{"n1"}, RequestCPU: 3500}
	web := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2"}, Orchestrate: "ha", RequestCPU: 1000}
	usage := placement.NewUsage(views, map[string]*config.ServiceConfig{"big": big, "web": web}, nil)
	ss := &dataset.ServiceStatus{Avail: dataset.StatusDown, Nodes: web.Nodes,
		Instances: map[string]dataset.Instance{"n1": {Avail: dataset.StatusDown}, "n2": {Avail: dataset.StatusDown}}}
	if got, want := capacityShort(usage, web, ss), []string{"n1: cpu 3.5 of 4 requested, needs 1"}; !slices.Equal(got, want) {
		t.Fatalf("down: %q, want %q", got, want)
	}
	ss.Avail = dataset.StatusUp
	if got := capacityShort(usage, web, ss); got != nil {
		t.Fatalf("up: %q", got)
	}
	ss.Avail = dataset.StatusDown
	if got := capacityShort(usage, &config.ServiceConfig{Name: "plain", Nodes: web.Nodes}, ss); got != nil {
		t.Fatalf("no requests: %q", got)
	}
	// stopped by the admin (frozen everywhere): not to be started, nothing
	// is short
	ss.Frozen, ss.GlobalExpect = "frozen", dataset.ExpectNone
	if got := capacityShort(usage, web, ss); got != nil {
		t.Fatalf("frozen: %q", got)
	}
}
