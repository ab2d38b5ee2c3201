package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"haven/config"
	"haven/dataset"
	"haven/heartbeat"
	"haven/internal/clock"
	"haven/node"
)

// fakeFx records what the driver asks of its shell; its disk is written at
// once unless slow.
type fakeFx struct {
	log     []string
	slow    bool
	saved   []uint64
	refused []RefusedName
	wakes   []time.Time
	checks  []node.Check
}

func (f *fakeFx) note(format string, a ...any) { f.log = append(f.log, fmt.Sprintf(format, a...)) }
func (f *fakeFx) SaveState(seq uint64, st *node.State) bool {
	f.note("save %d", seq)
	f.saved = append(f.saved, seq)
	return !f.slow
}
func (f *fakeFx) Order(acts []node.Action) {
	for _, a := range acts {
		f.note("order %s %s", a.Kind, a.Service)
	}
}
func (f *fakeFx) Event(e node.Event)               { f.note("event %s", e.Kind()) }
func (f *fakeFx) StartAction(a node.Action)        { f.note("run %s %s", a.Kind, a.Service) }
func (f *fakeFx) RunNodeAction(na node.NodeAction) { f.note("node action %s", na.Kind) }
func (f *fakeFx) StartCheck(ck node.Check) {
	f.note("check %s", ck.Service)
	f.checks = append(f.checks, ck)
}
func (f *fakeFx) Probe(p node.Probe)               { f.note("probe %s", p.Name) }
func (f *fakeFx) Fence(fc node.Fence)              { f.note("fence %s", fc.Node) }
func (f *fakeFx) Announce(svc string)              { f.note("announce %s", svc) }
func (f *fakeFx) ArmWake(t time.Time)              { f.wakes = append(f.wakes, t) }
func (f *fakeFx) ApplyConfigs(ops []node.ConfigOp) { f.note("configs %d", len(ops)) }
func (f *fakeFx) Publish()                         { f.note("publish") }
func (f *fakeFx) RefusedName(r RefusedName)        { f.refused = append(f.refused, r) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newDriver is the driver of n1 in a cluster n1 n2 n3, with a service web
// on n1 and n2, on a fake clock.
func newDriver(t testing.TB, fx *fakeFx) (*Driver, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	nc := &config.NodeConfig{Name: "n1", ReadyPeriod: 2 * time.Second, MaintenanceGracePeriod: time.Minute, RejoinGracePeriod: 90 * time.Second,
		CheckInterval: time.Minute, MonitorInterval: 5 * time.Second, HB: config.HBConfig{Timeout: 3 * time.Second, Interval: time.Second}}
	cl := &config.ClusterConfig{Name: "c", Nodes: []config.Member{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}}
	core := node.New(CoreConfig(nc, cl, 1, nil, nil), node.State{})
	core.Step(node.Durable{})
	d := New(core, fx, clk)
	core.Step(node.InstanceInstalled{Service: "web", Spec: node.InstanceSpec{Local: true, Runnable: true}, Now: clk.Now()})
	d.Start()
	return d, clk
}

// peerData is a live peer's dataset.
func peerData(name string) *dataset.Node {
	return &dataset.Node{Name: name, Compat: 1, Monitor: dataset.NodeIdle, Gen: 1}
}

// Every kind of heartbeat news about a peer maps to its peer event; the
// shell's kinds map to none.
func TestPeerEventMapping(t *testing.T) {
	want := map[heartbeat.Kind]node.PeerKind{
		heartbeat.Up: node.PeerUp, heartbeat.Down: node.PeerDown, heartbeat.Unseen: node.PeerUnseen,
		heartbeat.Stale: node.PeerStale, heartbeat.Fresh: node.PeerFresh, heartbeat.Duplicate: node.PeerDuplicate,
		heartbeat.DuplicateGone: node.PeerDuplicateGone, heartbeat.Data: node.PeerData,
	}
	for k, pk := range want {
		pe, ok := PeerEvent(heartbeat.Event{Kind: k, Node: "n2", Reason: "r", Unseen: []string{"n3"}})
		if !ok || pe.Kind != pk || pe.Node != "n2" {
			t.Errorf("heartbeat kind %d: %+v %v, want peer kind %d", k, pe, ok, pk)
		}
		if (pe.Reason != "") != (pk == node.PeerStale || pk == node.PeerDuplicate) || (pe.Unseen != nil) != (pk == node.PeerUnseen) {
			t.Errorf("heartbeat kind %d: reason %q unseen %v", k, pe.Reason, pe.Unseen)
		}
	}
	for _, k := range []heartbeat.Kind{heartbeat.Rejected, heartbeat.Impostor, heartbeat.Asked, heartbeat.Answered, heartbeat.LinkDown, heartbeat.LinkUp, heartbeat.Silent, heartbeat.Heard} {
		if pe, ok := PeerEvent(heartbeat.Event{Kind: k, Node: "n2"}); ok {
			t.Errorf("the shell's heartbeat kind %d mapped to %+v", k, pe)
		}
	}
}

// A peer heard, then silent: the core concludes up, then down (a Down
// mapped to anything else leaves it up).
func TestHeartbeatUpThenDown(t *testing.T) {
	d, clk := newDriver(t, &fakeFx{})
	for _, ev := range []heartbeat.Event{{Kind: heartbeat.Up, Node: "n2"}, {Kind: heartbeat.Data, Node: "n2", Data: peerData("n2")}} {
		if !d.Heartbeat(ev) {
			t.Fatalf("%+v: left to the shell", ev)
		}
	}
	if st := d.Core.PeerStatus("n2", clk.Now()); st != dataset.NodeUp {
		t.Fatalf("n2 heard: %s, want up", st)
	}
	clk.Advance(3 * time.Second)
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Down, Node: "n2"})
	if st := d.Core.PeerStatus("n2", clk.Now()); st != dataset.NodeDown {
		t.Fatalf("n2 silent for hb.timeout (heartbeat Down): %s, want down", st)
	}
	if d.Heartbeat(heartbeat.Event{Kind: heartbeat.Rejected, Node: "x"}) {
		t.Fatal("a Rejected event was taken by the driver (it is the shell's)")
	}
}

