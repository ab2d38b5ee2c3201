package heartbeat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/clock"
)

const testSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func memberList(n int) []config.Member {
	out := make([]config.Member, n)
	for i := range out {
		out[i] = config.Member{Name: fmt.Sprintf("n%02d", i+1), Addr: fmt.Sprintf("10.0.0.%d:10000", i+1)}
	}
	return out
}

// memCluster is an in-memory cluster under test; every node keeps the last
// Data it saw of every peer.
type memCluster struct {
	t       *testing.T
	clk     *clock.Fake
	net     *MemNetwork
	members []config.Member
	hb      map[string]Heartbeat
	seen    map[string]map[string]*dataset.Node // observer -> peer -> last data
	evs     map[string][]Event                  // observer -> events since the last take
	// timeout and interval are the nodes' hb settings (zero: 15s, 5s).
	timeout, interval time.Duration
}

// newMemClusterHB is newMemCluster with the hb settings timeout/interval.
func newMemClusterHB(t *testing.T, n int, timeout, interval time.Duration) *memCluster {
	c := &memCluster{t: t, clk: clock.NewFake(t0), members: memberList(n), timeout: timeout, interval: interval,
		hb: map[string]Heartbeat{}, seen: map[string]map[string]*dataset.Node{}, evs: map[string][]Event{}}
	c.net = NewMemNetwork(c.clk)
	for _, m := range c.members {
		c.join(m.Name, testSecret, "prod")
	}
	return c
}

func newMemCluster(t *testing.T, n int) *memCluster {
	c := &memCluster{t: t, clk: clock.NewFake(t0), members: memberList(n),
		hb: map[string]Heartbeat{}, seen: map[string]map[string]*dataset.Node{}, evs: map[string][]Event{}}
	c.net = NewMemNetwork(c.clk)
	for _, m := range c.members {
		c.join(m.Name, testSecret, "prod")
	}
	return c
}

func (c *memCluster) cfg(name, secret, cluster string) Config {
	cfg := Config{Node: name, Members: c.members, ClusterName: cluster, Secret: secret,
		Timeout: 15 * time.Second, Interval: 5 * time.Second}
	if c.timeout > 0 {
		cfg.Timeout, cfg.Interval = c.timeout, c.interval
	}
	return cfg
}

func (c *memCluster) join(name, secret, cluster string) {
	h, err := c.net.Join(c.cfg(name, secret, cluster))
	if err != nil {
		c.t.Fatal(err)
	}
	c.hb[name] = h
	c.seen[name] = map[string]*dataset.Node{}
}

// collect drains every node's Events channel.
func (c *memCluster) collect() {
	for name, h := range c.hb {
		for {
			select {
			case ev, ok := <-h.Events():
				if !ok {
					goto next
				}
				c.evs[name] = append(c.evs[name], ev)
				if ev.Kind == Data {
					c.seen[name][ev.Node] = ev.Data
				}
				continue
			default:
			}
			break
		}
	next:
	}
}

// take returns and forgets the events of observer of the given kind about node.
func (c *memCluster) take(observer string, kind Kind, node string) int {
	c.collect()
	n := 0
	for _, ev := range c.evs[observer] {
		if ev.Kind == kind && ev.Node == node {
			n++
		}
	}
	c.evs[observer] = nil
	return n
}

func (c *memCluster) publish(name string, n dataset.Node) {
	n.Name = name
	c.hb[name].Publish(n)
	c.collect()
}

// converged reports whether every observer holds want's data for its node.
func (c *memCluster) converged(want map[string]dataset.Node, observers ...string) error {
	c.collect()
	for _, o := range observers {
		for node, w := range want {
			if node == o {
				continue
			}
			if got := c.seen[o][node]; got == nil || !sameData(got, &w) {
				return fmt.Errorf("%s does not hold the data of %s: got %+v, want %+v", o, node, got, w)
			}
		}
	}
	return nil
}

func svcNode(name string, gen uint64, svcs ...string) dataset.Node {
	n := dataset.Node{Name: name, Monitor: dataset.NodeIdle, Compat: 1, Labels: map[string]string{},
		Services: map[string]dataset.Instance{}, Gen: gen}
	for _, s := range svcs {
		n.Services[s] = dataset.Instance{Avail: dataset.StatusUp, Overall: dataset.StatusUp,
			Resources: map[string]dataset.Resource{}}
	}
	return n
}

