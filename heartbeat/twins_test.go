package heartbeat

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/internal/clock"
)

type nopTransport struct{}

func (nopTransport) send(string, int, []byte) {}

// twinBed is n1's transport state (no sockets) with a fake clock, fed
// authentic frames of runs of n2 from n2's configured address.
type twinBed struct {
	t   *testing.T
	clk *clock.Fake
	tr  *secTransport
	src netip.AddrPort
	seq map[uint64]uint64
	evs []Event
}

func newTwinBed(t *testing.T) *twinBed {
	clk := clock.NewFake(t0)
	ms := []config.Member{{Name: "n1", Addr: "10.0.0.1:10000"}, {Name: "n2", Addr: "10.0.0.2:10000"}}
	s, err := Config{Node: "n1", Members: ms, ClusterName: "prod", Secret: testSecret, Timeout: 3 * time.Second,
		Interval: time.Second, Clock: clk}.validate()
	if err != nil {
		t.Fatal(err)
	}
	c := newCore(s)
	c.tr = nopTransport{}
	tr, err := newSecState(s, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown() })
	return &twinBed{t: t, clk: clk, tr: tr, src: netip.MustParseAddrPort("10.0.0.2:10000"), seq: map[uint64]uint64{}}
}

// frame feeds a datagram of run inc of n2; it reports whether memberlist
// would see it.
func (b *twinBed) frame(inc uint64) bool {
	b.seq[inc]++
	return b.tr.openDatagram(b.tr.keys.sealDatagram(typeDatagram, "n2", inc, b.seq[inc], []byte("x")), b.src) != nil
}

// answer feeds run inc's answer to n1's pending challenge (none: no-op).
func (b *twinBed) answer(inc uint64) {
	b.tr.mu.Lock()
	nonce := b.tr.peers["n2"].nonce
	b.tr.mu.Unlock()
	if nonce == nil {
		return
	}
	b.seq[inc]++
	b.tr.openDatagram(b.tr.keys.sealDatagram(typeResponse, "n2", inc, b.seq[inc], nonce), b.src)
}

// heardNow tells whether n2 was heard at the clock's now (a beat just
// fed refreshed its liveness).
func (b *twinBed) heardNow() bool {
	b.tr.c.mu.Lock()
	defer b.tr.c.mu.Unlock()
	return b.tr.c.peers["n2"].heard.Equal(b.clk.Now())
}

func (b *twinBed) confirmed() uint64 {
	b.tr.mu.Lock()
	defer b.tr.mu.Unlock()
	return b.tr.peers["n2"].inc
}

// step advances the clock by d, ticks the core and collects its events.
func (b *twinBed) step(d time.Duration) {
	b.clk.Advance(d)
	b.tr.c.tick()
	for {
		select {
		case ev := <-b.tr.c.events:
			b.evs = append(b.evs, ev)
			continue
		default:
		}
		return
	}
}

func (b *twinBed) count(k Kind) int {
	n := 0
	for _, ev := range b.evs {
		if ev.Kind == k && ev.Node == "n2" {
			n++
		}
	}
	return n
}

// A restart: run A beats, stops, run B starts and is confirmed. One run
// at a time is no duplicate.
func TestTwinRestartIsNoDuplicate(t *testing.T) {
	b := newTwinBed(t)
	const A, B = 100, 200
	for i := 0; i < 10; i++ {
		b.frame(A)
		b.answer(A)
		b.step(500 * time.Millisecond)
	}
	if b.confirmed() != A {
		t.Fatalf("confirmed %d, want A", b.confirmed())
	}
	for i := 0; i < 20; i++ {
		b.frame(B)
		b.answer(B)
		b.step(500 * time.Millisecond)
	}
	if b.confirmed() != B || b.count(Duplicate) != 0 {
		t.Fatalf("confirmed %d, %d Duplicate events: a restart is no duplicate", b.confirmed(), b.count(Duplicate))
	}
}