// The names a peer sends are checked before the core sees them: an
// invalid one is refused, reported once.
func TestPeerNamesRefusedOnce(t *testing.T) {
	fx := &fakeFx{}
	d, _ := newDriver(t, fx)
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Up, Node: "n2"})
	data := peerData("n2")
	v := dataset.Version{Counter: 5, Origin: "n2"}
	data.Configs = map[string]dataset.ConfigEntry{"../../victim": {Version: v, Deleted: true}}
	data.Targets = map[string]dataset.Target{"web": {Expect: dataset.ExpectPlaced, Node: "../evil", ID: "x", Version: v}}
	for i := 0; i < 3; i++ {
		d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: data})
	}
	if len(fx.refused) != 2 || fx.refused[0].Svc != "../../victim" || fx.refused[0].From != "n2" || fx.refused[1].Node != "../evil" {
		t.Fatalf("refused %+v, want the config and the target's node, once each", fx.refused)
	}
	if tg := d.Core.Target("web"); !tg.Version.IsZero() {
		t.Fatalf("a target naming an invalid node was adopted: %+v", tg)
	}
	if len(data.Configs) != 1 {
		t.Fatal("the peer's data was changed in place")
	}
}

// A Ready is carried out in order; a state written at once releases what
// waited for it in the same pass (Ready.Append: the actions the write
// holds run before the next input).
func TestApplyOrderWriteThrough(t *testing.T) {
	fx := &fakeFx{}
	d, _ := newDriver(t, fx)
	fx.log = nil
	var got []node.Answer
	d.ServiceAction(Request{Service: "web", Action: "stop", Local: true}, func(a node.Answer) { got = append(got, a) })
	log := strings.Join(fx.log, "\n")
	want := "save 2\norder stop web\nevent instance_frozen\nevent instance_monitor\nevent action_begin\nrun stop web"
	if log != want {
		t.Fatalf("carried out:\n%s\nwant:\n%s", log, want)
	}
	if len(got) != 0 {
		t.Fatalf("answered before the stop ended: %+v", got)
	}
	d.ActionDone("web", "stop", nil)
	// the check that ends the action
	d.Core.Step(node.Checked{Check: fx.checks[len(fx.checks)-1], Resources: map[string]dataset.Resource{"app#main": {Status: dataset.StatusDown}}, Now: d.Now()})
	d.Apply()
	if len(got) != 1 || got[0].Err != nil || got[0].Result != "stopped and frozen" {
		t.Fatalf("answer %+v", got)
	}
}

