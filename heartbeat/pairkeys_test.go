package heartbeat

import (
	"bytes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"haven/config"
)

// testNodeKey is a fixed key pair of a test member (X25519 takes any 32
// bytes as a private key).
func testNodeKey(tb testing.TB, name string) *ecdh.PrivateKey {
	seed := sha256.Sum256([]byte("haven test node key " + name))
	k, err := ecdh.X25519().NewPrivateKey(seed[:])
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func testMemberKeys(tb testing.TB, ms []config.Member) map[string]*ecdh.PublicKey {
	pubs := map[string]*ecdh.PublicKey{}
	for _, m := range ms {
		pubs[m.Name] = testNodeKey(tb, m.Name).PublicKey()
	}
	return pubs
}

// withNodeKeys gives cfg the test keys of every member, in mode.
func withNodeKeys(tb testing.TB, cfg Config, mode string) Config {
	cfg.NodeKey, cfg.MemberKeys, cfg.NodeKeysMode = testNodeKey(tb, cfg.Node), testMemberKeys(tb, cfg.Members), mode
	return cfg
}

var keyedMembers = []config.Member{{Name: "n1", Addr: "127.0.0.1:7001"}, {Name: "n2", Addr: "127.0.0.1:7002"}, {Name: "n3", Addr: "127.0.0.1:7003"}}

var n1Addr = netip.MustParseAddrPort("127.0.0.1:7001")

// keyedState is the transport without sockets of node in a cluster of
// keyedMembers named cluster, with the test keys in mode ("none": no
// keys at all), and run 7 of every member confirmed.
func keyedState(tb testing.TB, node, mode, cluster string) *secTransport {
	cfg := Config{Node: node, Members: keyedMembers, ClusterName: cluster, Secret: testSecret, Incarnation: 7}
	if mode != "none" {
		cfg = withNodeKeys(tb, cfg, mode)
	}
	tr := stateOf(tb, cfg)
	for _, ps := range tr.peers {
		ps.inc = 7
	}
	return tr
}

// forgeAEAD is the key an insider holding tr's keys derives for frames
// from from to to in run inc with its pair master key with peer.
func forgeAEAD(tr *secTransport, from, to, peer string, inc uint64) cipher.AEAD {
	key, err := hkdf.Expand(sha256.New, tr.keys.pairs.prk[peer], string(tr.keys.pairInfo(from, to, inc)), 32)
	if err != nil {
		panic(err)
	}
	return newGCM(key)
}

// sealFrom is a datagram of run 7 of from to member to, sealed with the
// keys tr holds: from's own, or those of an insider claiming to be from.
func sealFrom(tr *secTransport, from, to string, seq uint64, payload string) []byte {
	a, flag := tr.keys.sendKey(from, to, 7)
	return tr.keys.seal(a, typeDatagram|flag, from, 7, seq, []byte(payload))
}

// An insider holding n2's files (the cluster secret, n2's private key,
// every public key) cannot make n3 accept a frame as n1's: neither sealed
// with the cluster secret alone, nor with a pairwise key it can derive
// (its own with n3, its own with n1), nor n1's frame to n2 sent on to n3.
// Each is refused and counted; n1's own frames still open.
func TestPairKeysInsiderForgery(t *testing.T) {
	n1, n2, n3 := keyedState(t, "n1", ModeRequire, "prod"), keyedState(t, "n2", ModeRequire, "prod"), keyedState(t, "n3", ModeRequire, "prod")
	d := sealFrom(n1, "n1", "n3", 1, "hello")
	if d[2]&typePair == 0 {
		t.Fatal("n1's frame to n3 is not sealed with their pairwise key")
	}
	if p := n3.openDatagram(d, n1Addr); string(p) != "hello" {
		t.Fatalf("n1's own frame: opened %q", p)
	}
	viaN1 := forgeAEAD(n2, "n1", "n3", "n1", 7) // n2's pairwise master key with n1
	forged := map[string][]byte{
		"cluster secret alone":    n2.keys.sealDatagram(typeDatagram, "n1", 7, 2, []byte("forged")),
		"n2's pair key with n3":   n2.keys.seal(forgeAEAD(n2, "n1", "n3", "n3", 7), typeDatagram|typePair, "n1", 7, 3, []byte("forged")),
		"n2's pair key with n1":   n2.keys.seal(viaN1, typeDatagram|typePair, "n1", 7, 4, []byte("forged")),
		"n1's frame to n2 reused": sealFrom(n1, "n1", "n2", 5, "forged"),
	}
	for what, f := range forged {
		if p := n3.openDatagram(f, n1Addr); p != nil {
			t.Errorf("%s: n3 opened %q as n1's", what, p)
		}
	}
	if got := n3.c.stats().NotOwnKey; got != uint64(len(forged)) {
		t.Errorf("NotOwnKey = %d, want %d", got, len(forged))
	}
	if p := n3.openDatagram(sealFrom(n1, "n1", "n3", 6, "still"), n1Addr); string(p) != "still" {
		t.Errorf("n1's frame after the forgeries: opened %q", p)
	}
	// n2's own frames to n3 open: the insider speaks as itself only
	n2as := n3.peers["n2"]
	if p := n3.openDatagram(sealFrom(n2, "n2", "n3", 1, "mine"), netip.MustParseAddrPort(n2as.addr)); string(p) != "mine" {
		t.Errorf("n2's own frame: opened %q", p)
	}
}

// A frame of another run, another cluster or another receiver does not
// open: the pairwise key is bound to the cluster name, both names and the
// sender's incarnation.
func TestPairKeysBinding(t *testing.T) {
	n1, n3 := keyedState(t, "n1", ModeRequire, "prod"), keyedState(t, "n3", ModeRequire, "prod")
	d := sealFrom(n1, "n1", "n3", 1, "x")
	run8 := bytes.Clone(d)
	binary.BigEndian.PutUint64(run8[4+2:], 8) // the header's incarnation
	other := keyedState(t, "n1", ModeRequire, "other")
	a := forgeAEAD(n1, "n1", "n3", "n3", 8) // the right pair, run 8, with run 7's header
	for what, f := range map[string][]byte{
		"incarnation changed": run8,
		"another cluster's":   sealFrom(other, "n1", "n3", 2, "x"),
		"sealed for run 8":    n1.keys.seal(a, typeDatagram|typePair, "n1", 7, 3, []byte("x")),
		"pair flag cleared":   append([]byte{d[0], d[1], d[2] &^ typePair}, d[3:]...),
		"shared frame flagged": func() []byte {
			f := n1.keys.sealDatagram(typeDatagram, "n1", 7, 4, []byte("x"))
			f[2] |= typePair
			return f
		}(),
		"pair key of n1 and n2": n1.keys.seal(forgeAEAD(n1, "n1", "n3", "n2", 7), typeDatagram|typePair, "n1", 7, 5, []byte("x")),
	} {
		if p := n3.openDatagram(f, n1Addr); p != nil {
			t.Errorf("%s: opened %q", what, p)
		}
	}
	if p := n3.openDatagram(d, n1Addr); string(p) != "x" {
		t.Errorf("the frame itself: opened %q", p)
	}
}

// The modes in every pair of sender and receiver: the three steps of
// turning keys on (none -> accept -> send -> require), one node at a time,
// keep every pair of neighbouring steps talking both ways; a jump over a
// step does not.
func TestPairKeysModes(t *testing.T) {
	modes := []string{"none", ModeAccept, ModeSend, ModeRequire}
	want := map[[2]string]bool{}
	for i, from := range modes {
		for j, to := range modes {
			pair := i >= 2 // send and require seal with the pairwise key
			want[[2]string{from, to}] = (pair && j >= 1) || (!pair && j <= 2)
		}
	}
	for i, from := range modes {
		for j, to := range modes {
			if d := i - j; d >= -1 && d <= 1 && !want[[2]string{from, to}] {
				t.Fatalf("neighbouring steps %s -> %s would not talk", from, to)
			}
			n1, n3 := keyedState(t, "n1", from, "prod"), keyedState(t, "n3", to, "prod")
			got := n3.openDatagram(sealFrom(n1, "n1", "n3", 1, "x"), n1Addr) != nil
			if got != want[[2]string{from, to}] {
				t.Errorf("n1 in %s -> n3 in %s: accepted %v, want %v", from, to, got, !got)
			}
		}
	}
}

// A member whose key this node lacks (a migration half done) gets its
// pairwise frames refused with a reason, not opened with another key.
func TestPairKeysMissingKey(t *testing.T) {
	n1 := keyedState(t, "n1", ModeSend, "prod")
	cfg := withNodeKeys(t, Config{Node: "n3", Members: keyedMembers, ClusterName: "prod", Secret: testSecret}, ModeAccept)
	delete(cfg.MemberKeys, "n1")
	n3 := stateOf(t, cfg)
	n3.peers["n1"].inc = 7
	h, _, _ := parseHeader(sealFrom(n1, "n1", "n3", 1, "x"))
	if _, err := n3.keys.openKey(h, "n3"); !errors.Is(err, errNotOwnKey) || !strings.Contains(err.Error(), "no key pair with n1") {
		t.Errorf("openKey: %v", err)
	}
	if p := n3.openDatagram(sealFrom(n1, "n1", "n3", 2, "x"), n1Addr); p != nil || n3.c.stats().NotOwnKey != 1 {
		t.Errorf("opened %q, NotOwnKey %d", p, n3.c.stats().NotOwnKey)
	}
}

// Streams: an insider's open record as n1 is refused and counted; n1's
// own opens, and the reply is sealed with the pairwise key too.
func TestPairKeysStreams(t *testing.T) {
	n1, n2, n3 := keyedState(t, "n1", ModeRequire, "prod"), keyedState(t, "n2", ModeRequire, "prod"), keyedState(t, "n3", ModeRequire, "prod")
	stream := func(k *keyring, seq uint64) []byte {
		var out bytes.Buffer
		d := dialerAs(k, "n1", 7, "n3")
		d.seq.Store(seq - 1)
		c := d.newDialed(pipeConn{}, "n3")
		c.Conn = writeConn{&out}
		c.Write([]byte("push"))
		return out.Bytes()
	}
	for _, f := range [][]byte{stream(n2.keys, 1), append(stream(n2.keys, 2)[:2:2], append([]byte{typeOpen}, stream(n2.keys, 2)[3:]...)...)} {
		sc, err := n3.openStream(pipeConn{r: bytes.NewReader(f)}, n1Addr)
		if sc != nil || !errors.Is(err, errNotOwnKey) && !errors.Is(err, errAuth) {
			t.Errorf("forged stream: %v, %v", sc, err)
		}
	}
	if n3.c.stats().NotOwnKey != 2 {
		t.Errorf("NotOwnKey %d, want 2", n3.c.stats().NotOwnKey)
	}
	sc, err := n3.openStream(pipeConn{r: bytes.NewReader(stream(n1.keys, 3))}, n1Addr)
	if sc == nil {
		t.Fatalf("n1's stream refused: %v", err)
	}
	if got, _ := io.ReadAll(sc); string(got) != "push" {
		t.Errorf("n1's stream read %q", got)
	}
	if sc.whdr[2] != typeAccept|typePair {
		t.Errorf("n3's reply header type %#x, want the pairwise accept", sc.whdr[2])
	}
}

// Config.validate refuses keys that do not fit the members.
func TestPairKeysConfig(t *testing.T) {
	base := withNodeKeys(t, Config{Node: "n1", Members: keyedMembers, ClusterName: "prod", Secret: testSecret}, "")
	for what, tweak := range map[string]func(c *Config){
		"not a member":         func(c *Config) { c.MemberKeys["n9"] = testNodeKey(t, "n9").PublicKey() },
		"not this node's key":  func(c *Config) { c.NodeKey = testNodeKey(t, "n2") },
		"no private key":       func(c *Config) { c.NodeKey = nil },
		"member without a key": func(c *Config) { delete(c.MemberKeys, "n3") },
		"unknown mode":         func(c *Config) { c.NodeKeysMode = "on" },
	} {
		c := base
		c.MemberKeys = testMemberKeys(t, keyedMembers)
		tweak(&c)
		s, err := c.validate()
		if err == nil {
			_, err = newSecState(s, newCore(s))
		}
		if err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	c := base
	delete(c.MemberKeys, "n3")
	c.NodeKeysMode = ModeSend
	if _, err := c.validate(); err != nil {
		t.Errorf("a member without a key in the send step: %v", err)
	}
}

// FuzzPairEnvelope: hostile bytes to a node in the require mode never
// panic, and nothing but the frames n1 sealed for it opens as n1's.
func FuzzPairEnvelope(f *testing.F) {
	n1, n2 := keyedState(f, "n1", ModeRequire, "prod"), keyedState(f, "n2", ModeRequire, "prod")
	genuine := sealFrom(n1, "n1", "n3", 3, "memberlist packet")
	f.Add(genuine)
	f.Add(sealFrom(n2, "n1", "n3", 4, "forged"))
	f.Add(n2.keys.sealDatagram(typeDatagram, "n1", 7, 5, []byte("forged")))
	f.Add([]byte{envMagic, envVersion, typeDatagram | typePair, 2, 'n', '1'})
	f.Fuzz(func(t *testing.T, b []byte) {
		n3 := keyedState(t, "n3", ModeRequire, "prod")
		if p := n3.openDatagram(b, n1Addr); p != nil && !bytes.Equal(b, genuine) {
			t.Fatalf("forged datagram opened: %q", p)
		}
		n3.openStream(pipeConn{r: bytes.NewReader(b)}, n1Addr)
	})
}

// The insider attack on the real transport: three heartbeats on loopback
// with per-node keys. An insider holding n2's files (the cluster secret,
// n2's private key, the public keys) sends n3 a full copy claiming to be
// n1, from n1's own address and port, under n1's incarnation and with
// sequence numbers n1 has not used: sealed with the secret alone (what
// any member could do without keys, and n3 accepted), and with each
// pairwise key it can derive. n3 refuses and counts every one, n1's data
// at n3 is untouched and n1 stays up.
func TestPairKeysForgedFrameOnRealTransport(t *testing.T) {
	t.Parallel()
	ms := loopMembers(t, 3)
	ws := map[string]*watcher{}
	for _, m := range ms {
		ws[m.Name] = watch(t, withNodeKeys(t, loopConfig(ms, m.Name, nil), ModeRequire))
		ws[m.Name].hb.Publish(svcNode(m.Name, 1, "web"))
	}
	w3 := ws["n3"]
	if _, ok := w3.find(5*time.Second, isKind(Data, "n1")); !ok {
		t.Fatal("n3 never heard n1")
	}
	ins := stateOf(t, withNodeKeys(t, loopConfig(ms, "n2", nil), ModeRequire)) // n2's files, no sockets
	tr1 := ws["n1"].hb.(*mlHB).tr
	inc := tr1.inc // on the wire in every header of n1
	forged := svcNode("n1", 1000, "forged-by-n2")
	msg := append([]byte{mlUserMsg}, encode(&message{V: 1, Kind: kindFull, From: "n1", Inc: inc, Gen: 1000, Node: &forged, N: 1 << 40})...)
	frames := [][]byte{
		ins.keys.sealDatagram(typeDatagram, "n1", inc, tr1.nextSeq(), msg),
		ins.keys.seal(forgeAEAD(ins, "n1", "n3", "n3", inc), typeDatagram|typePair, "n1", inc, tr1.nextSeq(), msg),
		ins.keys.seal(forgeAEAD(ins, "n1", "n3", "n1", inc), typeDatagram|typePair, "n1", inc, tr1.nextSeq(), msg),
	}
	_, port, _ := splitHostPort(ms[0].Addr)
	u, err := listenUDPShared(net.ParseIP("127.0.0.1"), port) // beside n1's socket (SO_REUSEPORT)
	if err != nil {
		t.Fatal(err)
	}
	before := w3.hb.Stats().NotOwnKey
	for _, f := range frames {
		if _, err := u.WriteToUDPAddrPort(f, netip.MustParseAddrPort(ms[2].Addr)); err != nil {
			t.Fatal(err)
		}
	}
	u.Close()
	isForged := func(ev Event) bool {
		if ev.Kind != Data || ev.Node != "n1" || ev.Data == nil {
			return false
		}
		_, bad := ev.Data.Services["forged-by-n2"]
		return bad
	}
	// until n3 judged the three frames: counted as refused, or (the
	// failure) one taken as n1's data. find polls its events, the one of
	// n1's data found above among them, so the count is read at each poll.
	w3.find(5*time.Second, func(ev Event) bool {
		return isForged(ev) || w3.hb.Stats().NotOwnKey-before >= uint64(len(frames))
	})
	if _, bad := w3.find(0, isForged); bad {
		t.Fatal("n3 took the insider's frame as n1's data")
	}
	if got := w3.hb.Stats().NotOwnKey - before; got != uint64(len(frames)) {
		t.Fatalf("n3 counted %d frames not sealed with their sender's key, want %d", got, len(frames))
	}
	if _, ok := w3.find(0, func(ev Event) bool {
		return ev.Kind == Rejected && strings.Contains(ev.Reason, `claiming to be "n1"`) && strings.Contains(ev.Reason, "not sealed with its sender's node key")
	}); !ok {
		t.Error("no Rejected event says why")
	}
	if p := peerOf(t, w3.hb, "n1"); !p.Up {
		t.Error("n3 no longer sees n1 up")
	}
}

// BenchmarkBeatEnvelope: the envelope's cost for one beat (340 bytes on
// the wire: sealed by its sender, opened by its receiver), with the key
// of the cluster secret and with a pairwise key (the same AES-256-GCM once
// the key of the run is derived), against the per-node signature that was
// not chosen (Ed25519 on top of the secret's seal: a signature by the
// sender, a verification by the receiver).
func BenchmarkBeatEnvelope(b *testing.B) {
	p := make([]byte, 300)
	run := func(b *testing.B, n1, n3 *secTransport, sign func([]byte) []byte, verify func([]byte) bool) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i%windowSize == 0 {
				n3.peers["n1"].dgram = window{}
			}
			q := p
			if sign != nil {
				q = sign(p)
			}
			got := n3.openDatagram(sealFrom(n1, "n1", "n3", uint64(i%windowSize+1), string(q)), n1Addr)
			if got == nil || verify != nil && !verify(got) {
				b.Fatal("refused")
			}
		}
	}
	b.Run("secret", func(b *testing.B) {
		run(b, keyedState(b, "n1", "none", "prod"), keyedState(b, "n3", "none", "prod"), nil, nil)
	})
	b.Run("pairwise", func(b *testing.B) {
		run(b, keyedState(b, "n1", ModeRequire, "prod"), keyedState(b, "n3", ModeRequire, "prod"), nil, nil)
	})
	b.Run("ed25519", func(b *testing.B) {
		pub, priv, _ := ed25519.GenerateKey(nil)
		sign := func(m []byte) []byte { return append(bytes.Clone(m), ed25519.Sign(priv, m)...) }
		verify := func(m []byte) bool {
			return len(m) > ed25519.SignatureSize && ed25519.Verify(pub, m[:len(m)-ed25519.SignatureSize], m[len(m)-ed25519.SignatureSize:])
		}
		run(b, keyedState(b, "n1", "none", "prod"), keyedState(b, "n3", "none", "prod"), sign, verify)
	})
}

// BenchmarkNodeKeysStart: what a node does once at start for per-node
// keys in a cluster of 32 members (32 X25519 agreements and extractions),
// and once per new run of a peer (the derivation of its pairwise key).
func BenchmarkNodeKeysStart(b *testing.B) {
	ms := make([]config.Member, 32)
	for i := range ms {
		ms[i] = config.Member{Name: fmt.Sprintf("n%d", i+1), Addr: fmt.Sprintf("127.0.0.1:%d", 7001+i)}
	}
	priv, pubs := testNodeKey(b, "n1"), testMemberKeys(b, ms)
	b.Run("agree32", func(b *testing.B) {
		for b.Loop() {
			k, _ := newKeyring(make([]byte, 32), "prod")
			if err := k.setNodeKeys("n1", priv, pubs, ModeRequire); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("newrun", func(b *testing.B) {
		k, _ := newKeyring(make([]byte, 32), "prod")
		if err := k.setNodeKeys("n1", priv, pubs, ModeRequire); err != nil {
			b.Fatal(err)
		}
		for i := 0; b.Loop(); i++ {
			k.pairAEAD("n2", "n1", uint64(i+1))
		}
	})
}