func testConverge(t *testing.T, size int) {
	c := newMemCluster(t, size)
	want := map[string]dataset.Node{}
	names := []string{}
	for _, m := range c.members {
		names = append(names, m.Name)
		want[m.Name] = svcNode(m.Name, 1, "web", "db-"+m.Name)
		c.publish(m.Name, want[m.Name])
	}
	// The first beats make every peer up and exchange full copies at once.
	if err := c.converged(want, names...); err != nil {
		t.Fatalf("after the first publications: %v", err)
	}
	for _, h := range c.hb {
		for _, p := range h.Peers() {
			if !p.Up {
				t.Fatalf("peer %s not up", p.Name)
			}
		}
	}
	// A change travels as a delta, at once.
	n1 := names[0]
	before := c.hb[n1].Stats()
	w := svcNode(n1, 2, "web", "db-"+n1, "new")
	w.Monitor = dataset.NodeMaintenance
	want[n1] = w
	c.publish(n1, w)
	if err := c.converged(want, names...); err != nil {
		t.Fatalf("after a delta: %v", err)
	}
	after := c.hb[n1].Stats()
	if d := after.DeltasSent - before.DeltasSent; d != uint64(size-1) || after.FullsSent != before.FullsSent {
		t.Errorf("change sent as %d deltas and %d fulls, want %d deltas", d, after.FullsSent-before.FullsSent, size-1)
	}
	// Quiet for a long time: nobody goes down, data stays.
	c.net.Advance(2 * time.Minute)
	for _, o := range names {
		if n := c.take(o, Down, ""); n != 0 {
			t.Errorf("%s saw %d down events", o, n)
		}
		for _, ev := range c.evs[o] {
			if ev.Kind == Down {
				t.Errorf("%s saw %s down", o, ev.Node)
			}
		}
	}
	if err := c.converged(want, names...); err != nil {
		t.Fatal(err)
	}
}

// TestMemProbeKeepsALossyPeerUp: every regular beat of n01 to n02 is lost,
// but n02's probes (sent once n01 was silent for a beat and a half) and
// n01's answers get through: n01 stays up in n02's view for a minute (it
// was declared down after hb.timeout before the probes: the chaos suite's
// LossyNetwork saw that at 20 % loss). Once everything is lost, n01 is
// still declared down after exactly hb.timeout of silence.
func TestMemProbeKeepsALossyPeerUp(t *testing.T) {
	c := newMemCluster(t, 2)
	want := map[string]dataset.Node{}
	for _, m := range c.members {
		want[m.Name] = svcNode(m.Name, 1, "a")
		c.publish(m.Name, want[m.Name])
	}
	if err := c.converged(want, "n01", "n02"); err != nil {
		t.Fatal(err)
	}
	answer := false // a probe of n02 reached n01: its next frame to n02 passes
	c.net.Lose(func(from, to string, b []byte) bool {
		m, err := decode(b)
		switch {
		case err != nil:
			return false
		case from == "n02" && m.Probe:
			answer = true
			return false
		case from == "n01" && answer:
			answer = false
			return false
		}
		return from == "n01"
	})
	c.take("n02", Down, "n01")
	c.net.Advance(time.Minute)
	if n := c.take("n02", Down, "n01"); n != 0 {
		t.Fatalf("n02 declared n01 down %d times while its probes were answered", n)
	}
	s1, s2 := c.hb["n01"].Stats(), c.hb["n02"].Stats()
	if s2.ProbesSent == 0 || s1.ProbesAnswered == 0 || s1.ProbesSent != 0 {
		t.Fatalf("probes: n02 sent %d, n01 answered %d and sent %d", s2.ProbesSent, s1.ProbesAnswered, s1.ProbesSent)
	}
	// Everything lost: down after hb.timeout (15s) of silence, no sooner.
	c.net.Lose(func(from, to string, b []byte) bool { return from == "n01" })
	c.net.Advance(14 * time.Second)
	if n := c.take("n02", Down, "n01"); n != 0 {
		t.Fatal("n01 declared down before hb.timeout")
	}
	c.net.Advance(time.Second)
	if n := c.take("n02", Down, "n01"); n != 1 {
		t.Fatalf("n01 not declared down after hb.timeout of silence (%d events)", n)
	}
}

func TestMemConverge3(t *testing.T)  { testConverge(t, 3) }
func TestMemConverge16(t *testing.T) { testConverge(t, 16) }

