package heartbeat

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"haven/config"
)

func TestWindow(t *testing.T) {
	var w window
	accept := func(seq uint64) bool {
		if !w.fresh(seq) {
			return false
		}
		w.mark(seq)
		return true
	}
	for _, c := range []struct {
		seq  uint64
		want bool
	}{{0, false}, {5, true}, {5, false}, {3, true}, {3, false}, {2000, true}, {1000, true}, {1000, false}, {976, false},
		{977, true}, {1999, true}, {2000, false}, {1999, false}, {5000, true}, {2000, false}, {4000, true}} {
		if got := accept(c.seq); got != c.want {
			t.Errorf("seq %d: accepted %v, want %v", c.seq, got, c.want)
		}
	}
}

// fuzzTransport is a transport without sockets: n2's receive path, with
// n1's run 7 confirmed.
func fuzzTransport(tb testing.TB) (*secTransport, *keyring) {
	ms := []config.Member{{Name: "n1", Addr: "127.0.0.1:7001"}, {Name: "n2", Addr: "127.0.0.1:7002"}}
	tr := stateOf(tb, Config{Node: "n2", Members: ms, ClusterName: "prod", Secret: testSecret})
	tr.peers["n1"].inc = 7
	return tr, tr.keys
}

// stateOf is the transport of cfg without its sockets.
func stateOf(tb testing.TB, cfg Config) *secTransport {
	s, err := cfg.validate()
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := newSecState(s, newCore(s))
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

// pipeConn is a net.Conn reading from a buffer.
type pipeConn struct {
	net.Conn
	r io.Reader
}

func (c pipeConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c pipeConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c pipeConn) Close() error                     { return nil }
func (c pipeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (c pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c pipeConn) SetWriteDeadline(time.Time) error { return nil }
func (c pipeConn) SetDeadline(time.Time) error      { return nil }

// sealedStream is the bytes n1's run 7 writes on a stream it opened.
func sealedStream(k *keyring, seq uint64, writes ...[]byte) []byte {
	var out bytes.Buffer
	n1 := dialerAs(k, "n1", 7, "n2")
	n1.seq.Store(seq - 1)
	c := n1.newDialed(pipeConn{}, "n2")
	c.Conn = writeConn{&out}
	for _, w := range writes {
		c.Write(w)
	}
	return out.Bytes()
}

// dialerAs is a transport without sockets that opens streams to member to
// as run inc of name, sealed with the keys of k (its pairwise key to to
// when k has one).
func dialerAs(k *keyring, name string, inc uint64, to string) *secTransport {
	a, flag := k.sendKey(name, to, inc)
	return &secTransport{node: name, inc: inc, keys: k, self: k.aead(name, inc), to: map[string]sendKey{to: {a, flag}}}
}

type writeConn struct{ w io.Writer }

func (c writeConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c writeConn) Write(b []byte) (int, error)      { return c.w.Write(b) }
func (c writeConn) Close() error                     { return nil }
func (c writeConn) LocalAddr() net.Addr              { return nil }
func (c writeConn) RemoteAddr() net.Addr             { return nil }
func (c writeConn) SetReadDeadline(time.Time) error  { return nil }
func (c writeConn) SetWriteDeadline(time.Time) error { return nil }
func (c writeConn) SetDeadline(time.Time) error      { return nil }

// FuzzEnvelope feeds hostile bytes to the receive path of datagrams and of
// streams: it never panics, and only the bytes n1 sealed open.
func FuzzEnvelope(f *testing.F) {
	_, k := fuzzTransport(f)
	dgram := k.sealDatagram(typeDatagram, "n1", 7, 3, []byte("memberlist packet"))
	plain := append([]byte("push"), bytes.Repeat([]byte("x"), recordMax+10)...)
	stream := sealedStream(k, 9, plain[:4], plain[4:])
	f.Add(dgram)
	f.Add(stream)
	f.Add(k.sealDatagram(typeChallenge, "n1", 7, 4, make([]byte, challenge)))
	f.Add([]byte{envMagic, envVersion, typeOpen, 2, 'n', '1'})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _ := fuzzTransport(t)
		src := netip.MustParseAddrPort("127.0.0.1:7001")
		if p := tr.openDatagram(b, src); p != nil && !bytes.Equal(b, dgram) {
			t.Fatalf("forged datagram opened: %q", p)
		}
		sc, _ := tr.openStream(pipeConn{r: bytes.NewReader(b)}, src)
		if sc == nil {
			return
		}
		got, _ := io.ReadAll(io.LimitReader(sc, streamMax+1))
		if !bytes.HasPrefix(plain, got) {
			// Only n1's records authenticate, in their order.
			t.Fatalf("forged stream opened: %d bytes", len(got))
		}
	})
}

