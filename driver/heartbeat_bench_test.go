package driver

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/heartbeat"
	"haven/internal/clock"
	"haven/node"
)

// benchLocal is a node's own view: its core's dataset, its services.
type benchLocal struct {
	core *node.Core
	svcs map[string]*config.ServiceConfig
}

func (b *benchLocal) LocalInfo() dataset.Node {
	return dataset.Node{Name: "n1", Services: map[string]dataset.Instance{}}
}
func (b *benchLocal) LocalServices() map[string]*config.ServiceConfig { return b.svcs }

// refuseCodec parses nothing: the benchmark's peer configs never win.
type refuseCodec struct{}

func (refuseCodec) ParseService(string, []byte) (*config.ServiceConfig, error) {
	return nil, errors.New("not in this benchmark")
}
func (refuseCodec) EditService(string, []byte, string, []string) ([]byte, error) {
	return nil, errors.New("not in this benchmark")
}

// peerChangeBench is the receiving node n1 of a two-node cluster on a
// MemNetwork: its heartbeat, its driver and core, holding n services that
// the peer n2 also holds (with a target and a config for a quarter of
// them, the same as n1's), and frames (the deltas n2 sent, one per
// change, not yet delivered).
type peerChangeBench struct {
	net    *heartbeat.MemNetwork
	hb     heartbeat.Heartbeat
	d      *Driver
	frames [][]byte
}

func newPeerChangeBench(b *testing.B, n, changes int) *peerChangeBench {
	b.Helper()
	clk := clock.NewFake(t0)
	net := heartbeat.NewMemNetwork(clk)
	members := []config.Member{{Name: "n1"}, {Name: "n2"}}
	join := func(name string) heartbeat.Heartbeat {
		h, err := net.Join(heartbeat.Config{Node: name, Members: members, ClusterName: "c", Timeout: 3 * time.Second, Interval: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	hb1, hb2 := join("n1"), join("n2")

	nd := dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1, Labels: map[string]string{"az": "a"},
		Services: map[string]dataset.Instance{}, Targets: map[string]dataset.Target{}, Configs: map[string]dataset.ConfigEntry{}}
	st := node.State{Services: map[string]node.ServiceState{}}
	svcs := map[string]*config.ServiceConfig{}
	v := dataset.Version{Counter: 1, Origin: "n2"}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("svc%04d", i)
		svcs[name] = &config.ServiceConfig{Name: name, Nodes: []string{"*"}, Orchestrate: "ha", Placement: "nodes order"}
		inst := dataset.Instance{Avail: dataset.StatusDown, Overall: dataset.StatusDown, Flags: "",
			Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: "none", LocalExpect: "none", StateSince: t0}}
		if i%2 == 0 {
			inst.Resources = map[string]dataset.Resource{"ip#1": {Status: dataset.StatusDown, Label: "10.0.0.1"}}
		}
		nd.Services[name] = inst
		ss := node.ServiceState{}
		if i%4 == 0 {
			t := dataset.Target{Expect: dataset.ExpectNone, ID: name, Version: v}
			e := dataset.ConfigEntry{Version: v, Digest: dataset.ConfigDigest([]byte(name)), Includes: map[string]uint64{"n2": 1}, Raw: name}
			nd.Targets[name], nd.Configs[name] = t, e
			ss.Target, ss.ConfigVersion, ss.ConfigDigest, ss.ConfigIncludes = t, e.Version, e.Digest, e.Includes
		}
		st.Services[name] = ss
	}
	nc := &config.NodeConfig{Name: "n1", ReadyPeriod: 2 * time.Second, MaintenanceGracePeriod: time.Minute, RejoinGracePeriod: 90 * time.Second,
		CheckInterval: time.Hour, MonitorInterval: time.Hour, HB: config.HBConfig{Timeout: 3 * time.Second, Interval: time.Second}}
	cl := &config.ClusterConfig{Name: "c", Nodes: members}
	loc := &benchLocal{svcs: svcs}
	core := node.New(CoreConfig(nc, cl, 1, loc, refuseCodec{}), st)
	loc.core = core
	core.Step(node.Durable{})
	fx := &fakeFx{}
	d := New(core, fx, clk)
	for name := range svcs {
		core.Step(node.InstanceInstalled{Service: name, Spec: node.InstanceSpec{Local: true, Runnable: true}, Now: clk.Now()})
	}
	d.Start()
	pc := &peerChangeBench{net: net, hb: hb1, d: d}

	hb2.Publish(nd)
	net.Tick()
	pc.drain(false)
	if p, _ := core.Peer("n2"); p.Data == nil || len(p.Data.Services) != n {
		b.Fatalf("n2's data not held: %+v", p.Data)
	}
	// every instance checked (down), then the passes settle
	for len(fx.checks) > 0 {
		cks := fx.checks
		fx.checks = nil
		for _, ck := range cks {
			d.CheckDone(ck, map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}})
		}
	}
	for i := 0; i < 3; i++ {
		d.Pass()
	}

	// the frames n2 sends to n1, withheld until the benchmark delivers them
	net.Lose(func(from, to string, f []byte) bool {
		if from == "n2" && to == "n1" {
			pc.frames = append(pc.frames, f)
			return true
		}
		return false
	})
	for i := 0; i < changes; i++ {
		nd.Services["svc0001"] = dataset.Instance{Avail: dataset.StatusUp, Overall: dataset.StatusUp, Flags: fmt.Sprint(i),
			Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: "none", LocalExpect: "none", StateSince: t0}}
		hb2.Publish(nd)
	}
	net.Lose(nil)
	if len(pc.frames) != changes {
		b.Fatalf("%d frames for %d changes", len(pc.frames), changes)
	}
	return pc
}

// drain hands every event n1's heartbeat holds to the driver (pass: a
// decision pass after each).
func (pc *peerChangeBench) drain(pass bool) {
	for {
		select {
		case ev := <-pc.hb.Events():
			pc.d.Heartbeat(ev)
			if pass {
				pc.d.Pass()
			}
		default:
			return
		}
	}
}

// BenchmarkPeerChange is the receiving node's whole path for one change
// of one service on a peer, among 200 or 2000: the heartbeat takes the
// delta (as sent, decoded), its Data event goes through Driver.Heartbeat
// (the names checked) into the node core (the peer's data merged and
// compared). "pass" adds the decision pass that follows (Driver.Pass:
// incremental).
func BenchmarkPeerChange(b *testing.B) {
	for _, n := range []int{200, 2000} {
		for _, pass := range []bool{false, true} {
			name := fmt.Sprintf("heartbeat+driver+core/%d", n)
			if pass {
				name = fmt.Sprintf("with-pass/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				pc := newPeerChangeBench(b, n, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for _, f := range pc.frames {
					pc.net.Redeliver("n2", "n1", 0, f)
					pc.drain(pass)
				}
				b.StopTimer()
				p, _ := pc.d.Core.Peer("n2")
				if got := p.Data.Services["svc0001"].Flags; got != fmt.Sprint(b.N-1) {
					b.Fatalf("n2's svc0001 flags %q after %d changes", got, b.N)
				}
			})
		}
	}
}