// TestMemDeltaLoss: a lost delta is repaired within two gapWait (100ms
// here): the beat that trails every Publish shows the new generation, and
// the gap asks for a full copy.
func TestMemDeltaLoss(t *testing.T) {
	c := newMemCluster(t, 3)
	want := map[string]dataset.Node{"n01": svcNode("n01", 1, "a")}
	c.publish("n01", want["n01"])
	if err := c.converged(want, "n02", "n03"); err != nil {
		t.Fatal(err)
	}
	c.net.Drop("n01", "n02", true)
	want["n01"] = svcNode("n01", 2, "a", "b")
	c.publish("n01", want["n01"])
	c.net.Drop("n01", "n02", false)
	if err := c.converged(want, "n03"); err != nil {
		t.Fatal(err)
	}
	if c.converged(want, "n02") == nil {
		t.Fatal("n02 got a dropped delta")
	}
	// n02 learns of the gap from n01's trailing beat, asks for a full copy.
	c.net.Advance(200 * time.Millisecond)
	if err := c.converged(want, "n02"); err != nil {
		t.Fatalf("not repaired within 2 gapWait: %v", err)
	}
	if st := c.hb["n02"].Stats(); st.NeedsSent != 1 {
		t.Fatalf("n02 sent %d requests, want 1", st.NeedsSent)
	}
	// The requests lost too (n02 -> n01 cut): they are repeated, and the
	// first one after the heal repairs, within needEvery.
	c.net.Drop("n01", "n02", true)
	want["n01"] = svcNode("n01", 3, "c")
	c.publish("n01", want["n01"])
	c.net.Drop("n01", "n02", false)
	c.net.Drop("n02", "n01", true)
	c.net.Advance(3 * time.Second)
	if c.converged(want, "n02") == nil {
		t.Fatal("n02 repaired through a cut link")
	}
	c.net.Drop("n02", "n01", false)
	c.net.Advance(time.Second)
	if err := c.converged(want, "n02"); err != nil {
		t.Fatalf("not repaired within needEvery of the heal: %v", err)
	}
}

// TestMemIdleTrafficFlat: when nothing changes, a node sends nothing but
// one small beat per peer per beat period: no full copies, and as many
// bytes with 500 services as with none.
func TestMemIdleTrafficFlat(t *testing.T) {
	idle := func(nsvc int) (Stats, Stats) {
		c := newMemCluster(t, 3)
		var svcs []string
		for i := range nsvc {
			svcs = append(svcs, fmt.Sprintf("svc%03d", i))
		}
		want := map[string]dataset.Node{}
		for _, m := range c.members {
			want[m.Name] = svcNode(m.Name, 1, svcs...)
			c.publish(m.Name, want[m.Name])
		}
		c.net.Advance(time.Second)
		if err := c.converged(want, "n01", "n02", "n03"); err != nil {
			t.Fatal(err)
		}
		before := c.hb["n01"].Stats()
		c.net.Advance(time.Minute)
		after := c.hb["n01"].Stats()
		return before, after
	}
	var bytes [2]uint64
	for i, nsvc := range []int{0, 500} {
		before, after := idle(nsvc)
		// 15s/5s: a beat every 5s (hb.interval; timeout/3) to each of 2 peers
		if f := after.FullsSent - before.FullsSent; f != 0 {
			t.Errorf("%d services: %d full copies sent in an idle minute, want 0", nsvc, f)
		}
		if n := after.Sent - before.Sent; n != 24 {
			t.Errorf("%d services: %d frames sent in an idle minute, want 24 beats", nsvc, n)
		}
		bytes[i] = after.BytesSent - before.BytesSent
		t.Logf("%d services: %d bytes sent in an idle minute", nsvc, bytes[i])
	}
	// the digest is a decimal number: a few digits either way
	if bytes[1] > bytes[0]+24*4 {
		t.Errorf("idle bytes grow with the services: %d with 0, %d with 500", bytes[0], bytes[1])
	}
}

