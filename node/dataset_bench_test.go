package node

import (
	"fmt"
	"testing"

	"haven/dataset"
	"haven/node/instsm"
)

// BenchmarkDataset2000 is the node core's part of the local dataset that
// the daemon builds for each publish (Core.Dataset: every instance with
// its resources, the targets, the clears), 2,000 local services of two
// resources each: the sender's cost that a change of one service still
// pays in full (docs/benchmarks.md).
func BenchmarkDataset2000(b *testing.B) {
	c := New(Config{Name: "n1", ClusterNodes: []string{"n1"}, Compat: 1, WriteThrough: true}, State{})
	for i := 0; i < 2000; i++ {
		svc := fmt.Sprintf("svc%04d", i)
		c.addInstance(svc, instsm.Spec{Local: true, Runnable: true}, t0)
		c.insts[svc].Res = map[string]dataset.Resource{"ip#1": {Status: dataset.StatusUp}, "app#1": {Status: dataset.StatusUp}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := c.Dataset(dataset.Node{Name: "n1", Services: map[string]dataset.Instance{}})
		if len(n.Services) != 2000 {
			b.Fatalf("%d instances", len(n.Services))
		}
	}
}
