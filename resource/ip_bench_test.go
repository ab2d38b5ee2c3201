package resource

import (
	"context"
	"testing"

	"haven/config"
	"haven/dataset"
)

// The daemon's own cost of one check of an ip resource: 127.0.0.1/8 on lo,
// which every host has, checked in a loop by the driver. ns/op is the wall
// time of a check, self-cpu-ns/op the CPU of this process alone (selfCPU:
// what the daemon spends per check), allocs/op its allocations.
// docs/benchmarks.md has the figures.
func BenchmarkIPStatus(b *testing.B) {
	d, err := New(config.ResourceConfig{RID: "ip#lo", Type: "ip", IPName: "127.0.0.1", Netmask: "8", IPDev: "lo"}, Env{Log: func(string, string) {}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if st, r := d.Status(ctx); st != dataset.StatusUp {
		b.Fatalf("127.0.0.1 on lo: %s (%s)", st, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := selfCPU(b)
	for i := 0; i < b.N; i++ {
		if st, r := d.Status(ctx); st != dataset.StatusUp {
			b.Fatalf("127.0.0.1 on lo: %s (%s)", st, r)
		}
	}
	b.ReportMetric(float64(selfCPU(b)-cpu0)/float64(b.N), "self-cpu-ns/op")
}