// TestMemDigestMismatch: a copy that differs from its peer's data at the
// same generation (a bug, a corruption) is noticed from the digest of the
// next beat and replaced by a full copy.
func TestMemDigestMismatch(t *testing.T) {
	c := newMemCluster(t, 2)
	want := map[string]dataset.Node{"n01": svcNode("n01", 1, "a", "b")}
	c.publish("n01", want["n01"])
	c.publish("n02", svcNode("n02", 1))
	c.net.Advance(time.Second)
	if err := c.converged(want, "n02"); err != nil {
		t.Fatal(err)
	}
	// n02 applies a wrong delta to gen 2 (as a bug of diff or apply
	// would), while n01's real gen 2 is lost on the way.
	c.net.Drop("n01", "n02", true)
	want["n01"] = svcNode("n01", 2, "a", "b", "new")
	c.publish("n01", want["n01"])
	c.net.Drop("n01", "n02", false)
	n02 := c.hb["n02"].(*memHB).c
	wrong := svcNode("n01", 2, "a", "c")
	from := svcNode("n01", 1, "a", "b")
	n02.receive(encode(&message{Kind: kindDelta, From: "n01", Inc: c.hb["n01"].(*memHB).c.inc, Base: 1, Gen: 2,
		Delta: diff(&from, &wrong)}))
	p := n02.peers["n01"]
	if p.gen != 2 || !sameData(p.data, &wrong) {
		t.Fatalf("the wrong delta was not applied: gen %d", p.gen)
	}
	c.net.Advance(5 * time.Second)
	st := c.hb["n02"].Stats()
	if st.DigestMismatches != 1 || st.NeedsSent != 1 {
		t.Fatalf("stats %+v, want 1 digest mismatch and 1 request", st)
	}
	if w := want["n01"]; !sameData(p.data, &w) {
		t.Fatalf("copy not repaired: %+v", p.data)
	}
	if err := c.converged(want, "n02"); err != nil {
		t.Fatal(err)
	}
	c.net.Advance(time.Minute)
	if st := c.hb["n02"].Stats(); st.DigestMismatches != 1 || st.NeedsSent != 1 {
		t.Fatalf("stats %+v after the repair, want no more mismatches", st)
	}
}

// TestMemDownUp: down exactly at Timeout of silence, up again when heard.
func TestMemDownUp(t *testing.T) {
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c := newMemCluster(t, size)
			c.publish("n02", svcNode("n02", 1, "a"))
			c.net.Advance(7 * time.Second)
			c.net.Crash("n02")
			// beats every min(Interval, Timeout/3) = 5s: the last one
			// came at most a beat before the crash
			last := peerOf(t, c.hb["n01"], "n02").LastHeard
			if now := c.clk.Now(); now.Sub(last) > 5*time.Second {
				t.Fatalf("last heard %s, more than a beat before now %s", last, now)
			}
			c.take("n01", Down, "n02")
			c.net.Advance(last.Add(15*time.Second).Sub(c.clk.Now()) - time.Millisecond)
			if n := c.take("n01", Down, "n02"); n != 0 || !peerOf(t, c.hb["n01"], "n02").Up {
				t.Fatal("n02 declared down before Timeout")
			}
			c.net.Advance(time.Millisecond)
			if n := c.take("n01", Down, "n02"); n != 1 || peerOf(t, c.hb["n01"], "n02").Up {
				t.Fatalf("n02 not declared down at Timeout (%d events)", n)
			}
			// Restart: a new incarnation whose Gen starts over replaces the data.
			run := peerOf(t, c.hb["n01"], "n02").Run
			if run == 0 {
				t.Fatal("n02's run not shown (Peer.Run)")
			}
			c.join("n02", testSecret, "prod")
			if n := c.take("n01", Up, "n02"); n != 1 {
				t.Fatalf("restarted n02 not up at once (%d events)", n)
			}
			// the disk fences the run heard last (Peer.Run)
			if r := peerOf(t, c.hb["n01"], "n02").Run; r <= run {
				t.Fatalf("n02's run %d after its restart, want more than %d", r, run)
			}
			want := map[string]dataset.Node{"n02": svcNode("n02", 1, "b")}
			c.publish("n02", want["n02"])
			if err := c.converged(want, "n01"); err != nil {
				t.Fatal(err)
			}
			// A partition: both sides down at Timeout, up within a beat of the heal.
			c.net.Partition([]string{"n01"}, []string{"n02"})
			c.net.Advance(15 * time.Second)
			if c.take("n01", Down, "n02") != 1 || c.take("n02", Down, "n01") != 1 {
				t.Fatal("partition not detected at Timeout")
			}
			c.net.Heal()
			c.net.Advance(5 * time.Second)
			if c.take("n01", Up, "n02") != 1 || c.take("n02", Up, "n01") != 1 {
				t.Fatal("not up again after the heal")
			}
		})
	}
}

func peerOf(t *testing.T, h Heartbeat, name string) Peer {
	t.Helper()
	for _, p := range h.Peers() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no peer %s", name)
	return Peer{}
}