// A clone: run A is confirmed, run B (the clone) appears and answers the
// challenge (it holds the address now); A keeps sending fresh frames (no
// replay: new sequence numbers). n1 reports a duplicate within twinAfter
// of B's start and lists n2 in its beats; while both send it stays so.
// Then the clone stops: A, silent-shut-out until then, is challenged,
// answers, and is accepted again before hb.timeout (n2 is never declared
// down); the duplicate ends hb.timeout later.
func TestTwinCloneDetectedAndRealRunTakenBack(t *testing.T) {
	b := newTwinBed(t)
	const A, B = 100, 200
	for i := 0; i < 6; i++ {
		b.frame(A)
		b.answer(A)
		b.step(500 * time.Millisecond)
	}
	cloneAt := b.clk.Now()
	var detected time.Time
	for i := 0; i < 12; i++ {
		b.frame(B)
		b.answer(B) // the clone answers the challenges
		b.frame(A)  // the real run keeps beating: refused, earlier run
		b.step(250 * time.Millisecond)
		if detected.IsZero() && b.count(Duplicate) > 0 {
			detected = b.clk.Now()
		}
	}
	if b.confirmed() != B {
		t.Fatalf("confirmed %d, want the clone's run (it answered)", b.confirmed())
	}
	if detected.IsZero() || b.count(Duplicate) != 1 {
		t.Fatalf("%d Duplicate events, want 1", b.count(Duplicate))
	}
	if d := detected.Sub(cloneAt); d > 2*time.Second {
		t.Fatalf("duplicate reported %s after the clone started, want within 2 beats (+ one)", d)
	}
	for _, ev := range b.evs {
		if ev.Kind == Duplicate && !strings.Contains(ev.Reason, "two runs of n2") {
			t.Fatalf("reason %q", ev.Reason)
		}
	}
	b.tr.c.mu.Lock()
	twins := b.tr.c.beatMessage(false, nil).Twins
	b.tr.c.mu.Unlock()
	if len(twins) != 1 || twins[0] != "n2" {
		t.Fatalf("n1's beat lists twins %v, want [n2]", twins)
	}
	if p := peerOf(t, &memHB{c: b.tr.c}, "n2"); !p.Duplicate {
		t.Fatalf("Peers: %+v, want n2 duplicate", p)
	}
	// the clone stops; the real run keeps beating and answers
	taken := false
	for i := 0; i < 10 && !taken; i++ {
		taken = b.frame(A)
		b.answer(A)
		b.step(250 * time.Millisecond)
	}
	if !taken || b.confirmed() != A {
		t.Fatalf("the real run is still shut out (confirmed %d) 2.5s after the clone stopped", b.confirmed())
	}
	if b.count(DuplicateGone) != 0 {
		t.Fatal("duplicate over before hb.timeout")
	}
	for i := 0; i < 16; i++ {
		b.frame(A)
		b.step(250 * time.Millisecond)
	}
	if b.count(DuplicateGone) != 1 {
		t.Fatalf("%d DuplicateGone events once only one run sends for hb.timeout, want 1", b.count(DuplicateGone))
	}
	if p := peerOf(t, &memHB{c: b.tr.c}, "n2"); p.Duplicate {
		t.Fatal("still duplicate")
	}
}

// A clone that never gets confirmed (the real run answers every challenge)
// is a duplicate too.
func TestTwinUnconfirmedCloneDetected(t *testing.T) {
	b := newTwinBed(t)
	const A, B = 100, 200
	for i := 0; i < 6; i++ {
		b.frame(A)
		b.answer(A)
		b.step(500 * time.Millisecond)
	}
	for i := 0; i < 12; i++ {
		b.frame(B)
		b.answer(A) // the real run holds the address
		b.frame(A)
		b.step(250 * time.Millisecond)
	}
	if b.confirmed() != A || b.count(Duplicate) != 1 {
		t.Fatalf("confirmed %d, %d Duplicate events, want A and 1", b.confirmed(), b.count(Duplicate))
	}
}

// Replayed frames of an earlier run never confirmed here (captured before
// n1 started) are no evidence of a second live run.
func TestTwinReplayOfUnknownRunIsNoDuplicate(t *testing.T) {
	b := newTwinBed(t)
	const Old, A = 50, 100
	for i := 0; i < 6; i++ {
		b.frame(A)
		b.answer(A)
		b.step(500 * time.Millisecond)
	}
	for i := 0; i < 20; i++ {
		b.frame(Old)
		b.answer(A) // a challenge, if any, is answered by the live run
		b.frame(A)
		b.step(250 * time.Millisecond)
	}
	if b.confirmed() != A || b.count(Duplicate) != 0 {
		t.Fatalf("confirmed %d, %d Duplicate events: a replay is no second run", b.confirmed(), b.count(Duplicate))
	}
}

