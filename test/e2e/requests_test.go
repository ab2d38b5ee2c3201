package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// Requests and capacity with real daemons: every node offers 1.5 cores,
// each service requests 1. a starts on n1, b finds n1 short and starts on
// n2, c fits nowhere: the status and explain say cpu is short on both
// nodes, and the nodes' capacity use shows; a stopped, c starts on n1.
func TestRequestsOnCluster(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own; mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{extra: "capacity_cpu = 1.5\n"})
	svc := func(name string) {
		createService(t, c["n1"], name, testbed.HAService(`["n1", "n2"]`, "request_cpu = 1\n"))
	}
	svc("a")
	waitFor(t, 30*time.Second, "a up on n1", upOnlyOn(c["n1"], "a", "n1"))
	svc("b")
	waitFor(t, 30*time.Second, "b up on n2 (n1 short of cpu)", upOnlyOn(c["n1"], "b", "n2"))
	svc("c")
	want := []string{"n1: cpu 1 of 1.5 requested, needs 1", "n2: cpu 1 of 1.5 requested, needs 1"}
	waitFor(t, 30*time.Second, "c short of capacity on n1 and n2", func() bool {
		return slices.Equal(c["n2"].status().Services["c"].CapacityShort, want)
	})
	if k := c["n2"].status().Nodes["n1"].Capacity; k == nil || k.CPUMilli != 1500 || k.RequestedCPUMilli != 1000 {
		t.Fatalf("n1's capacity seen from n2: %+v, want 1500 with 1000 requested", k)
	}
	out := c["n2"].must("svcmgr", "-s", "c", "explain")
	for _, l := range []string{"requests: cpu 1 per instance", "short of capacity on n1: cpu 1 of 1.5 requested, needs 1",
		"leader: none", "capacity: cpu 1 of 1.5 requested, needs 1"} {
		if !strings.Contains(out, l) {
			t.Fatalf("explain c: got\n%s\nwant a line with %q", out, l)
		}
	}
	if mon := c["n1"].must("svcmon"); !strings.Contains(mon, "cpu req") || !strings.Contains(mon, "capacity short") {
		t.Fatalf("svcmon:\n%s", mon)
	}
	c["n1"].must("svcmgr", "-s", "a", "stop", "--wait")
	waitFor(t, 30*time.Second, "c up on n1 once a stopped", upOnlyOn(c["n1"], "c", "n1"))
	if got := where(c["n1"], "b"); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("b moved: up on %v", got)
	}
}