// TestMemForeign: a node with another secret or cluster name never joins.
func TestMemForeign(t *testing.T) {
	c := newMemCluster(t, 4)
	c.hb["n03"].Close()
	c.hb["n04"].Close()
	delete(c.hb, "n03")
	delete(c.hb, "n04")
	c.join("n03", "ff"+testSecret[2:], "prod")
	c.join("n04", testSecret, "other")
	c.net.Advance(time.Minute)
	for _, o := range []string{"n01", "n02"} {
		for _, p := range c.hb[o].Peers() {
			if p.Up != (p.Name == "n01" || p.Name == "n02") {
				t.Errorf("%s sees %s up=%v", o, p.Name, p.Up)
			}
		}
		if c.hb[o].Stats().Rejected == 0 {
			t.Errorf("%s rejected nothing", o)
		}
	}
	for _, o := range []string{"n03", "n04"} {
		for _, p := range c.hb[o].Peers() {
			if p.Up {
				t.Errorf("foreign %s sees %s up", o, p.Name)
			}
		}
	}
	c.collect()
	rejected := 0
	for _, ev := range c.evs["n01"] {
		if ev.Kind == Rejected {
			rejected++
		}
	}
	if rejected == 0 {
		t.Error("no Rejected event on n01")
	}
}

// TestMemCloseFlushes: the last Publish before Close reaches the peers.
func TestMemCloseFlushes(t *testing.T) {
	c := newMemCluster(t, 2)
	c.publish("n02", svcNode("n02", 1, "a"))
	last := svcNode("n02", 2, "a")
	last.Monitor = dataset.NodeMaintenance
	c.hb["n02"].Publish(last)
	c.hb["n02"].Close()
	if err := c.converged(map[string]dataset.Node{"n02": last}, "n01"); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-c.hb["n02"].Events(); ok {
		t.Error("events channel open after Close")
	}
}

// TestMemCloseAfterALostDelta: the last Publish before Close reaches a
// peer that lost the delta before it (a lost frame, or a peer that had not
// taken the full copy of this run yet): the delta of the last Publish is a
// gap there, and the full copy the peer would ask for comes too late, from
// a node that has closed. Close sends every live peer a full copy.
func TestMemCloseAfterALostDelta(t *testing.T) {
	c := newMemCluster(t, 2)
	c.publish("n02", svcNode("n02", 1, "a"))
	c.net.Drop("n02", "n01", true)
	c.hb["n02"].Publish(svcNode("n02", 2, "a", "b"))
	c.net.Flush()
	c.net.Drop("n02", "n01", false)
	last := svcNode("n02", 3, "a", "b")
	last.Monitor = dataset.NodeShutting
	c.hb["n02"].Publish(last)
	c.hb["n02"].Close()
	if err := c.converged(map[string]dataset.Node{"n02": last}, "n01"); err != nil {
		t.Fatalf("n01 missed n02's last data: %v", err)
	}
}

// TestMemHostileFrames: garbage and frames of non-members are counted and
// reported, never applied, never a panic.
func TestMemHostileFrames(t *testing.T) {
	c := newMemCluster(t, 2)
	core := c.hb["n01"].(*memHB).c
	for _, b := range []string{"", "garbage", `{"v":1,"k":"full","from":"n01","gen":1,"node":{"name":"n01","gen":1}}`,
		`{"v":1,"k":"beat","from":"intruder","gen":1}`, `{"v":1,"k":"delta","from":"n02","base":0,"gen":1}`} {
		core.receive([]byte(b))
	}
	if st := c.hb["n01"].Stats(); st.Rejected != 5 {
		t.Errorf("rejected %d frames, want 5", st.Rejected)
	}
	c.collect()
	n := 0
	for _, ev := range c.evs["n01"] {
		if ev.Kind == Rejected {
			n++
		}
	}
	if n == 0 || n > 5 {
		t.Errorf("%d Rejected events", n)
	}
}