// A peer's beat listing this node among the duplicated members is an
// Impostor event: another daemon runs with this node's name.
func TestTwinOfSelfIsImpostor(t *testing.T) {
	c := newMemCluster(t, 2)
	c.hb["n02"].(*memHB).c.noteTwin("n01", "test")
	c.net.Advance(5 * time.Second) // two beats
	if n := c.take("n01", Impostor, "n01"); n != 1 {
		t.Fatalf("%d Impostor events on n01, want 1 (rate-limited)", n)
	}
}

// Insider: one member's beats listing n01 among the duplicated members
// froze n01 (its twin, if any, is heard by the others too). A claim about
// this node from one member is not acted on while another member could
// confirm it: n01 reports it (Rejected), and only a second member saying
// it too makes it an Impostor event. With a single peer, that peer's word
// is all there is (TestTwinOfSelfIsImpostor), as is the word of the one
// peer this node hears lately.
func TestTwinOfSelfClaimNeedsTwoWitnesses(t *testing.T) {
	c := newMemCluster(t, 3)
	c.net.Advance(5 * time.Second)
	c.collect()
	c.hb["n02"].(*memHB).c.noteTwin("n01", "a lie")
	c.net.Advance(10 * time.Second) // beats of n02 keep saying it
	c.collect()
	impostor, said := 0, false
	for _, ev := range c.evs["n01"] {
		if ev.Kind == Impostor {
			impostor++
		}
		said = said || ev.Kind == Rejected && strings.Contains(ev.Reason, "n02 says it hears two runs of n01")
	}
	c.evs["n01"] = nil
	if impostor != 0 || !said {
		t.Fatalf("%d Impostor events on n01 from one member's claim (want 0), claim reported %v", impostor, said)
	}
	c.hb["n02"].(*memHB).c.noteTwin("n01", "a lie")
	c.hb["n03"].(*memHB).c.noteTwin("n01", "seen too")
	c.net.Advance(5 * time.Second)
	if n := c.take("n01", Impostor, "n01"); n != 1 {
		t.Fatalf("%d Impostor events on n01 once n02 and n03 say it, want 1 (rate-limited)", n)
	}

	// n01 hears n02 alone (the network sends n03's frames for n01 to the
	// clone): n02's word is all there is
	c = newMemCluster(t, 3)
	c.net.Advance(5 * time.Second)
	c.net.Drop("n03", "n01", true)
	c.net.Advance(8 * time.Second) // a beat and a half (7.5 s)
	c.collect()
	c.evs["n01"] = nil
	c.hb["n02"].(*memHB).c.noteTwin("n01", "seen")
	c.net.Advance(5 * time.Second)
	if n := c.take("n01", Impostor, "n01"); n != 1 {
		t.Fatalf("%d Impostor events on n01 from the one peer it hears, want 1", n)
	}
}

// An attacker on the path withheld datagrams of run A; A's node restarts
// (run B, confirmed); the attacker releases what it held at once: fresh
// sequence numbers of a run confirmed before, but a burst, not a live run.
// No duplicate.
func TestTwinWithheldBurstIsNoDuplicate(t *testing.T) {
	b := newTwinBed(t)
	const A, B = 100, 200
	var held [][]byte
	for i := 0; i < 24; i++ {
		b.frame(A)
		b.answer(A)
		if i%3 == 0 { // every 3rd datagram withheld
			b.seq[A]++
			held = append(held, b.tr.keys.sealDatagram(typeDatagram, "n2", A, b.seq[A], []byte("x")))
		}
		b.step(250 * time.Millisecond)
	}
	for i := 0; i < 12; i++ {
		b.frame(B)
		b.answer(B)
		b.step(250 * time.Millisecond)
	}
	if b.confirmed() != B {
		t.Fatalf("confirmed %d, want B", b.confirmed())
	}
	for _, d := range held {
		b.tr.openDatagram(d, b.src)
	}
	for i := 0; i < 12; i++ {
		b.frame(B)
		b.answer(B)
		b.step(250 * time.Millisecond)
	}
	if n := b.count(Duplicate); n != 0 || b.confirmed() != B {
		t.Fatalf("%d Duplicate events (confirmed %d) after a burst of withheld frames of the earlier run", n, b.confirmed())
	}
}

// beatOf is a datagram of run inc of n2 carrying a beat sent now (its T
// counted from epoch, the run's start).
func (b *twinBed) beatOf(inc uint64, epoch time.Time) []byte {
	return b.msgOf(inc, epoch, &message{Kind: kindBeat})
}