// On a slow disk the answer and the action wait for the write; a failed
// write rolls the change back and fails the answer.
func TestApplySlowDisk(t *testing.T) {
	fx := &fakeFx{slow: true}
	d, _ := newDriver(t, fx)
	d.Persisted(fx.saved[len(fx.saved)-1], nil)
	fx.log = nil
	var got []node.Answer
	d.ServiceAction(Request{Service: "web", Action: "freeze", Local: true}, func(a node.Answer) { got = append(got, a) })
	if len(got) != 0 || !d.Core.Frozen("web") {
		t.Fatalf("answered %+v before the freeze was written", got)
	}
	if d.MayStep() || d.Pass() {
		t.Fatal("a decision pass or a publish while a state is pending")
	}
	d.Persisted(fx.saved[len(fx.saved)-1], fmt.Errorf("disk full"))
	if len(got) != 1 || got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "disk full") || d.Core.Frozen("web") {
		t.Fatalf("after a failed write: %+v, frozen %v", got, d.Core.Frozen("web"))
	}
}

// Admin routing: flags that do not go together are a bad request; a
// --wait with a time arms the wake-up at its deadline.
func TestServiceActionRouting(t *testing.T) {
	fx := &fakeFx{}
	d, clk := newDriver(t, fx)
	var got node.Answer
	d.ServiceAction(Request{Service: "web", Action: "stop", Force: true}, func(a node.Answer) { got = a })
	if !got.Bad || got.Err == nil {
		t.Fatalf("stop --force: %+v, want a bad request", got)
	}
	fx.wakes = nil
	d.ServiceAction(Request{Service: "web", Action: "start", Wait: true, WaitTimeout: time.Minute, Nodes: []string{"n1", "n2"}}, func(a node.Answer) { got = a })
	if len(fx.wakes) == 0 || !fx.wakes[0].Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("wake-ups %v, want the deadline %v", fx.wakes, clk.Now().Add(time.Minute))
	}
}

// The answer of a target action says whether the service was frozen
// before it (the CLI prints it without a status call of its own).
func TestAnswerSaysWasFrozen(t *testing.T) {
	d, _ := newDriver(t, &fakeFx{})
	var got node.Answer
	req := Request{Service: "web", Action: "start", Nodes: []string{"n1", "n2"}}
	d.ServiceAction(req, func(a node.Answer) { got = a })
	if got.Err != nil || got.WasFrozen != node.WasThawed {
		t.Fatalf("start of a thawed service: %+v", got)
	}
	d.ServiceAction(Request{Service: "web", Action: "abort"}, func(node.Answer) {})
	d.ServiceAction(Request{Service: "web", Action: "freeze", Local: true}, func(node.Answer) {})
	d.ServiceAction(req, func(a node.Answer) { got = a })
	if got.Err != nil || got.WasFrozen != node.WasFrozen {
		t.Fatalf("start of a frozen service: %+v", got)
	}
}

