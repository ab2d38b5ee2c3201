package node

import (
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node/instsm"
	"haven/quorum"
)

// fastNode is a core of n1 n2 n3 with web (nodes order, ha) down and
// checked, node.ready_fast_ack as given, that heard every member at t0 and
// then lost n1 (the owner crashed): n2 leads.
func fastNode(t *testing.T, name string, fastAck bool) *Core {
	t.Helper()
	cfg := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3"}, Orchestrate: "ha", Placement: "nodes order", Priority: 100}
	db := &config.ServiceConfig{Name: "db", Nodes: []string{"n2", "n3"}, Orchestrate: "no", Placement: "nodes order", Priority: 100}
	l := &maLocal{name: name, svcs: map[string]*config.ServiceConfig{"web": cfg, "db": db}}
	c := New(Config{Name: name, ClusterNodes: []string{"n1", "n2", "n3"}, Compat: 1, ReadyPeriod: 16 * time.Second, ReadyFastAck: fastAck,
		RejoinGrace: time.Minute, MaintenanceGrace: time.Minute, CheckInterval: time.Hour, MonitorInterval: time.Hour, Local: l, WriteThrough: true}, State{})
	l.core = c
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.addInstance("db", instsm.Spec{Local: name != "n1", Runnable: name != "n1"}, t0) // not orchestrated
	c.start(t0)
	c.checkNow("web")
	rd := c.Ready()
	for _, ck := range rd.Check {
		c.checkDone(ck, map[string]dataset.Resource{"app#main": {Status: dataset.StatusDown}}, t0)
	}
	for _, p := range c.PeerNames() {
		maHear(c, maPeer(p, false, false), t0)
	}
	c.heartbeat(PeerEvent{Node: "n1", Kind: PeerDown}, t0)
	c.Ready()
	return c
}

// send gives to the dataset from publishes (the heartbeat's delta).
func send(from, to *Core, now time.Time) {
	d := from.Dataset(dataset.Node{Name: from.name(), Monitor: dataset.NodeIdle, Compat: 1, Services: map[string]dataset.Instance{}})
	to.heartbeat(PeerEvent{Node: from.name(), Kind: PeerData, Data: &d}, now)
}

// The owner crashed: n2 claims, n3 acks in its dataset (one publish), n2
// starts at once on the ack; n3 publishes nothing more while nothing
// changes (the idle cost stays flat).
func TestFastAckCoreStartsOnTheAck(t *testing.T) {
	n2, n3 := fastNode(t, "n2", true), fastNode(t, "n3", true)
	t1 := t0.Add(time.Second)
	rd := maPass(n2, t1)
	if got := n2.insts["web"].Mon.State; got != dataset.Ready || !rd.Publish {
		t.Fatalf("n2: got %q publish %v, want ready, published", got, rd.Publish)
	}
	send(n2, n3, t1)
	rd = maPass(n3, t1)
	want := dataset.ClaimID("n2", t1)
	if got := n3.insts["web"].Fa.Ack; got != want || !rd.Publish {
		t.Fatalf("n3: got ack %q publish %v, want %q published", got, rd.Publish, want)
	}
	if rd = maPass(n3, t1.Add(10*time.Millisecond)); rd.Publish {
		t.Errorf("n3: a second pass with nothing new publishes")
	}
	send(n3, n2, t1.Add(20*time.Millisecond))
	rd = maPass(n2, t1.Add(20*time.Millisecond))
	if len(rd.Run) != 1 || rd.Run[0].Kind != "start" || !strings.Contains(rd.Run[0].Reason, "fast ack") {
		t.Fatalf("n2 acked: got run %+v, want a start on the ack", rd.Run)
	}
}

// Fast ack off on the peer: no ack, no publish; the claimer waits the
// whole window.
func TestFastAckCoreOffNoAck(t *testing.T) {
	n2, n3 := fastNode(t, "n2", true), fastNode(t, "n3", false)
	t1 := t0.Add(time.Second)
	maPass(n2, t1)
	send(n2, n3, t1)
	if rd := maPass(n3, t1); n3.insts["web"].Fa.Ack != "" || rd.Publish {
		t.Fatalf("n3 without fast ack: got ack %q publish %v", n3.insts["web"].Fa.Ack, rd.Publish)
	}
	send(n3, n2, t1)
	if rd := maPass(n2, t1.Add(time.Second)); len(rd.Run) != 0 {
		t.Fatalf("n2 without an ack: got run %+v before the window ends", rd.Run)
	}
	if rd := maPass(n2, t1.Add(16*time.Second)); len(rd.Run) != 1 || !strings.Contains(rd.Run[0].Reason, "ready period ended") {
		t.Fatalf("n2 at the window's end: got run %+v", rd.Run)
	}
}