// msgOf is a datagram of run inc of n2 carrying m, sent now (its T
// counted from epoch, its N the datagram's sequence number).
func (b *twinBed) msgOf(inc uint64, epoch time.Time, m *message) []byte {
	b.seq[inc]++
	m.V, m.From, m.Inc, m.N, m.T = 1, "n2", inc, b.seq[inc], b.clk.Now().Sub(epoch)
	return b.tr.keys.sealDatagram(typeDatagram, "n2", inc, b.seq[inc], append([]byte{mlUserMsg}, encode(m)...))
}

// An attacker on the path withholds datagrams of run A of n2; n2
// restarts (run B); the attacker then releases what it held one at a
// time, at the pace of beats: fresh sequence numbers of a run confirmed
// before, spaced like a live run's. Before, n1 reported a duplicate (and
// n2, reading its name in n1's beats, froze as a cloned host). They are
// late by A's own lag rule (sent seconds before they came): no evidence
// that A still runs.
func TestTwinWithheldSpreadIsNoDuplicate(t *testing.T) {
	b := newTwinBed(t)
	const A, B = 100, 200
	startA := b.clk.Now()
	var held [][]byte
	for i := 0; i < 24; i++ {
		b.tr.openDatagram(b.beatOf(A, startA), b.src)
		b.answer(A)
		if i%2 == 0 {
			held = append(held, b.beatOf(A, startA)) // withheld
		}
		b.step(250 * time.Millisecond)
	}
	startB := b.clk.Now()
	for i := 0; i < 8; i++ {
		b.tr.openDatagram(b.beatOf(B, startB), b.src)
		b.answer(B)
		b.step(250 * time.Millisecond)
	}
	if b.confirmed() != B {
		t.Fatalf("confirmed %d, want B", b.confirmed())
	}
	for _, d := range held {
		b.tr.openDatagram(d, b.src)
		b.tr.openDatagram(b.beatOf(B, startB), b.src)
		b.answer(B)
		b.step(250 * time.Millisecond)
	}
	if n := b.count(Duplicate); n != 0 || b.confirmed() != B {
		t.Fatalf("%d Duplicate events (confirmed %d) with withheld frames of the earlier run released at a beat's pace", n, b.confirmed())
	}
	// A live clone (timely frames of both runs) is still one
	startC := b.clk.Now()
	const C = 300
	for i := 0; i < 12; i++ {
		b.tr.openDatagram(b.beatOf(C, startC), b.src)
		b.answer(C)
		b.tr.openDatagram(b.beatOf(B, startB), b.src)
		b.step(250 * time.Millisecond)
	}
	if n := b.count(Duplicate); n != 1 {
		t.Fatalf("%d Duplicate events with two runs beating in time, want 1", n)
	}
}

// fullOfRun is a datagram of run inc of n2 carrying its full copy at gen,
// with services svcs, sent now.
func (b *twinBed) fullOfRun(inc uint64, epoch time.Time, gen uint64, svcs ...string) []byte {
	n := svcNode("n2", gen, svcs...)
	return b.msgOf(inc, epoch, &message{Kind: kindFull, Gen: gen, Node: &n})
}

// trusted tells whether the Data events of n2 collected so far may be
// taken for a takeover: none came while a RunHeld was not followed by
// RunTrusted. It returns the first one that may not (nil: all may).
func (b *twinBed) untrustedData() *Event {
	held := false
	for i := range b.evs {
		switch ev := &b.evs[i]; {
		case ev.Node != "n2":
		case ev.Kind == RunHeld:
			held = true
		case ev.Kind == RunTrusted:
			held = false
		case ev.Kind == Data && !held:
			return ev
		}
	}
	return nil
}