// Every input reaches the core through Step as a value: a run's inputs,
// traced, replayed on a new core give the same durable state and the same
// Readies (events, answers, actions, checks, wake-ups, states to write),
// taken at the same points; and a replay notices any kind of input left
// out of the trace.
func TestTracedInputsReplay(t *testing.T) {
	d, rec, cfg := tracedRun(false)
	replay, out := rec.Replay(cfg, node.State{})
	if got, want := string(must(json.Marshal(replay.State()))), string(must(json.Marshal(d.Core.State()))); got != want {
		t.Fatalf("replayed state:\n%s\nwant:\n%s", got, want)
	}
	out, want := append(out, queries(replay)...), append(rec.Out(), queries(d.Core)...)
	if got, want := strings.Join(out, "\n"), strings.Join(want, "\n"); got != want {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}
	kinds := map[string]bool{}
	for _, in := range rec.Inputs() {
		kinds[fmt.Sprintf("%T", in)] = true
	}
	if len(kinds) < 15 {
		t.Fatalf("traced %d kinds of input: %v", len(kinds), kinds)
	}
	for kind := range kinds {
		c, out := rec.Without(func(in node.Input) bool { return fmt.Sprintf("%T", in) == kind }).Replay(cfg, node.State{})
		if slices.Equal(append(out, queries(c)...), want) {
			t.Errorf("a replay without its %s inputs does the same: the comparison misses them", kind)
		}
	}
}

// tracedRun is a run of a driver and its core with every kind of input,
// recorded; with quorum, the cluster has the quorum rule, an arbitrator,
// the split_action stop and the guard.
func tracedRun(quorum bool) (*Driver, *Recording, node.Config) {
	fx := &fakeFx{}
	clk := clock.NewFake(t0)
	nc := &config.NodeConfig{Name: "n1", ReadyPeriod: 2 * time.Second, HB: config.HBConfig{Timeout: 3 * time.Second, Interval: time.Second}}
	cl := &config.ClusterConfig{Name: "c", Nodes: []config.Member{{Name: "n1"}, {Name: "n2"}}}
	if quorum {
		cl.Quorum, cl.Arbitrators = true, []config.Arbitrator{{Name: "w", URI: "http://w", Weight: 1, Timeout: time.Second}}
		nc.SplitAction, nc.Guard, nc.GuardLease = node.SplitStop, true, 10*time.Second
	}
	cfg := CoreConfig(nc, cl, 1, nil, nil)
	d := New(node.New(cfg, node.State{}), fx, clk)
	rec := &Recording{}
	rec.Record(d)
	// the shell's own inputs are inputs too: the instance of a config,
	// the node frozen by the daemon's decision, its monitor, the state
	// it wrote itself, a config file read at start-up
	d.Input(node.InstanceInstalled{Service: "web", Spec: node.InstanceSpec{Local: true, Runnable: true}, Now: t0})
	d.Input(node.InstanceInstalled{Service: "db", Spec: node.InstanceSpec{Local: true, Runnable: true}, Now: t0})
	d.Input(node.LocalFileRead{Service: "web", Raw: []byte("[service]\n")})
	d.Input(node.IdentityRecorded{Cluster: &node.ClusterIdentity{Name: "c"}})
	d.Input(node.IncarnationRecorded{Incarnation: 7})
	d.Input(node.ServiceKept{Service: "bad"})
	d.Input(node.ServiceKept{Service: "gone"})
	d.Input(node.ServiceForgotten{Service: "gone"})
	d.Input(node.Durable{})
	// the first write fails: the core rolls back to what the file holds
	fx.slow = true
	d.Step(node.FrozenSet{Service: "web", Frozen: true, Reason: "test"})
	d.Persisted(1, errors.New("test: disk full"))
	fx.slow = false
	d.Start()
	d.Step(node.NodeFrozenSet{Frozen: true, Reason: "test: the daemon's own freeze"})
	d.Step(node.NodeFrozenSet{Frozen: false})
	d.Step(node.FrozenSet{Service: "db", Frozen: true, Reason: "test"})
	d.RunAction("db", "start", "test: the shell's own start", nil)
	d.ActionDone("db", "start", nil)
	d.Input(node.InstanceRemoved{Service: "db"})
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Up, Node: "n2"})
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: peerData("n2")})
	d.Pass()
	clk.Advance(time.Second)
	d.Tick()
	d.Step(node.NodeFrozenSet{Frozen: false, Reason: "test: thawed"})
	d.ServiceAction(Request{Service: "web", Action: "start", Nodes: []string{"n1", "n2"}}, func(node.Answer) {})
	d.Pass()
	clk.Advance(5 * time.Second)
	d.Tick()
	d.Pass()
	// a write that fails: the core rolls back to what the file holds
	fx.slow = true
	d.ServiceAction(Request{Service: "web", Action: "freeze", Local: true}, func(node.Answer) {})
	d.Persisted(fx.saved[len(fx.saved)-1], errors.New("test: disk full"))
	fx.slow = false
	clk.Advance(time.Second)
	d.Tick()
	d.Pass()

	return d, rec, cfg
}

