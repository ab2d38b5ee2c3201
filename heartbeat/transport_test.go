package heartbeat

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"haven/dataset"
)

// capture records the sealed bytes a real heartbeat sends: the datagrams to
// one address, and every stream it opens or answers.
type capture struct {
	mu      sync.Mutex
	to      string
	dgrams  [][]byte
	streams map[net.Conn][]byte
	order   []net.Conn
}

func newCapture(to string) *capture { return &capture{to: to, streams: map[net.Conn][]byte{}} }

func (c *capture) tap(conn net.Conn, to string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case conn == nil && to == c.to:
		c.dgrams = append(c.dgrams, bytes.Clone(b))
	case conn != nil:
		if _, ok := c.streams[conn]; !ok {
			c.order = append(c.order, conn)
		}
		c.streams[conn] = append(c.streams[conn], b...)
	}
}

// dialed returns the streams this node opened (those starting with an
// open header), in order.
func (c *capture) dialed() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for _, conn := range c.order {
		if b := c.streams[conn]; len(b) > 2 && b[2] == typeOpen {
			out = append(out, b)
		}
	}
	return out
}

func (c *capture) datagrams() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.dgrams...)
}

// watchTap is watch with a capture of what the heartbeat sends.
func watchTap(t *testing.T, cfg Config, c *capture) *watcher {
	t.Helper()
	h, err := newMemberlist(cfg, c.tap)
	if err != nil {
		t.Fatal(err)
	}
	return watchHB(t, h)
}

// bigNode has enough services that its full copy goes by TCP.
func bigNode(name string, gen uint64) dataset.Node {
	n := svcNode(name, gen)
	for i := range 60 {
		n.Services["svc-"+string(rune('a'+i%26))+string(rune('a'+i/26))] = dataset.Instance{Avail: dataset.StatusUp}
	}
	return n
}

// replay sends the datagrams from the UDP address from, and the streams
// over TCP, to the address to.
func replay(t *testing.T, from, to string, dgrams, streams [][]byte) {
	t.Helper()
	la, _ := net.ResolveUDPAddr("udp", from)
	ra, _ := net.ResolveUDPAddr("udp", to)
	u, err := net.ListenUDP("udp", la)
	if err != nil {
		t.Fatalf("bind %s to replay: %v", from, err)
	}
	defer u.Close()
	for _, d := range dgrams {
		u.WriteToUDP(d, ra)
	}
	for _, s := range streams {
		if c, err := net.DialTimeout("tcp", to, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(200 * time.Millisecond))
			c.Write(s)
			c.Close()
		}
	}
}

// crash stops h as a kill -9 would: nothing flushed, no leave.
func crash(t *testing.T, h Heartbeat) {
	t.Helper()
	m := h.(*mlHB)
	m.closeOnce.Do(func() { m.closeErr = m.shut(false) })
	if m.closeErr != nil {
		t.Fatal(m.closeErr)
	}
}

func countKind(w *watcher, k Kind, node string, after time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ev := range w.evs {
		if ev.Kind == k && (node == "" || ev.Node == node) && !ev.at.Before(after) {
			n++
		}
	}
	return n
}

