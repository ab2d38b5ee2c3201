package node

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node/instsm"
)

// benchLocal is a driver's view with no change.
type benchLocal struct {
	node dataset.Node
	svcs map[string]*config.ServiceConfig
}

func (b *benchLocal) LocalInfo() dataset.Node                         { return b.node }
func (b *benchLocal) LocalServices() map[string]*config.ServiceConfig { return b.svcs }

// BenchmarkTickIdle is one tick of the node core when nothing changed: 16
// nodes, 2,000 services, every peer heard, no rejoin, no pass due (the
// decision pass itself is monitor's BenchmarkStep2000x16), no check due
// (each instance is looked at). Target: < 50µs.
func BenchmarkTickIdle(b *testing.B) { benchTick(b, false) }

// BenchmarkTickScan is BenchmarkTickIdle when the tick looks at every
// instance (a periodic check was due somewhere: here none is).
func BenchmarkTickScan(b *testing.B) { benchTick(b, true) }

func benchTick(b *testing.B, scan bool) {
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("n%02d", i+1)
	}
	c := New(Config{Name: names[0], ClusterNodes: names, Compat: 1, MaintenanceGrace: 6 * time.Second,
		RejoinGrace: 10 * time.Second, ReadyPeriod: 2 * time.Second, CheckInterval: time.Minute, MonitorInterval: 5 * time.Second,
		Local: &benchLocal{}}, State{})
	now := t0
	for i := 0; i < 2000; i++ {
		c.addInstance(fmt.Sprintf("svc%04d", i), instsm.Spec{Local: i%4 == 0, Runnable: i%4 == 0, Monitored: true}, now)
	}
	c.start(now)
	for _, n := range names[1:] {
		c.heartbeat(PeerEvent{Node: n, Kind: PeerUp}, now)
		c.heartbeat(PeerEvent{Node: n, Kind: PeerData, Data: &dataset.Node{Name: n, Monitor: dataset.NodeIdle, Compat: 1}}, now)
	}
	for _, inst := range c.insts { // checked just now
		inst.Chk.LastFull, inst.Chk.LastMon = now, now
	}
	c.lastStep = now // a pass just ran
	c.pv.ViewChanged = false
	c.Ready()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if scan {
			c.nextCheck = time.Time{}
		}
		c.tick(now.Add(time.Second))
		if rd := c.Ready(); !rd.Empty() || c.ViewChanged() {
			b.Fatalf("an idle tick asked something: %d events, %d checks, %d runs, view changed %v",
				len(rd.Events), len(rd.Check), len(rd.Run), c.ViewChanged())
		}
	}
}

// BenchmarkHeartbeatOne2000x16 is a heartbeat that changes one instance of
// one service on one peer (16 nodes, 2,000 services, every one local),
// and the pass that follows (passView: incremental). The data
// comparison with the peer's previous copy is included. Target: < 100µs.
func BenchmarkHeartbeatOne2000x16(b *testing.B) { benchHeartbeat(b, true, false) }

// BenchmarkHeartbeatFull2000x16 is BenchmarkHeartbeatOne2000x16 with the
// full pass (what every heartbeat cost before the incremental passes).
func BenchmarkHeartbeatFull2000x16(b *testing.B) { benchHeartbeat(b, false, false) }

// BenchmarkHeartbeatFullRunning2000x16 is BenchmarkHeartbeatFull2000x16
// with every service up on one peer (svc i on the (i mod 15)+1th): the
// changed peer's 133 running services are read anew at each pass.
func BenchmarkHeartbeatFullRunning2000x16(b *testing.B) { benchHeartbeat(b, false, true) }

func benchHeartbeat(b *testing.B, incremental, running bool) {
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("n%02d", i+1)
	}
	svcs := map[string]*config.ServiceConfig{}
	for i := 0; i < 2000; i++ {
		n := fmt.Sprintf("svc%04d", i)
		svcs[n] = &config.ServiceConfig{Name: n, Nodes: []string{"*"}, Orchestrate: "ha", Placement: "nodes order"}
	}
	loc := &incLocal{svcs: svcs}
	c := New(Config{Name: names[0], ClusterNodes: names, Compat: 1, MaintenanceGrace: 6 * time.Second,
		RejoinGrace: 10 * time.Second, ReadyPeriod: 2 * time.Second, CheckInterval: time.Hour, MonitorInterval: time.Hour,
		Local: loc, WriteThrough: true}, State{})
	loc.c = c
	now := t0
	for n := range svcs {
		c.addInstance(n, instsm.Spec{Local: true, Runnable: true, Monitored: true}, now)
	}
	c.start(now)
	owner := map[string]string{} // with running, the node where each service runs
	for i := 0; running && i < 2000; i++ {
		owner[fmt.Sprintf("svc%04d", i)] = names[1+i%15]
	}
	peer := func(n string, upOn string) *dataset.Node {
		d := &dataset.Node{Name: n, Monitor: dataset.NodeIdle, Compat: 1, Services: make(map[string]dataset.Instance, len(svcs))}
		for s := range svcs {
			i := dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: "none", LocalExpect: "none", StateSince: t0}}
			if s == upOn || owner[s] == n {
				i.Avail = dataset.StatusUp
			}
			d.Services[s] = i
		}
		return d
	}
	for _, n := range names[1:] {
		c.heartbeat(PeerEvent{Node: n, Kind: PeerUp}, now)
		c.heartbeat(PeerEvent{Node: n, Kind: PeerData, Data: peer(n, "")}, now)
	}
	for _, inst := range c.insts { // checked, down
		inst.Avail, inst.Overall, inst.Chk.LastFull, inst.Chk.LastMon = dataset.StatusDown, dataset.StatusDown, now, now
	}
	c.pass(now)
	if rd := c.Ready(); running && len(rd.Run) > 0 {
		b.Fatalf("services running on peers started here: %+v", rd.Run[0])
	}
	// the service is up on n05 in one copy, down in the other
	copies := []*dataset.Node{peer("n05", "svc0014"), peer("n05", "")}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		c.heartbeat(PeerEvent{Node: "n05", Kind: PeerData, Data: copies[i%2]}, now)
		if incremental {
			c.passView(now)
		} else {
			c.pass(now)
		}
		c.Ready()
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	if incremental && c.inc.Partial < uint64(b.N) {
		b.Fatalf("%d incremental passes for %d heartbeats", c.inc.Partial, b.N)
	}
}

// cpuTime is the CPU time of the process (every thread).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