// The exported methods of Core but Step and Ready are queries: called
// between every input and every Ready of a replay, with the arguments the
// run knows (its services, nodes, times), they change nothing: the replay
// takes the same Readies, ends in the same state, answers the same.
func TestQueriesChangeNothing(t *testing.T) {
	for _, quorum := range []bool{false, true} {
		t.Run(fmt.Sprintf("quorum=%v", quorum), func(t *testing.T) { queriesChangeNothing(t, quorum) })
	}
}

func queriesChangeNothing(t *testing.T, quorum bool) {
	_, rec, cfg := tracedRun(quorum)
	plain, want := rec.Replay(cfg, node.State{})
	called := map[string]int{}
	asked, out := rec.replay(cfg, node.State{}, func(c *node.Core) { callQueries(c, called) })
	if diff := coreDiff(asked, plain); len(diff) > 0 {
		t.Fatalf("the queries changed the core: fields %v differ", diff)
	}
	if got, want := string(must(json.Marshal(asked.State()))), string(must(json.Marshal(plain.State()))); got != want {
		t.Fatalf("state after the queries:\n%s\nwant:\n%s", got, want)
	}
	out, want = append(out, queries(asked)...), append(want, queries(plain)...)
	if got, want := strings.Join(out, "\n"), strings.Join(want, "\n"); got != want {
		t.Fatalf("with the queries called:\n%s\nwant:\n%s", got, want)
	}
	if n := reflect.TypeFor[*node.Core]().NumMethod() - 2; len(called) != n {
		t.Fatalf("called %d queries, want %d: %v", len(called), n, called)
	}
}

// coreDiff names the fields of the core (unexported too) whose values
// differ between a and b, compared deeply.
func coreDiff(a, b *node.Core) []string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var diff []string
	for i := range va.NumField() {
		fa, fb := va.Field(i), vb.Field(i)
		ia := reflect.NewAt(fa.Type(), unsafe.Pointer(fa.UnsafeAddr())).Elem().Interface()
		ib := reflect.NewAt(fb.Type(), unsafe.Pointer(fb.UnsafeAddr())).Elem().Interface()
		if !reflect.DeepEqual(ia, ib) {
			diff = append(diff, va.Type().Field(i).Name)
		}
	}
	return diff
}

// callQueries calls every exported method of c but Step and Ready, with
// each of a few arguments of its types, and counts the calls by name.
func callQueries(c *node.Core, called map[string]int) {
	cands := map[reflect.Type][]reflect.Value{
		reflect.TypeFor[string]():        {reflect.ValueOf("web"), reflect.ValueOf("db"), reflect.ValueOf("n2"), reflect.ValueOf("")},
		reflect.TypeFor[time.Time]():     {reflect.ValueOf(t0), reflect.ValueOf(t0.Add(10 * time.Second)), reflect.ValueOf(t0.Add(time.Hour))},
		reflect.TypeFor[time.Duration](): {reflect.ValueOf(time.Second)},
		reflect.TypeFor[dataset.Node]():  {reflect.ValueOf(dataset.Node{Name: "n1"})},
		// GuardLease's acknowledgements of the peers
		reflect.TypeFor[func(string) (time.Time, bool)](): {reflect.ValueOf(func(string) (time.Time, bool) { return t0, true })},
	}
	v := reflect.ValueOf(c)
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		if m.Name == "Step" || m.Name == "Ready" {
			continue
		}
		mt := v.Method(i).Type()
		for k := range 4 {
			args := make([]reflect.Value, mt.NumIn())
			for j := range args {
				if cs := cands[mt.In(j)]; len(cs) > 0 {
					args[j] = cs[k%len(cs)]
				} else {
					args[j] = reflect.Zero(mt.In(j))
				}
			}
			v.Method(i).Call(args)
			called[m.Name]++
		}
	}
}

