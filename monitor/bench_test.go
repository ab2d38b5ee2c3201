package monitor

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// benchSnapshot is a 16-node cluster with 2000 services on every node
// ("*"), mixed policies, a few affinities and parents; half the services run
// somewhere, some are in ready or failed states.
func benchSnapshot() Snapshot {
	const nNodes, nSvcs = 16, 2000
	s := Snapshot{Now: t0.Add(time.Hour), Local: "n00", Nodes: map[string]placement.NodeView{},
		Services: map[string]*config.ServiceConfig{}, Compat: true, ReadyPeriod: DefaultReadyPeriod}
	for i := 0; i < nNodes; i++ {
		n := fmt.Sprintf("n%02d", i)
		s.ClusterNodes = append(s.ClusterNodes, n)
		s.Nodes[n] = placement.NodeView{Name: n, Status: dataset.NodeUp, Data: dataset.Node{
			Name: n, Monitor: dataset.NodeIdle, Load15: float64(i%5) / 2, MemAvailPct: float64(30 + i*3),
			Services: make(map[string]dataset.Instance, nSvcs), Targets: map[string]dataset.Target{},
		}}
	}
	policies := []string{placement.PolicyNodesOrder, placement.PolicyLoadAvg, placement.PolicySpread, placement.PolicyScore}
	for j := 0; j < nSvcs; j++ {
		name := fmt.Sprintf("svc%04d", j)
		cfg := &config.ServiceConfig{Name: name, Nodes: []string{"*"}, Orchestrate: OrchestrateHA, Placement: policies[j%4]}
		switch j % 10 {
		case 1:
			cfg.HardAntiAffinity = []string{fmt.Sprintf("svc%04d", j-1)}
		case 2:
			cfg.SoftAffinity = []string{fmt.Sprintf("svc%04d", j-2)}
		case 3:
			cfg.Parents = []string{fmt.Sprintf("svc%04d", j-3)}
		}
		s.Services[name] = cfg
		for i, n := range s.ClusterNodes {
			inst := dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: "none", LocalExpect: "none", StateSince: t0}}
			if j%2 == 0 && i == j%nNodes {
				inst.Avail = dataset.StatusUp
				inst.Monitor.LocalExpect = dataset.ExpectStarted
			}
			if j%7 == 0 && i == 0 {
				inst.Monitor.State = dataset.Ready
			}
			if j%13 == 0 && i == 1 {
				inst.Monitor.State = dataset.StartFailed
			}
			s.Nodes[n].Data.Services[name] = inst
		}
	}
	return s
}

func BenchmarkStep2000x16(b *testing.B) { benchStep(b, benchSnapshot()) }

// benchStep measures full passes over s (2,000 services).
func benchStep(b *testing.B, s Snapshot) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if ds := Step(s); len(ds) != 2000 {
			b.Fatalf("got %d decisions, want 2000", len(ds))
		}
	}
	reportCPU(b, cpu)
}

// cpuTime is the CPU time of the process (user and system, every thread:
// the garbage collector's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start as cpu-ns/op: on a
// shared, loaded machine the wall time per op says more about the other
// processes than about the code.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkStepOne2000x16 is the incremental pass after a heartbeat that
// changed one service (svc0014, which has no relation) on one peer of the
// 2,000 × 16 cluster of BenchmarkStep2000x16: StepOnly over its closure.
// Relations are built once per set of configs (not per pass). Target:
// < 100µs.
func BenchmarkStepOne2000x16(b *testing.B) { benchStepOne(b, "svc0014") }

// BenchmarkStepOneRelated2000x16 is BenchmarkStepOne2000x16 for a service
// with relations (svc0010, svc0011, svc0012 and svc0013 are linked).
func BenchmarkStepOneRelated2000x16(b *testing.B) { benchStepOne(b, "svc0011") }

func benchStepOne(b *testing.B, svc string) {
	s := benchSnapshot()
	s = withInstance(s, "n05", svc, dataset.Instance{Avail: dataset.StatusDown,
		Monitor: dataset.InstanceMonitor{State: dataset.Ready, GlobalExpect: "none", LocalExpect: "none", StateSince: t0}}, true)
	rel := NewRelations(s.Services)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if ds := StepOnly(s, rel.Closure([]string{svc})); len(ds) == 0 {
			b.Fatal("no decision")
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkStepCached2000x16 is BenchmarkStep2000x16 as the node core
// runs it: with a Cache, the peers' data unchanged since the previous pass
// (the safety-net pass, or one after a local change), the local node's
// data built anew for each pass (a new map: read again).
func BenchmarkStepCached2000x16(b *testing.B) {
	s := benchSnapshot()
	s.Cache = &Cache{}
	Step(s)
	local := s.Nodes[s.Local]
	copies := make([]map[string]dataset.Instance, 2)
	for i := range copies {
		copies[i] = make(map[string]dataset.Instance, len(local.Data.Services))
		for k, v := range local.Data.Services {
			copies[i][k] = v
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		local.Data.Services = copies[i%2]
		s.Nodes[s.Local] = local
		if ds := Step(s); len(ds) != 2000 {
			b.Fatalf("got %d decisions, want 2000", len(ds))
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkStepFlex2000x16 is BenchmarkStep2000x16 with every odd service
// a flex service of target 3 up on 3 nodes (half the services flex).
func BenchmarkStepFlex2000x16(b *testing.B) {
	s := benchSnapshot()
	for j := 1; j < 2000; j += 2 {
		name := fmt.Sprintf("svc%04d", j)
		cfg := *s.Services[name]
		cfg.Topology, cfg.FlexTarget, cfg.FlexMin, cfg.FlexMax = config.TopologyFlex, 3, 1, 3
		s.Services[name] = &cfg
		for k := 0; k < 3; k++ {
			n := s.ClusterNodes[(j+k)%len(s.ClusterNodes)]
			inst := s.Nodes[n].Data.Services[name]
			inst.Avail, inst.Monitor.LocalExpect = dataset.StatusUp, dataset.ExpectStarted
			s.Nodes[n].Data.Services[name] = inst
		}
	}
	benchStep(b, s)
}

// BenchmarkStepRequests2000x16 is BenchmarkStepFlex2000x16 with every
// service requesting capacity (0.1 core, 64MiB) on nodes that hold them
// all: the capacity use of every node added up each pass, the capacity
// filter on every ranking, no ranking kept from the last pass.
func BenchmarkStepRequests2000x16(b *testing.B) {
	s := benchSnapshot()
	for j := 0; j < 2000; j++ {
		name := fmt.Sprintf("svc%04d", j)
		cfg := *s.Services[name]
		if j%2 == 1 {
			cfg.Topology, cfg.FlexTarget, cfg.FlexMin, cfg.FlexMax = config.TopologyFlex, 3, 1, 3
			for k := 0; k < 3; k++ {
				n := s.ClusterNodes[(j+k)%len(s.ClusterNodes)]
				inst := s.Nodes[n].Data.Services[name]
				inst.Avail, inst.Monitor.LocalExpect = dataset.StatusUp, dataset.ExpectStarted
				s.Nodes[n].Data.Services[name] = inst
			}
		}
		cfg.RequestCPU, cfg.RequestMem = 100, 64<<20
		s.Services[name] = &cfg
	}
	for n, v := range s.Nodes {
		v.Data.Capacity = &dataset.Capacity{CPUMilli: 1000 * 1000, MemBytes: 1 << 40}
		s.Nodes[n] = v
	}
	benchStep(b, s)
}