// Two claims of one instance at the same instant never share an id: the
// second begins a nanosecond later.
func TestFastAckClaimIDsAreNew(t *testing.T) {
	n2 := fastNode(t, "n2", true)
	t1 := t0.Add(time.Second)
	maPass(n2, t1)
	first := n2.insts["web"].Mon.StateSince
	// n1 comes back (better ranked, idle): n2 backs off; n1 down again:
	// n2 claims again, all at t1
	maHear(n2, maPeer("n1", false, false), t1)
	maPass(n2, t1)
	if got := n2.insts["web"].Mon.State; got != dataset.Idle {
		t.Fatalf("n2 with n1 back: got %q, want idle", got)
	}
	n2.heartbeat(PeerEvent{Node: "n1", Kind: PeerDown}, t1)
	maPass(n2, t1)
	if got := n2.insts["web"].Mon; got.State != dataset.Ready || !got.StateSince.After(first) {
		t.Fatalf("n2 claims again at t1: got %q since %v, want ready after %v", got.State, got.StateSince, first)
	}
}

// Quorum on: fast ack only while the node's side holds the quorum.
func TestFastAckNeedsTheQuorum(t *testing.T) {
	c, _ := qcore(t, "n1", []string{"n1", "n2", "n3"}, nil, SplitStop)
	c.cfg.ReadyFastAck = true
	if !c.fastAck(t0) {
		t.Fatalf("every member live: fast ack off")
	}
	lose(c, "n2", t0.Add(3*time.Second))
	c.Ready()
	if !c.fastAck(t0.Add(3 * time.Second)) {
		t.Fatalf("2 of 3 live: fast ack off")
	}
	lose(c, "n3", t0.Add(3*time.Second))
	c.Ready()
	if c.fastAck(t0.Add(3 * time.Second)) {
		t.Fatalf("quorum lost: fast ack on")
	}

	// 2 nodes and an arbitrator: after a loss, only once the arbitrator
	// answered the vote
	arb := []quorum.Arbitrator{{Name: "a", Weight: 1}}
	c, _ = qcore(t, "n1", []string{"n1", "n2"}, arb, SplitStop)
	c.cfg.ReadyFastAck = true
	if !c.fastAck(t0) {
		t.Fatalf("2 nodes live: fast ack off")
	}
	at := t0.Add(3 * time.Second)
	lose(c, "n2", at)
	rd := c.Ready()
	if c.fastAck(at) {
		t.Fatalf("vote pending: fast ack on")
	}
	for _, p := range rd.Probes {
		c.arbitratorResult(p.Name, true, "200 OK", p.Sent, at.Add(100*time.Millisecond))
	}
	c.Ready()
	if !c.fastAck(at.Add(100 * time.Millisecond)) {
		t.Fatalf("vote won with the arbitrator: fast ack off")
	}
}

// The ack alone (nothing else of n3's instance of web changed, another
// service changed in the same delta) reaches the claimer's incremental
// pass: the pass that follows the heartbeat decides web again and starts
// it.
func TestFastAckCoreIncrementalPass(t *testing.T) {
	n2, n3 := fastNode(t, "n2", true), fastNode(t, "n3", true)
	t1 := t0.Add(time.Second)
	send(n3, n2, t1)                       // n3 as it is before the claim: no ack
	maPass(n2, t1)                         // the claim
	maPass(n2, t1.Add(5*time.Millisecond)) // the pass after a change of its own dataset: the incremental base
	send(n2, n3, t1)
	maPass(n3, t1)
	n3.setFrozen("db", true, "admin freeze")  // db changes in the same delta
	send(n3, n2, t1.Add(20*time.Millisecond)) // of web, only the ack is new
	n2.passView(t1.Add(20 * time.Millisecond))
	rd := n2.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "start" || !strings.Contains(rd.Run[0].Reason, "fast ack") {
		t.Fatalf("n2 after the ack, incremental pass: got run %+v, want a start on the ack", rd.Run)
	}
}
