package driver

import (
	"slices"
	"testing"
	"time"

	"haven/config"
	"haven/heartbeat"
	"haven/internal/clock"
	"haven/node"
)

// TestSuspendIsAStall: the host is suspended for 10 s (hb.timeout 3 s):
// the loop's clock (CLOCK_MONOTONIC's) does not see the gap, the boot
// clock does; before any other input the driver tells the core, which
// sees the stall and votes as if alone, as after a pause.
func TestSuspendIsAStall(t *testing.T) {
	fx := &fakeFx{}
	clk := clock.NewFake(t0)
	nc := &config.NodeConfig{Name: "n1", ReadyPeriod: 2 * time.Second, MaintenanceGracePeriod: time.Minute, RejoinGracePeriod: 90 * time.Second,
		CheckInterval: time.Minute, MonitorInterval: 5 * time.Second, SplitAction: node.SplitStop, HB: config.HBConfig{Timeout: 3 * time.Second, Interval: time.Second}}
	cl := &config.ClusterConfig{Name: "c", Quorum: true, Nodes: []config.Member{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}}
	core := node.New(CoreConfig(nc, cl, 1, nil, nil), node.State{})
	core.Step(node.Durable{})
	d := New(core, fx, clk)
	var traced []node.Input
	d.Trace = func(in node.Input) { traced = append(traced, in) }
	d.Start()
	for _, p := range []string{"n2", "n3"} {
		d.Heartbeat(heartbeat.Event{Kind: heartbeat.Up, Node: p})
		d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: p, Data: peerData(p)})
	}
	for range 6 {
		clk.Advance(500 * time.Millisecond)
		d.Tick()
	}
	if core.NodeMonitor() == "rejoin" {
		t.Fatal("still in rejoin")
	}
	stalls := func() int { return slices.Index(fx.log, "event quorum_stall") }
	if stalls() >= 0 {
		t.Fatalf("a stall without a suspend: %v", fx.log)
	}
	clk.Suspend(10 * time.Second)
	clk.Advance(500 * time.Millisecond)
	fx.log = nil
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Up, Node: "n2"}) // the first input after the resume
	if stalls() < 0 {
		t.Fatalf("no stall after a suspend of 10s: %v", fx.log)
	}
	var r node.Resumed
	for _, in := range traced {
		if x, ok := in.(node.Resumed); ok {
			r = x
		}
	}
	if r.Slept != 10*time.Second {
		t.Fatalf("resumed %+v, want slept 10s (traced)", r)
	}
	// a suspend shorter than hb.timeout is no stall
	clk.Suspend(time.Second)
	clk.Advance(500 * time.Millisecond)
	fx.log = nil
	d.Tick()
	if stalls() >= 0 {
		t.Fatalf("a stall after a suspend of 1s: %v", fx.log)
	}
}
