package node

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/placement"
)

// incLocal is the driver's view of a test node: the core's own dataset.
type incLocal struct {
	c    *Core
	svcs map[string]*config.ServiceConfig
}

func (l *incLocal) LocalInfo() dataset.Node {
	return dataset.Node{Name: l.c.cfg.Name, Load15: 0.5, Services: map[string]dataset.Instance{}}
}

func (l *incLocal) LocalServices() map[string]*config.ServiceConfig {
	out := make(map[string]*config.ServiceConfig, len(l.svcs))
	for k, v := range l.svcs {
		out[k] = v
	}
	return out
}

// incDriver drives one core as the daemon does: it runs the checks and
// actions the core asks (at once, successfully), counts the local
// dataset's changes (gen), and runs the pass when that changed (full) or
// when only the view changed (passView, or Orchestrate when
// incremental is false). It logs everything the core asks.
type incDriver struct {
	c           *Core
	incremental bool
	running     map[string]bool
	gen, step   uint64
	stepAt      time.Time
	log         []string
}

func (d *incDriver) settle(now time.Time) {
	for i := 0; i < 100; i++ {
		rd := d.c.Ready()
		if !rd.WakeAt.IsZero() && (d.stepAt.IsZero() || rd.WakeAt.Before(d.stepAt)) {
			d.stepAt = rd.WakeAt // as daemon.armStep
		}
		persist := ""
		if rd.Persist != nil {
			persist = fmt.Sprintf("%+v", *rd.Persist)
		}
		if rd.Persist != nil || rd.Publish || len(rd.Events)+len(rd.Run)+len(rd.Check)+len(rd.Answers) > 0 {
			d.log = append(d.log, fmt.Sprintf("%s publish=%v persist=%s events=%+v run=%+v check=%+v answers=%+v",
				now.Format("15:04:05.000"), rd.Publish, persist, rd.Events, rd.Run, rd.Check, rd.Answers))
		}
		if rd.Publish {
			d.gen++
		}
		for _, ck := range rd.Check {
			st := dataset.StatusDown
			if d.running[ck.Service] {
				st = dataset.StatusUp
			}
			d.c.checkDone(ck, map[string]dataset.Resource{"app#main": {Status: st, Label: "app"}}, now)
		}
		for _, a := range rd.Run {
			d.running[a.Service] = a.Kind != "stop"
			d.c.actionDone(a.Service, a.Kind, nil, now)
		}
		switch {
		case d.gen != d.step:
			d.step = d.gen
			d.c.pass(now)
		case d.c.ViewChanged() && d.incremental:
			d.c.passView(now)
		case d.c.ViewChanged():
			d.c.pass(now)
		default:
			if !d.c.HasReady() {
				return
			}
		}
	}
	panic("the core does not settle")
}

// incCluster is the local node n1 of a 4-node cluster with random
// services (random relations), and its peers' data.
func incCluster(r *rand.Rand, incremental bool) (*incDriver, map[string]*dataset.Node, []string) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	pick := func(list ...string) string { return list[r.Intn(len(list))] }
	svcs := map[string]*config.ServiceConfig{}
	var names []string
	for j := 0; j < 24; j++ {
		names = append(names, fmt.Sprintf("s%02d", j))
	}
	other := func() []string {
		if r.Intn(6) == 0 {
			return []string{names[r.Intn(len(names))]}
		}
		return nil
	}
	for _, name := range names {
		cfg := &config.ServiceConfig{Name: name, Nodes: []string{"*"}, Orchestrate: pick(monitor.OrchestrateHA, monitor.OrchestrateHA, monitor.OrchestrateStart),
			Placement:    pick(placement.PolicyNodesOrder, placement.PolicySpread, placement.PolicyLoadAvg),
			HardAffinity: other(), HardAntiAffinity: other(), SoftAffinity: other(), SoftAntiAffinity: other(), Parents: other(), Children: other()}
		if r.Intn(3) == 0 {
			cfg.Nodes = []string{pick(nodes...), "n1"}
		}
		svcs[name] = cfg
	}
	loc := &incLocal{svcs: svcs}
	c := New(Config{Name: "n1", ClusterNodes: nodes, Compat: 1, MaintenanceGrace: 6 * time.Second, RejoinGrace: 10 * time.Second,
		ReadyPeriod: 2 * time.Second, CheckInterval: time.Hour, MonitorInterval: time.Hour, Local: loc, WriteThrough: true}, State{})
	loc.c = c
	for _, name := range names {
		c.addInstance(name, instsm.Spec{Local: true, Runnable: true, Monitored: true}, t0)
	}
	c.inc.Off = !incremental
	d := &incDriver{c: c, incremental: incremental, running: map[string]bool{}}
	c.start(t0)
	d.settle(t0)
	peers := map[string]*dataset.Node{}
	for _, n := range nodes[1:] {
		data := &dataset.Node{Name: n, Monitor: dataset.NodeIdle, Compat: 1, Load15: 1, Services: map[string]dataset.Instance{}}
		for _, name := range names {
			data.Services[name] = dataset.Instance{Avail: dataset.StatusDown,
				Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone, StateSince: t0}}
		}
		peers[n] = data
		c.heartbeat(PeerEvent{Node: n, Kind: PeerUp}, t0)
		c.heartbeat(PeerEvent{Node: n, Kind: PeerData, Data: cloneNode(data)}, t0)
	}
	d.settle(t0)
	return d, peers, names
}

