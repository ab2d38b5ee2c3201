package node

import (
	"fmt"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// benchLocal is a driver's view with no change.
type benchLocal struct {
	node dataset.Node
	svcs map[string]*config.ServiceConfig
}

func (b *benchLocal) LocalNode() dataset.Node                         { return b.node }
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
		c.AddInstance(fmt.Sprintf("svc%04d", i), InstanceSpec{Local: i%4 == 0, Runnable: i%4 == 0, Monitored: true}, now)
	}
	c.Start(now)
	for _, n := range names[1:] {
		c.Heartbeat(PeerEvent{Node: n, Kind: PeerUp}, now)
		c.Heartbeat(PeerEvent{Node: n, Kind: PeerData, Data: &dataset.Node{Name: n, Monitor: dataset.NodeIdle, Compat: 1}}, now)
	}
	for _, inst := range c.insts { // checked just now
		inst.lastFull, inst.lastMon = now, now
	}
	c.lastStep = now // a pass just ran
	c.viewChanged = false
	c.Ready()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if scan {
			c.nextCheck = time.Time{}
		}
		c.Tick(now.Add(time.Second))
		if rd := c.Ready(); !rd.Empty() || c.ViewChanged() {
			b.Fatalf("an idle tick asked something: %d events, %d checks, %d runs, view changed %v",
				len(rd.Events), len(rd.Check), len(rd.Run), c.ViewChanged())
		}
	}
}
