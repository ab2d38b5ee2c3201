package heartbeat

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Attack: a holder of the secret seals one datagram as
// n1, of n1's current run, with a sequence number far ahead, and sends it
// from n1's address. It is refused and n1 challenged; n2 goes on hearing
// the real n1 (before: the window jumped past n1's numbers and every frame
// of n1 was refused until n1 restarted).
func TestEnvelopeSequenceJump(t *testing.T) {
	t.Parallel()
	ms := loopMembers(t, 2)
	w1 := watch(t, loopConfig(ms, "n1", nil))
	w2 := watch(t, loopConfig(ms, "n2", nil))
	w1.hb.Publish(svcNode("n1", 1, "a"))
	if _, ok := w2.find(5*time.Second, isKind(Data, "n1")); !ok {
		t.Fatal("n2 never heard n1")
	}
	time.Sleep(lbInterval) // a few beats: n2's window has a top
	tr := w2.hb.(*mlHB).tr
	inc := w1.hb.(*mlHB).c.inc
	forged := tr.keys.sealDatagram(typeDatagram, "n1", inc, 1<<62, []byte("forged"))
	at := time.Now()
	if p := tr.openDatagram(forged, netip.MustParseAddrPort(ms[0].Addr)); p != nil {
		t.Error("the datagram far ahead was accepted")
	}
	want := svcNode("n1", 2, "b")
	w1.hb.Publish(want)
	if _, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &want)
	}); !ok {
		t.Fatal("n2 no longer receives n1's data after the forged datagram")
	}
	time.Sleep(lbTimeout + 500*time.Millisecond)
	if n := countKind(w2, Down, "n1", at); n != 0 {
		t.Fatalf("one forged datagram cut n2 off from n1 (%d Down events)", n)
	}
	if _, ok := w2.find(0, func(ev Event) bool {
		return ev.Kind == Rejected && ev.Node == "n1" && strings.Contains(ev.Reason, "jumps")
	}); !ok {
		t.Error("no Rejected event for the jump")
	}
	// A genuine jump (n1 sent many frames to others while those to n2
	// were lost) costs a challenge: n2 goes on hearing n1.
	w1.hb.(*mlHB).tr.seq.Add(100 * maxJump)
	want = svcNode("n1", 3, "c")
	w1.hb.Publish(want)
	if _, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &want)
	}); !ok {
		t.Fatal("n2 no longer receives n1's data after n1's sequence jumped")
	}
	if n := countKind(w2, Down, "n1", at); n != 0 {
		t.Fatalf("n1's genuine jump made n2 declare it down (%d Down events)", n)
	}
}

// Insider: a holder of the secret seals six datagrams
// of n2's current run, each 500 numbers ahead of the last (under the jump
// limit), from n2's address. Before, n1's window moved 3,000 past n2's
// numbers and every real frame of n2 was refused as a replay for minutes
// (n2 declared down: its services started twice). Now the first real
// frame below the window challenges n2, whose answer re-anchors the
// window: n2's frames pass again within a round trip, n2 is never down.
// The attacker keeping at it (six frames each beat period) costs n2 a
// round trip now and then, never its liveness: pushed once, n2's numbers
// may move only at their own pace.
func TestEnvelopeWindowPushedInSteps(t *testing.T) {
	b := newTwinBed(t)
	const A = 100
	start := b.clk.Now()
	for i := 0; i < 8; i++ {
		b.tr.openDatagram(b.beatOf(A, start), b.src)
		b.answer(A)
		b.step(250 * time.Millisecond)
	}
	forge := func() {
		b.tr.mu.Lock()
		top := b.tr.peers["n2"].dgram.top
		b.tr.mu.Unlock()
		for k := uint64(1); k <= 6; k++ {
			b.tr.openDatagram(b.tr.keys.sealDatagram(typeDatagram, "n2", A, top+500*k, []byte("forged")), b.src)
		}
	}
	forge()
	passed, refused := 0, 0
	for i := 0; i < 40; i++ { // 10 s: three hb.timeouts
		if i%4 == 0 && i > 0 {
			forge() // the attacker keeps at it, once a beat period
		}
		if b.tr.openDatagram(b.beatOf(A, start), b.src); b.heardNow() {
			passed++
		} else {
			refused++
		}
		b.answer(A) // n2 answers the challenges it gets
		b.step(250 * time.Millisecond)
	}
	if n := b.count(Down); n != 0 {
		t.Fatalf("n2 declared down %d times by forged frames pushing n1's window", n)
	}
	if passed < 36 {
		t.Fatalf("%d of n2's 40 beats passed (%d refused) with a holder of the secret pushing the window", passed, refused)
	}
	found := false
	for _, ev := range b.evs {
		found = found || ev.Kind == Rejected && strings.Contains(ev.Reason, "above its own sequence number")
	}
	if !found {
		t.Error("the pushed window was not reported")
	}
	t.Logf("%d of n2's beats passed, %d refused", passed, refused)
}