func cloneNode(n *dataset.Node) *dataset.Node { x := n.Clone(); return &x }

// TestIncrementalPassMatchesFull: two identical nodes take the same random
// heartbeats (mostly one instance of one service changed on one peer;
// sometimes two, a removal, a node-level change, a crash of a peer), the
// same time passing and the same checks and actions; one decides with
// passView (incremental when it can), the other always with the
// full pass. What each core asks of its driver (events, actions, checks,
// state to write, answers) is the same, round after round, and the
// incremental node did run incremental passes.
func TestIncrementalPassMatchesFull(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		ra, rb := rand.New(rand.NewSource(seed)), rand.New(rand.NewSource(seed))
		a, peersA, names := incCluster(ra, true)
		b, peersB, _ := incCluster(rb, false)
		r := rand.New(rand.NewSource(seed * 100))
		now := t0
		pick := func(list ...string) string { return list[r.Intn(len(list))] }
		states := []string{string(dataset.Idle), string(dataset.Idle), string(dataset.Ready), string(dataset.Starting), string(dataset.StartFailed)}
		avails := []string{string(dataset.StatusDown), string(dataset.StatusDown), string(dataset.StatusUp), string(dataset.StatusWarn)}
		for round := 0; round < 300; round++ {
			now = now.Add(time.Duration(r.Intn(1500)) * time.Millisecond)
			peer := pick("n2", "n3", "n4")
			events := []PeerEvent{}
			change := func(f func(n *dataset.Node)) {
				for _, peers := range []map[string]*dataset.Node{peersA, peersB} {
					n := cloneNode(peers[peer])
					f(n)
					peers[peer] = n
				}
				events = append(events, PeerEvent{Node: peer, Kind: PeerData})
			}
			switch k := r.Intn(20); {
			case k < 13: // one instance changed
				svc, avail, st := names[r.Intn(len(names))], pick(avails...), pick(states...)
				change(func(n *dataset.Node) {
					i := n.Services[svc]
					i.Avail, i.Monitor.State, i.Monitor.StateSince = dataset.Status(avail), dataset.MonitorState(st), now
					n.Services[svc] = i
				})
			case k < 15: // two
				s1, s2 := names[r.Intn(len(names))], names[r.Intn(len(names))]
				change(func(n *dataset.Node) {
					for _, svc := range []string{s1, s2} {
						i := n.Services[svc]
						i.Avail = dataset.StatusDown
						n.Services[svc] = i
					}
				})
			case k < 16: // one removed, or back
				svc := names[r.Intn(len(names))]
				change(func(n *dataset.Node) {
					if _, ok := n.Services[svc]; ok {
						delete(n.Services, svc)
					} else {
						n.Services[svc] = dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle}}
					}
				})
			case k < 17: // node level: frozen, or the load (read by load avg)
				frozen := r.Intn(2) == 0
				change(func(n *dataset.Node) {
					if frozen {
						n.Frozen = !n.Frozen
					} else {
						n.Load15 = 1 - n.Load15 // 0 or 1: before or after the local node's 0.5
					}
				})
			case k < 18: // the peer is lost, then heard again
				events = append(events, PeerEvent{Node: peer, Kind: PeerDown}, PeerEvent{Node: peer, Kind: PeerUp}, PeerEvent{Node: peer, Kind: PeerData})
			}
			wakeFirst := r.Intn(2) == 0
			for _, d := range []*incDriver{a, b} {
				wake := func() {
					if !d.stepAt.IsZero() && !now.Before(d.stepAt) {
						d.stepAt = time.Time{}
						d.c.wakeUp()
						d.settle(now)
					}
				}
				if wakeFirst {
					wake()
				}
				peers := peersA
				if d == b {
					peers = peersB
				}
				for _, ev := range events {
					if ev.Kind == PeerData {
						ev.Data = cloneNode(peers[ev.Node])
					}
					d.c.heartbeat(ev, now)
					d.settle(now)
				}
				wake() // the heartbeats first, the timer's event after (when not done)
				d.c.tick(now)
				d.settle(now)
			}
			if !reflect.DeepEqual(a.log, b.log) {
				for i := range a.log {
					if i >= len(b.log) || a.log[i] != b.log[i] {
						t.Fatalf("seed %d round %d: the incremental node asked\n%s\nthe full-pass node\n%s", seed, round, a.log[i], strings.Join(b.log[i:min(i+1, len(b.log))], "\n"))
					}
				}
				t.Fatalf("seed %d round %d: the full-pass node asked more: %s", seed, round, b.log[len(a.log)])
			}
			a.log, b.log = nil, nil
		}
		if a.c.inc.Partial == 0 || a.c.inc.Partial < a.c.inc.Full/4 {
			t.Fatalf("seed %d: %d incremental passes, %d full: too few incremental", seed, a.c.inc.Partial, a.c.inc.Full)
		}
		t.Logf("seed %d: %d incremental passes, %d full", seed, a.c.inc.Partial, a.c.inc.Full)
		starts := 0
		for _, svc := range names {
			if a.running[svc] {
				starts++
			}
		}
		if starts == 0 {
			t.Fatalf("seed %d: nothing ever ran here: the test decides nothing", seed)
		}
	}
}

