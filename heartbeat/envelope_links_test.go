package heartbeat

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"haven/config"
)

// loopLinkMembers are n members with two links each on the loopback:
// 127.0.0.1 (net1) and 127.0.0.2 (net2).
func loopLinkMembers(t *testing.T, n int) []config.Member {
	ms := loopMembers(t, n)
	second := freeAddrs(t, n)
	for i := range ms {
		ms[i].Links = []string{ms[i].Addr, strings.Replace(second[i], "127.0.0.1:", "127.0.0.2:", 1)}
	}
	return ms
}

// Two real heartbeats with two links each: every link carries beats (each
// is heard, on its own sockets and from its own address), and a datagram
// captured on one link and replayed on the other, from the sender's
// address on that link, is refused by the peer's replay window: freshness
// is the peer run's, whatever the link.
func TestEnvelopeLinksReplayOnOtherLink(t *testing.T) {
	t.Parallel()
	ms := loopLinkMembers(t, 2)
	capA := newCapture(ms[1].Links[0])
	a := watchTap(t, loopConfig(ms, "n1", nil), capA)
	b := watch(t, loopConfig(ms, "n2", nil))
	defer a.hb.Close()
	defer b.hb.Close()
	if _, ok := b.find(5*time.Second, isKind(Up, "n1")); !ok {
		t.Fatal("n2 never heard n1")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := peerOf(t, b.hb, "n1")
		if len(p.Links) == 2 && !p.Links[0].LastHeard.IsZero() && !p.Links[1].LastHeard.IsZero() {
			if p.Links[1].Addr != ms[0].Links[1] || !p.Links[0].Up || !p.Links[1].Up {
				t.Fatalf("links of n1 seen by n2: %+v", p.Links)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 never heard n1 on both links: %+v", p.Links)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// only frames sent once both listen (those sent before n2 started
	// never reached it: new to its window, they are not replays)
	seen := len(capA.datagrams())
	deadline = time.Now().Add(5 * time.Second)
	for len(capA.datagrams()) < seen+4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// n2 reads net1 in order: once it heard n1 there after these were
	// sent, it has them all
	upto, sent := len(capA.datagrams()), time.Now()
	for !peerOf(t, b.hb, "n1").Links[0].LastHeard.After(sent) {
		if time.Now().After(deadline) {
			t.Fatal("n2 hears nothing more of n1 on net1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var dgrams [][]byte
	for _, d := range capA.datagrams()[seen:upto] {
		if len(d) > 2 && d[2] == typeDatagram { // not a challenge or its answer
			dgrams = append(dgrams, d)
		}
	}
	if len(dgrams) == 0 {
		t.Fatal("nothing captured on net1")
	}
	tr := b.hb.(*mlHB).tr
	before := b.hb.Stats()
	src := netip.MustParseAddrPort(ms[0].Links[1]) // n1's address on net2
	for _, d := range dgrams {
		if p := tr.openDatagram(d, src); p != nil {
			t.Fatal("a datagram of net1 replayed on net2 was accepted")
		}
	}
	after := b.hb.Stats()
	if got := after.Replayed - before.Replayed; got < uint64(len(dgrams)) {
		t.Errorf("%d of %d frames replayed on the other link counted as replays", got, len(dgrams))
	}
	if _, ok := b.find(2*time.Second, func(ev Event) bool {
		return ev.Kind == Rejected && ev.Node == "n1" && strings.Contains(ev.Reason, "replayed or duplicate")
	}); !ok {
		t.Error("no Rejected event for the frames replayed on the other link")
	}
	// the sender's address of the other member on one link is not another
	// member's: a frame of n1 from n2's net2 address is refused
	wrong := netip.MustParseAddrPort(ms[1].Links[1])
	ws := b.hb.Stats().WrongSource
	tr.openDatagram(dgrams[len(dgrams)-1], wrong)
	if b.hb.Stats().WrongSource != ws+1 {
		t.Errorf("frame of n1 from %s not refused as from the wrong address", wrong)
	}
}
