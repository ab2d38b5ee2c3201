package resource

import (
	"context"
	"testing"

	"haven/config"
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
	benchStatusUp(b, context.Background(), d, "127.0.0.1 on lo")
}