// TestNodeLevelFieldsKnown: every field of dataset.Node is either compared
// by nodeLevelEqual or known not to matter to the decisions of an
// incremental pass; a new field must be put in one list or the other.
func TestNodeLevelFieldsKnown(t *testing.T) {
	known := map[string]string{
		"Name": "compared", "Monitor": "compared", "Frozen": "compared", "Compat": "compared",
		"Load15": "compared when read", "MemAvailPct": "compared when read", "Labels": "compared",
		"FrozenReason": "compared", "SplitAction": "compared", "Format": "compared", "Guard": "compared", "Capacity": "compared",
		"SplitFrozen": "compared", "SplitFrozenReason": "compared",
		"Conf":     "compared by updateConf on every heartbeat event (a change of ConfDiffers: a full pass)",
		"Services": "diffed per service", "Targets": "merged locally (a full pass)",
		"Configs": "installed by the driver (a full pass)", "Clears": "merged locally (a full pass)", "Gen": "changes with everything",
	}
	checkFields(t, reflect.TypeOf(dataset.Node{}), known)
}

// TestInstanceFieldsKnown: instanceEqual compares every field of
// dataset.Instance.
func TestInstanceFieldsKnown(t *testing.T) {
	known := map[string]string{}
	for _, f := range []string{"Avail", "Overall", "Frozen", "Monitor", "PlacementLeader", "Flags", "Resources", "ConfigVersion",
		"ConfigError", "Excluded", "GaveUp", "Stale", "AgeMs", "FencingToken", "FencingSeen", "ReadyAck",
		"RunDigest", "ConfigDigest", "Rollout", "RolloutMark"} {
		known[f] = "compared"
	}
	// measured durations, for svcmgr simulate: no decision reads them
	known["LastStartMs"], known["LastStopMs"] = "not read by decisions", "not read by decisions"
	checkFields(t, reflect.TypeOf(dataset.Instance{}), known)
	a := dataset.Instance{Resources: map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}}
	b := a
	b.Resources = map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}
	if instanceEqual(a, b) || !instanceEqual(a, a) {
		t.Fatal("instanceEqual does not compare the resources")
	}
}

func checkFields(t *testing.T, typ reflect.Type, known map[string]string) {
	t.Helper()
	for i := 0; i < typ.NumField(); i++ {
		if f := typ.Field(i).Name; known[f] == "" {
			t.Errorf("%s.%s is new: say whether an incremental pass must compare it (incremental.go)", typ, f)
		}
	}
	if typ.NumField() != len(known) {
		t.Errorf("%s has %d fields, %d known: update the list", typ, typ.NumField(), len(known))
	}
}