// queries prints what the queries of c answer (the instances, the peer,
// the node), for a replay to compare.
func queries(c *node.Core) []string {
	var out []string
	for _, svc := range []string{"web", "db"} {
		inst, ok := c.Instance(svc)
		out = append(out, fmt.Sprintf("instance %s %v %+v busy=%q", svc, ok, inst, c.Busy(svc)))
	}
	p, _ := c.Peer("n2")
	out = append(out, fmt.Sprintf("peer n2 %s", must(json.Marshal(p))), fmt.Sprintf("node %s frozen=%v seq=%d settled=%v failing=%v view=%v",
		c.NodeMonitor(), c.NodeFrozen(), c.PersistSeq(), c.Settled(), c.PersistFailing(), c.ViewChanged()))
	return out
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A check whose result did not change writes nothing: no state, no event
// (no log line), no publish, for full and monitored checks alike; a
// changed result does all three.
func TestUnchangedCheckWritesNothing(t *testing.T) {
	fx := &fakeFx{}
	d, clk := newDriver(t, fx)
	up := map[string]dataset.Resource{"app#main": {Status: dataset.StatusUp, Monitor: true, Log: "pid 42"}}
	check := func(full bool, res map[string]dataset.Resource) {
		t.Helper()
		clk.Advance(time.Second)
		n := len(fx.checks)
		d.CheckNow("web")
		if len(fx.checks) != n+1 {
			t.Fatalf("no check ordered:\n%s", strings.Join(fx.log, "\n"))
		}
		ck := fx.checks[n] // as the core ordered it (its generation)
		ck.Full = full
		fx.log = nil
		d.CheckDone(ck, res)
		d.Pass()
	}
	check(true, up) // the first result: up
	for i := 0; i < 5; i++ {
		check(i%2 == 0, up)
		if len(fx.log) != 0 {
			t.Fatalf("unchanged check %d carried out:\n%s\nwant nothing", i, strings.Join(fx.log, "\n"))
		}
	}
	check(false, map[string]dataset.Resource{"app#main": {Status: dataset.StatusDown, Monitor: true}})
	log := strings.Join(fx.log, "\n")
	for _, want := range []string{"event resource_status", "publish"} {
		if !strings.Contains(log, want) {
			t.Fatalf("changed check carried out:\n%s\nwant %q", log, want)
		}
	}
}

// The loop's cost of one check whose result did not change: the order,
// the result into the core, the decision pass rule (docs/benchmarks.md,
// "Cost of a check").
func BenchmarkUnchangedCheck(b *testing.B) {
	fx := &fakeFx{}
	d, clk := newDriver(b, fx)
	up := map[string]dataset.Resource{"app#main": {Status: dataset.StatusUp, Monitor: true, Log: "pid 42"}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		clk.Advance(time.Second)
		d.CheckNow("web")
		ck := fx.checks[len(fx.checks)-1]
		fx.checks, fx.log = fx.checks[:0], fx.log[:0]
		d.CheckDone(ck, up)
		d.Pass()
	}
}

// A wake-up that is due but not taken yet (its timer fired while the loop
// took another input) is not replaced by a later one: the ready window it
// ends would otherwise wait for the later wake-up or the next tick (seen
// in the simulation: a takeover's start 2 s late, when a one-vote
// arbitrator's answer came at the instant its window ended).
func TestArmWakeKeepsADueWake(t *testing.T) {
	fx := &fakeFx{}
	d, clk := newDriver(t, fx)
	at := clk.Now().Add(2 * time.Second)
	d.armWake(at)
	clk.Advance(2 * time.Second) // due; Wake not called yet
	d.armWake(at.Add(5 * time.Second))
	if got := d.WakeAt(); !got.Equal(at) {
		t.Fatalf("wake at %s, want the due one at %s kept", got.Sub(t0), at.Sub(t0))
	}
	d.Wake()
	d.armWake(at.Add(5 * time.Second))
	if got := d.WakeAt(); !got.Equal(at.Add(5 * time.Second)) {
		t.Fatalf("after the wake-up: wake at %s, want %s", got.Sub(t0), at.Add(5*time.Second).Sub(t0))
	}
}

// Passes counts the decision passes the loop's rule ran: one after a
// change of the local dataset, none while nothing changed, none once the
// node is stopping.
func TestPassesCountsTheDecisionPasses(t *testing.T) {
	fx := &fakeFx{}
	d, clk := newDriver(t, fx)
	d.Pass()
	p0 := d.Passes()
	for range 3 {
		d.Pass()
	}
	if d.Passes() != p0 {
		t.Fatalf("%d passes with nothing changed", d.Passes()-p0)
	}
	d.NodeAction("freeze", func(node.Answer) {})
	d.Pass()
	if d.Passes() != p0+1 {
		t.Fatalf("%d passes after a freeze, want 1", d.Passes()-p0)
	}
	clk.Advance(time.Second)
	d.BeginStop("stop")
	d.Changed()
	d.Pass()
	if d.Passes() != p0+1 {
		t.Fatalf("%d passes once stopping, want none", d.Passes()-p0-1)
	}
}

// Quiet holds once the node acted on all it knows: not in rejoin (a rule
// of the tick watches the clock), nor after a change of its dataset or of
// its view before the pass, nor while a state write is pending, nor while
// a wake-up is armed.
func TestQuietOnceAllIsDecided(t *testing.T) {
	fx := &fakeFx{}
	d, clk := newDriver(t, fx)
	d.Pass()
	if d.Quiet() {
		t.Fatal("quiet in rejoin (its grace ends on a tick)")
	}
	clk.Advance(90 * time.Second) // the rejoin grace
	d.Tick()
	d.Pass()
	if !d.Quiet() {
		t.Fatalf("not quiet after the rejoin and a pass with nothing since (monitor %s)", d.Core.NodeMonitor())
	}
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Up, Node: "n2"})
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: peerData("n2")})
	if d.Quiet() {
		t.Fatal("quiet with a peer's data not yet decided upon")
	}
	d.Pass()
	if !d.Quiet() {
		t.Fatal("not quiet after the pass over the peer's data")
	}
	fx.slow = true
	act := "freeze"
	if d.Core.NodeFrozen() { // by the rejoin rule: no peer heard in its grace
		act = "thaw"
	}
	d.NodeAction(act, func(node.Answer) {})
	if d.Quiet() {
		t.Fatalf("quiet with a %s not yet decided upon", act)
	}
	d.Pass()
	if d.Quiet() {
		t.Fatalf("quiet while the %s's state write is pending", act)
	}
	fx.slow = false
	d.Persisted(fx.saved[len(fx.saved)-1], nil)
	d.Pass()
	if !d.Quiet() {
		t.Fatalf("not quiet once the %s is written and decided upon", act)
	}
	d.armWake(clk.Now().Add(time.Second))
	if d.Quiet() {
		t.Fatal("quiet with a wake-up armed")
	}
	clk.Advance(time.Second)
	d.Wake()
	d.Pass()
	if !d.Quiet() {
		t.Fatal("not quiet after the wake-up's pass")
	}
}

// Checks counts the status checks that ended.
func TestChecksCountsTheEndedChecks(t *testing.T) {
	fx := &fakeFx{}
	d, _ := newDriver(t, fx)
	c0 := d.Checks()
	d.CheckNow("web")
	if len(fx.checks) == 0 {
		t.Fatal("no check ordered")
	}
	if d.Checks() != c0 {
		t.Fatal("a check counted when ordered")
	}
	d.CheckDone(fx.checks[len(fx.checks)-1], map[string]dataset.Resource{})
	if d.Checks() != c0+1 {
		t.Fatalf("%d checks counted after one ended", d.Checks()-c0)
	}
}