// TestMemUpConfirmsData: a peer heard again after it was declared down gets
// a Data event once its data is known current, even when it did not change
// (a healed partition): the owner knows when the data held is no longer
// from before the loss.
func TestMemUpConfirmsData(t *testing.T) {
	c := newMemCluster(t, 2)
	c.publish("n01", svcNode("n01", 1, "a"))
	c.publish("n02", svcNode("n02", 1, "b"))
	c.net.Advance(3 * time.Second)
	c.net.Partition([]string{"n01"}, []string{"n02"})
	c.net.Advance(15 * time.Second)
	c.take("n01", Down, "n02")
	c.net.Heal()
	c.net.Advance(5 * time.Second) // a beat period
	c.collect()
	var kinds []Kind
	for _, ev := range c.evs["n01"] {
		if ev.Node == "n02" && ev.Kind != Unseen { // TestMemUnseen
			kinds = append(kinds, ev.Kind)
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint([]Kind{Up, Data}) {
		t.Fatalf("n01's events about n02 after the heal: %v, want [up data]", kinds)
	}
}

// TestMemUnseen: beats say which members their sender does not hear, so a
// node whose frames are lost one way learns it was declared down from the
// beats it still receives (a one-way loss).
func TestMemUnseen(t *testing.T) {
	c := newMemCluster(t, 2)
	c.publish("n01", svcNode("n01", 1, "a"))
	c.publish("n02", svcNode("n02", 1, "b"))
	c.net.Advance(3 * time.Second)
	c.collect()
	c.evs["n01"] = nil
	c.net.Drop("n01", "n02", true) // n02 no longer hears n01; n01 hears n02
	c.net.Advance(20 * time.Second)
	c.collect()
	var got [][]string
	for _, ev := range c.evs["n01"] {
		if ev.Node == "n02" {
			if ev.Kind == Down {
				t.Fatal("n01 declared n02 down: it still hears it")
			}
			if ev.Kind == Unseen {
				got = append(got, ev.Unseen)
			}
		}
	}
	if len(got) != 1 || fmt.Sprint(got[0]) != "[n01]" {
		t.Fatalf("n01's unseen events about n02: %v, want one saying n02 does not hear n01", got)
	}
}

// TestMemUnseenNeverHeardNotListed: a node that just started (or
// restarted) has declared nobody down: its beats list no member it never
// heard, or every start would look like a split to its peers' quorum vote.
func TestMemUnseenNeverHeardNotListed(t *testing.T) {
	c := newMemCluster(t, 3)
	c.net.Advance(3 * time.Second)
	c.net.Crash("n02")
	c.join("n02", testSecret, "prod") // a restart within Timeout
	c.net.Advance(3 * time.Second)
	c.collect()
	for _, n := range []string{"n01", "n03"} {
		for _, ev := range c.evs[n] {
			if ev.Kind == Unseen && len(ev.Unseen) > 0 {
				t.Fatalf("%s got %s declaring %v down at a start", n, ev.Node, ev.Unseen)
			}
		}
	}
}

// TestMemUnseenNeverHeardListedAfterTimeout: a member a node never heard
// in a whole Timeout since its start is declared down like a member that
// went silent: the node's beats list it. Before, such a member was never
// listed: the peers took the node for one that still heard it, and the
// takeover gate of that member's services stayed shut ("n2 still hears
// n3") for as long as the member stayed away (found by the simulation's
// ready window property, seed 347).
func TestMemUnseenNeverHeardListedAfterTimeout(t *testing.T) {
	c := newMemCluster(t, 3)
	c.net.Advance(3 * time.Second)
	c.net.Crash("n03")
	c.net.Crash("n02")
	c.join("n02", testSecret, "prod") // a new run that never hears n03
	unseen := func() []string {
		c.collect()
		var last []string
		for _, ev := range c.evs["n01"] {
			if ev.Node == "n02" && ev.Kind == Unseen {
				last = ev.Unseen
			}
		}
		return last
	}
	c.net.Advance(14 * time.Second)
	if u := unseen(); slices.Contains(u, "n03") {
		t.Fatalf("n02 declared n03 down %v before a Timeout since its start", u)
	}
	c.net.Advance(2 * time.Second)
	if u := unseen(); !slices.Contains(u, "n03") {
		t.Fatalf("n02's beats, a Timeout after its start without a frame of n03, list %v, want n03", u)
	}
}

// TestMemFirstBeatSaysUnseen: the first beat heard of a peer says its
// unseen list even when empty, so that the owner knows the peer heard it
// (a later claim that it does not is about this run, not a previous one).
func TestMemFirstBeatSaysUnseen(t *testing.T) {
	c := newMemCluster(t, 2)
	c.net.Advance(3 * time.Second)
	c.collect()
	var got int
	for _, ev := range c.evs["n01"] {
		if ev.Node == "n02" && ev.Kind == Unseen {
			if len(ev.Unseen) != 0 {
				t.Fatalf("n02 declares %v down", ev.Unseen)
			}
			got++
		}
	}
	if got != 1 {
		t.Fatalf("n01 got %d unseen events about n02, want one (its first beat)", got)
	}
}