// TestEnvelopeRoundTrip: what one side seals the other opens, once.
func TestEnvelopeRoundTrip(t *testing.T) {
	tr, k := fuzzTransport(t)
	src := netip.MustParseAddrPort("127.0.0.1:7001")
	d := k.sealDatagram(typeDatagram, "n1", 7, 3, []byte("hello"))
	if p := tr.openDatagram(d, src); string(p) != "hello" {
		t.Fatalf("opened %q", p)
	}
	if p := tr.openDatagram(d, src); p != nil {
		t.Fatal("a replayed datagram opened twice")
	}
	if p := tr.openDatagram(k.sealDatagram(typeDatagram, "n1", 7, 4, []byte("x")), netip.MustParseAddrPort("127.0.0.1:7009")); p != nil {
		t.Fatal("a datagram from the wrong port opened")
	}
	big := bytes.Repeat([]byte("0123456789"), recordMax/5)
	s := sealedStream(k, 10, []byte("push"), big)
	sc, err := tr.openStream(pipeConn{r: bytes.NewReader(s)}, src)
	if sc == nil {
		t.Fatalf("stream refused: %v", err)
	}
	got, err := io.ReadAll(sc)
	if err != nil || !bytes.Equal(got, append([]byte("push"), big...)) {
		t.Fatalf("stream read %d bytes, %v", len(got), err)
	}
	if sc, _ := tr.openStream(pipeConn{r: bytes.NewReader(s)}, src); sc != nil {
		t.Fatal("a replayed stream opened twice")
	}
	// A stream cut mid-record fails; a record swapped with another fails.
	s2 := sealedStream(k, 20, []byte("a"), []byte("b"))
	sc, _ = tr.openStream(pipeConn{r: bytes.NewReader(s2[:len(s2)-3])}, src)
	if _, err := io.ReadAll(sc); err == nil {
		t.Fatal("a truncated stream read without error")
	}
	if st := tr.c.stats(); st.Replayed != 2 {
		t.Errorf("replays counted %d, want 2", st.Replayed)
	}
}

// Overhead and cost of the envelope, per datagram.
func BenchmarkSealDatagram(b *testing.B) {
	_, k := fuzzTransport(b)
	p := make([]byte, 1200)
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		k.sealDatagram(typeDatagram, "n1", 7, uint64(i+1), p)
	}
	b.ReportMetric(float64(len(k.sealDatagram(typeDatagram, "n1", 7, 1, p))-len(p)), "overhead-bytes")
}

func BenchmarkOpenDatagram(b *testing.B) {
	tr, k := fuzzTransport(b)
	src := netip.MustParseAddrPort("127.0.0.1:7001")
	p := make([]byte, 1200)
	b.SetBytes(int64(len(p)))
	frames := make([][]byte, 4096)
	for i := range frames {
		frames[i] = k.sealDatagram(typeDatagram, "n1", 7, uint64(i+1), p)
	}
	for i := 0; b.Loop(); i++ {
		if i%len(frames) == 0 {
			tr.peers["n1"].dgram = window{} // reuse the frames
		}
		if tr.openDatagram(frames[i%len(frames)], src) == nil {
			b.Fatal("refused")
		}
	}
}
