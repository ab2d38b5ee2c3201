package heartbeat

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Attack (issue 19, item 5): a holder of the secret seals one datagram as
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