// Attack: flip any byte of a captured datagram (memberlist v0.7.0 panicked
// on its version byte) and send it from the sender's own address. Every
// variant is dropped and counted; the daemon survives and the cluster works.
func TestEnvelopeTamperedDatagrams(t *testing.T) {
	t.Parallel()
	ms := loopMembers(t, 2)
	cap1 := newCapture(ms[1].Addr)
	w1 := watchTap(t, loopConfig(ms, "n1", nil), cap1)
	w2 := watch(t, loopConfig(ms, "n2", nil))
	w1.hb.Publish(svcNode("n1", 1, "web"))
	if _, ok := w2.find(5*time.Second, isKind(Data, "n1")); !ok {
		t.Fatal("n2 never heard n1")
	}
	dgrams := cap1.datagrams()
	if len(dgrams) == 0 {
		t.Fatal("nothing captured")
	}
	before := w2.hb.Stats().Rejected
	var forged [][]byte
	d := dgrams[len(dgrams)-1]
	for i := range d {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(d)
			b[i] ^= x
			forged = append(forged, b)
		}
	}
	forged = append(forged, d[:len(d)-1], d[:5], append(bytes.Clone(d), 0))
	// Sent from another port of n1's host: n1 holds its own.
	replay(t, "127.0.0.1:0", ms[1].Addr, forged, nil)
	deadline := time.Now().Add(5 * time.Second)
	for w2.hb.Stats().Rejected-before < uint64(len(forged)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := w2.hb.Stats().Rejected - before; got < uint64(len(forged)) {
		t.Fatalf("%d of %d forged datagrams rejected", got, len(forged))
	}
	// Still a cluster.
	want := svcNode("n1", 2, "web", "db")
	w1.hb.Publish(want)
	if _, ok := w2.find(3*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &want)
	}); !ok {
		t.Fatal("n2 no longer hears n1 after the forged datagrams")
	}
	if n := countKind(w2, Rejected, "", time.Time{}); n == 0 || n > maxRejectEvents {
		t.Errorf("%d Rejected events for %d forged datagrams, want 1..%d", n, len(forged), maxRejectEvents)
	}
}

// Attack: capture n1's traffic, crash n1 (no leave), replay its datagrams
// from its own address and its streams for longer than Timeout: n2 declares
// n1 down at Timeout and never up again. A restarted n2, which remembers
// nothing, does not take the replays for n1 either: a run is believed only
// once it answered a challenge.
func TestEnvelopeReplayAfterCrash(t *testing.T) {
	ms := loopMembers(t, 2)
	cap1 := newCapture(ms[1].Addr)
	w1 := watchTap(t, loopConfig(ms, "n1", nil), cap1)
	w2 := watch(t, loopConfig(ms, "n2", nil))
	w1.hb.Publish(bigNode("n1", 1))
	w2.hb.Publish(svcNode("n2", 1, "db"))
	if _, ok := w2.find(5*time.Second, isKind(Data, "n1")); !ok {
		t.Fatal("n2 never heard n1")
	}
	time.Sleep(lbInterval + 300*time.Millisecond) // the full copy of the join by TCP, beats
	crash(t, w1.hb)
	killed := time.Now()
	dgrams, streams := cap1.datagrams(), cap1.dialed()
	t.Logf("captured %d datagrams, %d streams", len(dgrams), len(streams))
	if len(streams) == 0 {
		t.Fatal("no stream captured")
	}
	end := killed.Add(lbTimeout + time.Second)
	for time.Now().Before(end) {
		replay(t, ms[0].Addr, ms[1].Addr, dgrams, streams)
		time.Sleep(20 * time.Millisecond)
	}
	ev, ok := w2.find(0, isKind(Down, "n1"))
	if !ok {
		t.Fatal("n2 never declared the crashed n1 down under replay")
	}
	if d := ev.at.Sub(killed); d > lbTimeout+500*time.Millisecond {
		t.Errorf("n1 declared down %s after its crash, want within timeout %s + 0.5s", d, lbTimeout)
	}
	if n := countKind(w2, Up, "n1", ev.at); n != 0 {
		t.Errorf("replays brought n1 up %d times after its down", n)
	}
	st := w2.hb.Stats()
	if st.Replayed == 0 {
		t.Errorf("no replay counted: %+v", st)
	}
	t.Logf("down after %s; stats %+v", ev.at.Sub(killed), st)

	// n2 restarts: a new run, with no memory of n1's sequence numbers.
	if err := w2.hb.Close(); err != nil {
		t.Fatal(err)
	}
	w3 := watch(t, loopConfig(ms, "n2", nil))
	start := time.Now()
	for time.Since(start) < lbTimeout {
		replay(t, ms[0].Addr, ms[1].Addr, dgrams, streams)
		time.Sleep(20 * time.Millisecond)
	}
	for _, k := range []Kind{Up, Data} {
		if n := countKind(w3, k, "n1", time.Time{}); n != 0 {
			t.Errorf("restarted n2: replays of the dead n1 gave %d %s events", n, k)
		}
	}
	if st := w3.hb.Stats(); st.Unconfirmed == 0 {
		t.Errorf("restarted n2 challenged nothing: %+v", st)
	}
}