// A cloned host starts (run B, n2's name and address: it answers the
// challenge and is confirmed) while the real n2 (run A) keeps beating.
// Before, B's data (nothing runs there) replaced A's at once: a placement
// leader saw n2's services down and started them elsewhere before the
// duplicate was detected. B's run is held (RunHeld: its instances
// unknown) while A keeps sending, until the duplicate is reported. A
// restart (A silent, then B) is held too, and trusted holdAfter after A's
// last frame; its data is handed over at once.
func TestTwinCloneRunHeldUntilDetected(t *testing.T) {
	b := newTwinBed(t)
	const A, B = 100, 200
	startA := b.clk.Now()
	b.tr.openDatagram(b.beatOf(A, startA), b.src)
	b.answer(A)
	b.tr.openDatagram(b.fullOfRun(A, startA, 1, "web"), b.src)
	for i := 0; i < 8; i++ {
		b.tr.openDatagram(b.beatOf(A, startA), b.src)
		b.step(250 * time.Millisecond)
	}
	if ev := b.untrustedData(); ev == nil || len(ev.Data.Services) != 1 {
		t.Fatal("A's data: no Data event with web")
	}
	b.evs = nil
	startB := b.clk.Now()
	for i := 0; i < 16 && b.count(Duplicate) == 0; i++ {
		b.tr.openDatagram(b.beatOf(B, startB), b.src)
		b.answer(B) // the clone holds the address: confirmed
		b.tr.openDatagram(b.fullOfRun(B, startB, 1), b.src)
		b.tr.openDatagram(b.beatOf(A, startA), b.src) // the real n2 beats on
		b.step(250 * time.Millisecond)
		if ev := b.untrustedData(); ev != nil && b.count(Duplicate) == 0 {
			t.Fatalf("the clone's data (%d services) trusted %s after it started, before the duplicate was reported",
				len(ev.Data.Services), b.clk.Now().Sub(startB))
		}
	}
	if b.confirmed() != B || b.count(Duplicate) != 1 || b.count(RunHeld) != 1 || b.count(RunTrusted) != 0 {
		t.Fatalf("confirmed %d, %d Duplicate, %d RunHeld, %d RunTrusted events: want the clone confirmed and held, the duplicate",
			b.confirmed(), b.count(Duplicate), b.count(RunHeld), b.count(RunTrusted))
	}

	// a restart: the confirmed run stops, a new one starts
	c := newTwinBed(t)
	c.tr.openDatagram(c.beatOf(A, startA), c.src)
	c.answer(A)
	c.tr.openDatagram(c.fullOfRun(A, startA, 1, "web"), c.src)
	c.step(250 * time.Millisecond)
	stopped := c.clk.Now()
	c.step(500 * time.Millisecond)
	c.evs = nil
	startB = c.clk.Now()
	var trusted time.Duration
	data := false
	for i := 0; i < 30 && trusted == 0; i++ {
		c.tr.openDatagram(c.beatOf(B, startB), c.src)
		c.answer(B)
		if i == 0 {
			c.tr.openDatagram(c.fullOfRun(B, startB, 1, "web"), c.src)
		}
		c.step(100 * time.Millisecond)
		for _, ev := range c.evs {
			data = data || ev.Kind == Data && ev.Node == "n2" && ev.Data.Gen == 1 && i < 2
		}
		if c.count(RunTrusted) > 0 {
			trusted = c.clk.Now().Sub(stopped)
		}
	}
	if want := 2 * time.Second; !data || trusted == 0 || trusted > want+100*time.Millisecond || c.count(Duplicate) != 0 || c.count(RunHeld) != 1 {
		t.Fatalf("a restart: data at once %v, trusted %s after the old run's last frame (want within %s), %d RunHeld, %d Duplicate events",
			data, trusted, want, c.count(RunHeld), c.count(Duplicate))
	}
	if ev := c.untrustedData(); ev == nil {
		t.Fatal("a restart: no Data event after RunTrusted")
	}
}

// A node that has just started hears a frame of a member's run A, which
// then restarts: run B is confirmed and held before the member was ever
// up here, and a tick comes between the hold and B's first heard frame
// (a busy host). The hold must still end in RunTrusted once A is silent:
// it was dropped silently ("not up") and the owner kept B's instances
// unknown for good (the chaos suite's RestartOnebyOne, 3 nodes).
func TestHeldRunOfAPeerNotUpYetIsTrusted(t *testing.T) {
	b := newTwinBed(t)
	const A, B = 100, 200
	b.tr.openDatagram(b.beatOf(A, b.clk.Now()), b.src) // A's last frame, never answered
	b.step(500 * time.Millisecond)
	startB := b.clk.Now()
	b.tr.openDatagram(b.beatOf(B, startB), b.src)
	b.answer(B) // B confirmed and held: A was heard 500 ms ago
	b.step(0)   // a tick before B is heard as up
	for i := 0; i < 40 && b.count(RunTrusted) == 0; i++ {
		b.tr.openDatagram(b.beatOf(B, startB), b.src)
		b.step(100 * time.Millisecond)
	}
	if b.confirmed() != B || b.count(RunHeld) != 1 || b.count(RunTrusted) != 1 {
		t.Fatalf("confirmed %d, %d RunHeld, %d RunTrusted events 4 s after: want B confirmed, held, then trusted",
			b.confirmed(), b.count(RunHeld), b.count(RunTrusted))
	}
}
