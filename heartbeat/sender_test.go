package heartbeat

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Attack: member n3, holding the secret, seals a
// datagram under its own name, from its own address, whose message says it
// comes from n1. n2 refuses it and blames n3; its view of n1 is unchanged.
// The real traffic (datagrams, and a full copy large enough to go by TCP)
// still flows, every message bound to its sender.
func TestEnvelopeFromBoundToSender(t *testing.T) {
	t.Parallel()
	ms := loopMembers(t, 3)
	w1 := watch(t, loopConfig(ms, "n1", nil))
	w2 := watch(t, loopConfig(ms, "n2", nil))
	w3 := watch(t, loopConfig(ms, "n3", nil))
	want := bigNode("n1", 1) // its full copy goes by TCP
	w1.hb.Publish(want)
	n3data := svcNode("n3", 1, "db")
	w3.hb.Publish(n3data)
	if _, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &want)
	}); !ok {
		t.Fatal("n2 never got n1's full copy")
	}
	// and n3's run confirmed by n2: before that, n3's frames wait for
	// the challenge's answer and the forged one would be dropped as such
	if _, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n3" && sameData(ev.Data, &n3data)
	}); !ok {
		t.Fatal("n2 never got n3's data")
	}
	tr2, tr3 := w2.hb.(*mlHB).tr, w3.hb.(*mlHB).tr
	n1 := w1.hb.(*mlHB).c
	forged := svcNode("n1", 2, "forged-by-n3")
	msg := encode(&message{Kind: kindFull, From: "n1", Inc: n1.inc, Gen: 2, Node: &forged, N: 1 << 40})
	d := tr3.keys.sealDatagram(typeDatagram, "n3", tr3.inc, tr3.nextSeq(), append([]byte{mlUserMsg}, msg...))
	tr2.openDatagram(d, netip.MustParseAddrPort(ms[2].Addr))
	// the frame is handled within that call, and its events come in
	// order: once its Rejected event is seen, a Data event it made would
	// have been seen too (no sleep to wait for what should not come)
	if _, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Rejected && ev.Node == "n3" && strings.Contains(ev.Reason, `claims to come from "n1"`)
	}); !ok {
		t.Fatal("no Rejected event blaming n3")
	}
	if _, ok := w2.find(0, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &forged)
	}); ok {
		t.Fatal("n3 spoke as n1: n2 took its data")
	}
	// n1 itself goes on: a delta by datagram
	want2 := bigNode("n1", 2)
	want2.Services["one-more"] = want2.Services["svc-aa"]
	w1.hb.Publish(want2)
	if _, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &want2)
	}); !ok {
		t.Fatal("n2 no longer hears n1")
	}
	for _, w := range []*watcher{w1, w2, w3} {
		if _, ok := w.find(0, func(ev Event) bool {
			return ev.Kind == Rejected && strings.Contains(ev.Reason, "without an authenticated sender")
		}); ok {
			t.Error("a message of the real traffic reached memberlist's delegate")
		}
	}
}