// Attack: frames of an earlier run of n1, replayed after n1 restarted, are
// dropped: they never roll n2's view of n1 back.
func TestEnvelopeOldIncarnationDropped(t *testing.T) {
	t.Parallel()
	ms := loopMembers(t, 2)
	capA := newCapture(ms[1].Addr)
	a := watchTap(t, loopConfig(ms, "n1", nil), capA)
	w2 := watch(t, loopConfig(ms, "n2", nil))
	a.hb.Publish(bigNode("n1", 1))
	if _, ok := w2.find(5*time.Second, isKind(Data, "n1")); !ok {
		t.Fatal("n2 never heard n1")
	}
	time.Sleep(lbInterval + 200*time.Millisecond)
	crash(t, a.hb)
	b := watch(t, loopConfig(ms, "n1", nil)) // the next run, same address
	want := svcNode("n1", 1, "only-in-run-b")
	b.hb.Publish(want)
	ev, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &want)
	})
	if !ok {
		t.Fatal("n2 never got the new run's data")
	}
	before := w2.hb.Stats()
	// Run A's datagrams, as if from n1's address (run B holds the port,
	// so they go straight to n2's receive path), and its streams by TCP.
	tr := w2.hb.(*mlHB).tr
	src := netip.MustParseAddrPort(ms[0].Addr)
	dgrams := capA.datagrams()
	for _, d := range dgrams {
		if p := tr.openDatagram(d, src); p != nil {
			t.Fatal("a datagram of the earlier run was accepted")
		}
	}
	replay(t, "127.0.0.1:0", ms[1].Addr, nil, capA.dialed())
	time.Sleep(300 * time.Millisecond)
	after := w2.hb.Stats()
	if got := after.Replayed - before.Replayed; got < uint64(len(dgrams)) {
		t.Errorf("%d of %d stale frames counted as replays", got, len(dgrams))
	}
	w2.mu.Lock()
	for _, e := range w2.evs {
		if e.Kind == Data && e.Node == "n1" && e.at.After(ev.at) && !sameData(e.Data, &want) {
			t.Errorf("n2's view of n1 rolled back to %v", e.Data.Services)
		}
	}
	w2.mu.Unlock()
	if _, ok := w2.find(0, func(ev Event) bool {
		return ev.Kind == Rejected && ev.Node == "n1" && strings.Contains(ev.Reason, "earlier run of n1")
	}); !ok {
		t.Error("no Rejected event for the earlier run's frames")
	}
}

// Attack: another daemon runs as n1 from another address (a copied
// configuration). n2 drops its frames (not from n1's configured address)
// and keeps hearing the real n1; the real n1, given one of its frames,
// reports an impostor.
func TestEnvelopeWrongAddressAndImpostor(t *testing.T) {
	t.Parallel()
	ms := loopMembers(t, 3) // the third address is the impostor's
	real := ms[:2]
	w1 := watch(t, loopConfig(real, "n1", nil))
	w2 := watch(t, loopConfig(real, "n2", nil))
	w1.hb.Publish(svcNode("n1", 1, "web"))
	if _, ok := w2.find(5*time.Second, isKind(Data, "n1")); !ok {
		t.Fatal("n2 never heard n1")
	}
	ic := loopConfig(real, "n1", nil)
	_, port, _ := splitHostPort(ms[2].Addr)
	ic.BindPort = port
	capI := newCapture(ms[1].Addr)
	imp := watchTap(t, ic, capI)
	imp.hb.Publish(svcNode("n1", 7, "impostor-data"))
	rej, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Rejected && ev.Node == "n1" && strings.Contains(ev.Reason, "frame claims to be n1 but came from")
	})
	if !ok {
		t.Fatal("n2 did not reject the frames of n1 from another address")
	}
	want := "frame claims to be n1 but came from " + ms[2].Addr + " (n1 is configured at " + ms[0].Addr + ")"
	if rej.Reason != want || rej.Addr != ms[2].Addr {
		t.Errorf("rejection %q from %q, want %q", rej.Reason, rej.Addr, want)
	}
	if st := w2.hb.Stats(); st.WrongSource == 0 {
		t.Errorf("no wrong source counted: %+v", st)
	}
	// A stream from an address that is no member's is closed unread.
	if c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", ms[1].Addr); err == nil {
		c.Write([]byte("anything"))
		c.Close()
	}
	if _, ok := w2.find(3*time.Second, func(ev Event) bool {
		return ev.Kind == Rejected && ev.Node == "127.0.0.2" && strings.Contains(ev.Reason, "no member's")
	}); !ok {
		t.Error("a stream from 127.0.0.2 was not refused")
	}
	// The impostor's frame reaches the real n1.
	replay(t, "127.0.0.1:0", ms[0].Addr, capI.datagrams()[:1], nil)
	ev, ok := w1.find(3*time.Second, func(ev Event) bool { return ev.Kind == Impostor })
	if !ok {
		t.Fatal("n1 did not report the daemon running under its name")
	}
	if ev.Node != "n1" || ev.Addr == "" || !strings.Contains(ev.Reason, "another daemon runs as n1") {
		t.Errorf("impostor event %+v", ev.Event)
	}
	if _, bad := w2.find(0, func(e Event) bool {
		if e.Kind != Data {
			return false
		}
		_, imp := e.Data.Services["impostor-data"]
		return imp
	}); bad {
		t.Fatal("the impostor's data reached n2")
	}
	if p := peerOf(t, w2.hb, "n1"); !p.Up {
		t.Error("n2 no longer sees the real n1 up")
	}
}

// Attack: streams announcing 20 MB (in memberlist's framing, and in ours)
// allocate nothing near it, and 200 idle connections are capped: at most
// maxUnauthPerIP wait, each newer one closing the oldest, and the log gets a
// handful of lines.
func TestEnvelopeStreamBudgets(t *testing.T) {
	ms := loopMembers(t, 2)
	w2 := watch(t, loopConfig(ms, "n2", nil))
	to := ms[1].Addr
	const big = 20 << 20
	var ours []byte
	ours = appendHeader(ours, typeOpen, "n1", 1, 1)
	ours = binary.BigEndian.AppendUint32(ours, big)
	theirs := []byte{244, 4, 'p', 'r', 'o', 'd', 10, 0x01, 0x40, 0, 0} // label header, encrypt, 20 MB
	chunk := make([]byte, 64<<10)
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", to, time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(2 * time.Second))
			hdr := ours
			if i%2 == 1 {
				hdr = theirs
			}
			if _, err := c.Write(hdr); err != nil {
				return
			}
			for sent := 0; sent < big; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&ms1)
	if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 8<<20 {
		t.Errorf("6 streams announcing 20 MB allocated %d MB", d>>20)
	} else {
		t.Logf("6 streams announcing 20 MB allocated %d KB", d>>10)
	}
	// 200 idle connections.
	start := time.Now()
	var conns []net.Conn
	for range 200 {
		if c, err := net.DialTimeout("tcp", to, time.Second); err == nil {
			conns = append(conns, c)
		}
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	tr := w2.hb.(*mlHB).tr
	deadline := time.Now().Add(5 * time.Second)
	for w2.hb.Stats().StreamsRefused < uint64(200-maxUnauthPerIP) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	tr.mu.Lock()
	waiting := len(tr.unauth)
	tr.mu.Unlock()
	st := w2.hb.Stats()
	t.Logf("200 idle connections: %d waiting, stats %+v", waiting, st)
	if waiting > maxUnauthPerIP || st.StreamsRefused < uint64(200-maxUnauthPerIP) {
		t.Errorf("%d unauthenticated connections waiting, %d refused; want at most %d waiting", waiting, st.StreamsRefused, maxUnauthPerIP)
	}
	if n := countKind(w2, Rejected, "", start); n > 3 {
		t.Errorf("%d Rejected events for 200 connections from one address, want a few", n)
	}
}
