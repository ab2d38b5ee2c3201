package disk

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Per-node keys on the disk (pair.go): the blocks of a writer whose key
// the reader lists are taken only with a tag only the writer and that
// reader derive. The attacker of these tests holds n2's files: the
// cluster secret, n2's private key, every public key.

var (
	nodeKeysOnce sync.Once
	nodePrivs    map[string]*ecdh.PrivateKey
)

// testNodeKeys are a key pair per member (made once per test binary).
func testNodeKeys(t testing.TB) (map[string]*ecdh.PrivateKey, map[string]*ecdh.PublicKey) {
	nodeKeysOnce.Do(func() {
		nodePrivs = map[string]*ecdh.PrivateKey{}
		for _, n := range []string{"n1", "n2", "n3"} {
			k, err := ecdh.X25519().GenerateKey(rand.Reader)
			if err != nil {
				panic(err)
			}
			nodePrivs[n] = k
		}
	})
	pubs := map[string]*ecdh.PublicKey{}
	for n, k := range nodePrivs {
		pubs[n] = k.PublicKey()
	}
	return nodePrivs, pubs
}

// keyedKeys are the Keys of node self with its key pair, in mode.
func keyedKeys(t testing.TB, self, mode string) *Keys {
	t.Helper()
	privs, pubs := testNodeKeys(t)
	k, err := NewKeys("prod", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.SetNodeKeys(self, members, privs[self], pubs, mode); err != nil {
		t.Fatal(err)
	}
	return k
}

// withKeys gives a disk its node's key pair and every member's public key.
func withKeys(mode string) func(*Config) {
	return func(c *Config) {
		privs, pubs := testNodeKeys(nil)
		c.NodeKey, c.MemberKeys, c.NodeKeysMode = privs[c.Node], pubs, mode
	}
}

// TestSlotPairTags: a block tagged by its writer opens for every listed
// reader and for the writer itself; the holder of n2's files writing as
// n1 (the secret alone, its own tags, n1's real tags on another body) is
// refused by n3 with ErrNotOwnKey, in every mode; a block without tags is
// refused in "require" and taken in "accept" and "send" (the migration
// steps); a reader without a key pair, or an earlier release (which reads
// no tag), takes every block sealed with the secret.
func TestSlotPairTags(t *testing.T) {
	n1, n2, n3 := keyedKeys(t, "n1", ""), keyedKeys(t, "n2", ""), keyedKeys(t, "n3", "")
	plain := keys(t, "prod", testSecret)
	bt := Beat{Writer: "n1", Slot: 0, Run: 5, Counter: 9, Time: time.Unix(1, 0), Period: time.Second,
		Fences: []Announce{{Slot: 2, Run: 30, Nonce: [NonceLen]byte{7}}}}
	good := n1.EncodeBeat(bt)
	if good[11] != flagPair {
		t.Fatalf("flags %d: the block of a node with a key pair is not tagged", good[11])
	}
	for name, k := range map[string]*Keys{"n1 (its own slot read back)": n1, "n2": n2, "n3": n3, "no key pair": plain} {
		if _, err := k.DecodeBeat(good, 0); err != nil {
			t.Errorf("%s reading n1's block: %v", name, err)
		}
	}
	f := Fence{Fencer: "n1", Target: "n3", Slot: 2, TargetRun: 30}
	if _, err := n3.DecodeFence(n1.EncodeFence(f), 2); err != nil {
		t.Errorf("n3 reading n1's fence record: %v", err)
	}
	// n1's real tags on another body: the tag covers the header and body
	spliced := n2.EncodeBeat(Beat{Writer: "n1", Slot: 0, Run: 5, Counter: 10, Period: time.Second})
	n := int(binary.BigEndian.Uint16(spliced[12:]))
	gn := int(binary.BigEndian.Uint16(good[12:]))
	copy(spliced[headerLen+n+macLen:], good[headerLen+gn+macLen:headerLen+gn+macLen+n1.pairLen()])
	forged := map[string][]byte{
		"the cluster secret alone":  plain.EncodeBeat(Beat{Writer: "n1", Slot: 0, Run: 5, Counter: 10}),
		"n2's own tags":             n2.EncodeBeat(Beat{Writer: "n1", Slot: 0, Run: 5, Counter: 10}),
		"n1's tags on another body": spliced,
		"a tag flipped": func() []byte {
			b := append([]byte(nil), good...)
			b[headerLen+gn+macLen+1+pairEntryLen*2+5] ^= 1 // n3's entry (slot 2)
			return b
		}(),
	}
	for what, b := range forged {
		if _, err := n3.DecodeBeat(b, 0); !errors.Is(err, ErrNotOwnKey) {
			t.Errorf("%s, n3 in require: %v, want ErrNotOwnKey", what, err)
		}
		if _, err := plain.DecodeBeat(b, 0); err != nil {
			t.Errorf("%s, read without keys (the check off): %v, want taken", what, err)
		}
	}
	if _, err := n3.DecodeFence(n2.EncodeFence(Fence{Fencer: "n1", Target: "n3", Slot: 2, TargetRun: 30}), 2); !errors.Is(err, ErrNotOwnKey) {
		t.Errorf("a fence record in n1's name by n2's files: %v, want ErrNotOwnKey", err)
	}
	// the migration steps take a block without tags, not a bad one
	for _, mode := range []string{ModeAccept, ModeSend} {
		k := keyedKeys(t, "n3", mode)
		if _, err := k.DecodeBeat(forged["the cluster secret alone"], 0); err != nil {
			t.Errorf("mode %s, a block without tags: %v, want taken", mode, err)
		}
		if _, err := k.DecodeBeat(forged["n2's own tags"], 0); !errors.Is(err, ErrNotOwnKey) {
			t.Errorf("mode %s, a bad tag: %v, want ErrNotOwnKey", mode, err)
		}
	}
	if err := plain.SetNodeKeys("n1", members, nodePrivs["n1"], nil, "sometimes"); err == nil {
		t.Error("mode sometimes taken")
	}
}

// TestSlotPairTagsFit: with 32 members listed, the longest names and
// every list full, a tagged beat still fits its block (the echo is cut
// first) and opens.
func TestSlotPairTagsFit(t *testing.T) {
	long := strings.Repeat("x", 60)
	var ms []string
	pubs := map[string]*ecdh.PublicKey{}
	privs := map[string]*ecdh.PrivateKey{}
	for i := range 32 {
		n := long + string(rune('A'+i))
		ms = append(ms, n)
		k, err := ecdh.X25519().GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		privs[n], pubs[n] = k, k.PublicKey()
	}
	k := keys(t, strings.Repeat("c", 255), testSecret)
	if err := k.SetNodeKeys(ms[0], ms, privs[ms[0]], pubs, ""); err != nil {
		t.Fatal(err)
	}
	r := keys(t, strings.Repeat("c", 255), testSecret)
	if err := r.SetNodeKeys(ms[31], ms, privs[ms[31]], pubs, ""); err != nil {
		t.Fatal(err)
	}
	bt := fullestBeat(ms[0])
	got, err := r.DecodeBeat(k.EncodeBeat(bt), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Fences) != maxAnnounce || len(got.Acks) != maxAcks || len(got.Seen) < 31 {
		t.Fatalf("fences %d, acks %d, seen %d: want every fence and ack, and an echo of 31 members at least", len(got.Fences), len(got.Acks), len(got.Seen))
	}
}

// forger writes blocks as the holder of n2's files would (keyed: with
// n2's key pair; else the secret alone, as when nobody has keys).
type forger struct {
	b *attackBed
	k *Keys
}

func newForger(t *testing.T, b *attackBed, keyed bool) *forger {
	k := keys(t, "prod", testSecret)
	if keyed {
		k = keyedKeys(t, "n2", "")
	}
	return &forger{b: b, k: k}
}

// newest is the newest beat in slot, read with the forger's keys (it
// reads every slot: it holds the secret).
func (f *forger) newest(slot int) Beat {
	bt, err := f.k.DecodeBeat(f.b.copyBlock(BeatOffset(slot)), slot)
	if err != nil {
		f.b.t.Fatalf("the forger reads slot %d: %v", slot, err)
	}
	return bt
}

// beatAs writes a beat in the slot of writer (slot ws), newer than what
// the slot holds, echoing the newest block of every slot in echo, with
// the fences and acknowledgements given.
func (f *forger) beatAs(writer string, ws int, counter uint64, echo []int, fences []Announce, acks []Ack) {
	bt := Beat{Writer: writer, Slot: ws, Run: 999, Counter: counter, Time: f.b.clk.Now(), Period: fakePeriod, Guard: GuardStops, Fences: fences, Acks: acks}
	for _, s := range echo {
		r := f.newest(s)
		bt.Seen = append(bt.Seen, Seen{Slot: s, Run: r.Run, Counter: r.Counter})
	}
	f.b.write(f.k.EncodeBeat(bt), BeatOffset(ws))
}

// TestDiskInsiderKeepsDeadNodeAliveRefused: n1 is dead; the holder of
// n2's files writes, every period, a beat as n1 that echoes n3's newest
// block: with per-node keys n3 never counts n1 alive and counts each
// refusal (logged at most once a minute per slot); without keys (the
// check off) n1 is alive on the disk for n3.
func TestDiskInsiderKeepsDeadNodeAliveRefused(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		b := newAttackBed(t)
		mod := func(c *Config) {}
		if keyed {
			mod = withKeys("")
		}
		core, logs := observer.New(zap.WarnLevel)
		live := &fakeLiveness{}
		d1 := b.disk("n1", 10, mod)
		d3 := b.disk("n3", 30, func(c *Config) { mod(c); c.Liveness, c.Logger = live, zap.New(core) })
		for range 3 {
			b.period(d1, d3)
		}
		d1.halt() // n1's host is gone
		before := live.count("n1/disk")
		fg := newForger(t, b, keyed)
		for i := range 20 {
			d3.writeRound()
			fg.beatAs("n1", 0, uint64(100+i), []int{2}, nil, nil)
			d3.readRound()
			b.clk.Advance(fakePeriod)
		}
		alive := live.count("n1/disk") - before
		p, _ := d3.Peer("n1")
		if !keyed {
			if alive == 0 {
				t.Fatal("without keys the forged beats did not keep n1 alive: the test shows nothing")
			}
			continue
		}
		if alive != 0 {
			t.Fatalf("n3 counted n1 alive %d times from n2's forgeries", alive)
		}
		if !strings.Contains(p.Err, "not authenticated with its writer's node key") {
			t.Fatalf("n1's slot as n3 reads it: %+v", p)
		}
		if got := d3.NotOwnKey(); got != 20 {
			t.Fatalf("NotOwnKey %d, want 20 (one per read)", got)
		}
		if n := logs.FilterMessageSnippet("a peer's slot is unreadable").Len(); n != 1 {
			t.Fatalf("%d logs of the refusals within 10 s, want 1 (once a minute per slot)", n)
		}
	}
}

// TestDiskInsiderFenceInAnotherNamesRefused: the holder of n2's files
// writes a beat as n1 announcing a fence of n3's current run, echoing
// n3's newest block: with per-node keys n3 never obeys it; without keys
// (the check off) n3 obeys it (runs its crash_command).
func TestDiskInsiderFenceInAnotherNamesRefused(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		b := newAttackBed(t)
		mod := func(c *Config) {}
		if keyed {
			mod = withKeys("")
		}
		fenced := make(chan Fence, 4)
		d1 := b.disk("n1", 10, mod)
		d3 := b.disk("n3", 30, func(c *Config) { mod(c); c.OnFenced = func(f Fence) { fenced <- f } })
		for range 3 {
			b.period(d1, d3)
		}
		fg := newForger(t, b, keyed)
		for i := range 6 {
			d1.writeRound()
			d3.writeRound()
			// after n1's write, before n3's read: n1's slot holds the forgery
			fg.beatAs("n1", 0, uint64(1000+i), []int{2}, []Announce{{Slot: 2, Run: 30, Nonce: [NonceLen]byte{4, 2}}}, nil)
			d3.readRound()
			d1.readRound()
			b.clk.Advance(fakePeriod)
		}
		var got []Fence
		for len(fenced) > 0 {
			got = append(got, <-fenced)
		}
		if !keyed {
			if len(got) == 0 {
				t.Fatal("without keys n3 did not obey the forged fence: the test shows nothing")
			}
			continue
		}
		if len(got) != 0 {
			t.Fatalf("n3 obeyed a fence forged in n1's name by n2's files: %+v", got)
		}
		if d3.NotOwnKey() == 0 {
			t.Fatal("n3 did not count the forgeries")
		}
	}
}

// TestDiskInsiderAckInAnotherNamesRefused: n1 fences n3 (n3 is cut off,
// its services may run: it never acknowledges); the holder of n2's files
// reads the fence's nonce in n1's beat and writes a beat as n3
// acknowledging it, echoing n1's newest block. With per-node keys the
// fence never ends on it (no takeover while n3 may run its services);
// without keys (the check off) it ends "acknowledged by n3".
func TestDiskInsiderAckInAnotherNamesRefused(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		b := newAttackBed(t)
		mod := func(c *Config) {}
		if keyed {
			mod = withKeys("")
		}
		d1 := b.disk("n1", 10, mod)
		d3 := b.disk("n3", 30, mod)
		for range 3 {
			b.period(d1, d3)
		}
		d3.halt() // n3 no longer writes the disk (it cannot, or it hangs)
		fg := newForger(t, b, keyed)
		res := fence(t, d1, "n3", time.Hour)
		b.period(d1) // the fence is announced in n1's beat
		var ann []Announce
		for range 3 {
			if ann = fg.newest(0).Fences; len(ann) > 0 {
				break
			}
			b.period(d1)
		}
		if len(ann) != 1 || ann[0].Slot != 2 {
			t.Fatalf("n1's beat announces %+v", ann)
		}
		var r fenceResult
		var ok bool
		for i := 0; i < 6 && !ok; i++ {
			d1.writeRound()
			fg.beatAs("n3", 2, uint64(1000+i), []int{0}, nil, []Ack{{Slot: 0, Nonce: ann[0].Nonce}})
			d1.readRound()
			b.clk.Advance(fakePeriod)
			r, ok = ended(t, res)
		}
		if !keyed {
			if !ok || !strings.Contains(r.how, "acknowledged by n3") {
				t.Fatalf("without keys the forged acknowledgement did not end the fence (%+v, %v): the test shows nothing", r, ok)
			}
			continue
		}
		if ok {
			t.Fatalf("the fence of n3 ended on an acknowledgement forged by n2's files: %+v", r)
		}
		if p, _ := d1.Peer("n3"); !strings.Contains(p.Err, "not authenticated with its writer's node key") {
			t.Fatalf("n3's slot as n1 reads it: %+v", p)
		}
	}
}

// TestDiskInsiderRewritesOwnSlotAsItsOwner: n2's files write n1's slot as
// n1 (counter and run of n1's last write): with keys, n1 reads its slot
// back refused for its key, counts its disk lost (someone writes its
// slot) and counts the refusal.
func TestDiskInsiderRewritesOwnSlotAsItsOwner(t *testing.T) {
	b := newAttackBed(t)
	d1 := b.disk("n1", 10, withKeys(""))
	d3 := b.disk("n3", 30, withKeys(""))
	for range 3 {
		b.period(d1, d3)
	}
	fg := newForger(t, b, true)
	d1.writeRound()
	own := fg.newest(0)
	own.Time = b.clk.Now()
	b.write(fg.k.EncodeBeat(own), BeatOffset(0))
	d1.readRound()
	if d1.Reachable() || d1.NotOwnKey() != 1 {
		t.Fatalf("n1 reachable %v, not own key %d: want its disk lost and the block counted", d1.Reachable(), d1.NotOwnKey())
	}
}

// BenchmarkSlotTags: what per-node keys cost on the disk. A writer seals
// its beat (one tag per reader: 3 or 32 members), a reader opens a beat
// (the secret's MAC and its own tag), against the same without keys, and
// against an Ed25519 verification of the block, the alternative.
func BenchmarkSlotTags(b *testing.B) {
	for _, n := range []int{3, 32} {
		var ms []string
		pubs := map[string]*ecdh.PublicKey{}
		privs := map[string]*ecdh.PrivateKey{}
		for i := range n {
			name := "node" + string(rune('a'+i/26)) + string(rune('a'+i%26))
			ms = append(ms, name)
			k, _ := ecdh.X25519().GenerateKey(rand.Reader)
			privs[name], pubs[name] = k, k.PublicKey()
		}
		w, _ := NewKeys("prod", testSecret)
		r, _ := NewKeys("prod", testSecret)
		plain, _ := NewKeys("prod", testSecret)
		if err := w.SetNodeKeys(ms[0], ms, privs[ms[0]], pubs, ""); err != nil {
			b.Fatal(err)
		}
		if err := r.SetNodeKeys(ms[1], ms, privs[ms[1]], pubs, ""); err != nil {
			b.Fatal(err)
		}
		bt := Beat{Writer: ms[0], Slot: 0, Run: 1, Counter: 1, Period: time.Second}
		for i := 1; i < n; i++ {
			bt.Seen = append(bt.Seen, Seen{Slot: i, Run: 7, Counter: 99})
		}
		name := func(s string) string { return s + "/members=" + string(rune('0'+n/10)) + string(rune('0'+n%10)) }
		b.Run(name("seal-keyed"), func(b *testing.B) {
			for b.Loop() {
				w.EncodeBeat(bt)
			}
		})
		b.Run(name("seal-secret"), func(b *testing.B) {
			for b.Loop() {
				plain.EncodeBeat(bt)
			}
		})
		blk := w.EncodeBeat(bt)
		pblk := plain.EncodeBeat(bt)
		b.Run(name("open-keyed"), func(b *testing.B) {
			for b.Loop() {
				if _, err := r.DecodeBeat(blk, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name("open-secret"), func(b *testing.B) {
			for b.Loop() {
				if _, err := plain.DecodeBeat(pblk, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		// the alternative not taken: an Ed25519 signature of the block,
		// verified by every reader
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		sig := ed25519.Sign(priv, pblk[:BlockSize-64])
		b.Run(name("open-secret+ed25519"), func(b *testing.B) {
			for b.Loop() {
				if _, err := plain.DecodeBeat(pblk, 0); err != nil {
					b.Fatal(err)
				}
				if !ed25519.Verify(pub, pblk[:BlockSize-64], sig) {
					b.Fatal("signature")
				}
			}
		})
	}
}

// FuzzDecodePair: hostile bytes in the tags (their flag, count, slots and
// tags) never panic, and never open for a keyed reader unless tagged with
// the writer's key: only the seed's own block may decode.
func FuzzDecodePair(f *testing.F) {
	n1 := keyedKeys(f, "n1", "")
	n3 := keyedKeys(f, "n3", "")
	good := n1.EncodeBeat(Beat{Writer: "n1", Run: 1, Counter: 1})
	f.Add(good)
	f.Add(n1.EncodeFence(Fence{Fencer: "n1", Target: "n3", Slot: 2}))
	cut := append([]byte(nil), good...)
	n := int(binary.BigEndian.Uint16(cut[12:]))
	cut[headerLen+n+macLen] = 0xff // a count past the block
	f.Add(cut)
	f.Fuzz(func(t *testing.T, b []byte) {
		if bt, err := n3.DecodeBeat(b, 0); err == nil && bt.Writer == "n1" && string(b) != string(good) {
			// a block that differs from the seed in its header or body
			// must not carry a valid tag of n1 for n3
			m := int(binary.BigEndian.Uint16(b[12:]))
			if string(b[:headerLen+m]) != string(good[:headerLen+n]) {
				t.Fatalf("a block not written by n1 opened as n1's: %x", b[:64])
			}
		}
		n3.DecodeFence(b, 2)
	})
}

// TestSlotPairTagsBounded: per-node keys are refused past maxTagged
// members (the block could not hold the tags), and at that bound the
// fullest beat still fits and opens.
func TestSlotPairTagsBounded(t *testing.T) {
	long := strings.Repeat("y", 250)
	ms, pubs, first := keyedMembers(t, maxTagged+1, func(i int) string { return long + string(rune('A'+i/26)) + string(rune('a'+i%26)) })
	k := keys(t, strings.Repeat("c", 255), testSecret)
	if err := k.SetNodeKeys(ms[0], ms, first, pubs, ""); err == nil {
		t.Fatalf("%d members tagged", len(ms))
	}
	ms = ms[:maxTagged]
	if err := k.SetNodeKeys(ms[0], ms, first, pubs, ""); err != nil {
		t.Fatal(err)
	}
	bt := fullestBeat(ms[0])
	got, err := k.DecodeBeat(k.EncodeBeat(bt), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Fences) != maxAnnounce || len(got.Acks) != maxAcks || len(got.Seen) == 0 {
		t.Fatalf("fences %d, acks %d, seen %d", len(got.Fences), len(got.Acks), len(got.Seen))
	}
	t.Logf("at %d members tagged, names of 252 bytes: an echo of %d slots", maxTagged, len(got.Seen))
}

// TestNewRefusesTooManyTaggedMembers: New refuses per-node keys past
// maxTagged members as a ConfigError (the daemon does not retry it) and
// opens nothing.
func TestNewRefusesTooManyTaggedMembers(t *testing.T) {
	ms, pubs, first := keyedMembers(t, maxTagged+1, func(i int) string { return fmt.Sprintf("n%02d", i) })
	opened := false
	cfg := Config{Path: "/nonexistent", Node: ms[0], Members: ms, Cluster: "prod", Secret: testSecret, Run: 1,
		Interval: period, Timeout: 200 * time.Millisecond, NodeKey: first, MemberKeys: pubs,
		Open: func(string) (Device, error) { opened = true; return nil, errors.New("not reached") }}
	_, err := New(cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "at most 64 members, 65 listed") || opened {
		t.Fatalf("65 members with keys: %v (a ConfigError: %v), device opened: %v", err, ce != nil, opened)
	}
	cfg.Members = ms[:maxTagged]
	if _, err := New(cfg); errors.As(err, &ce) || !opened {
		t.Fatalf("%d members: %v (opened: %v)", maxTagged, err, opened)
	}
}

// keyedMembers makes n members named by name, each with a key pair: their
// names, their public keys, and the first one's private key.
func keyedMembers(t *testing.T, n int, name func(int) string) ([]string, map[string]*ecdh.PublicKey, *ecdh.PrivateKey) {
	t.Helper()
	var ms []string
	pubs := map[string]*ecdh.PublicKey{}
	var first *ecdh.PrivateKey
	for i := range n {
		m := name(i)
		ms = append(ms, m)
		k, err := ecdh.X25519().GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pubs[m] = k.PublicKey()
		if i == 0 {
			first = k
		}
	}
	return ms, pubs, first
}

// fullestBeat is the beat of writer (slot 0) with every list at its
// bound: an echo of maxSeen slots, maxAnnounce fences and acks.
func fullestBeat(writer string) Beat {
	bt := Beat{Writer: writer, Slot: 0, Run: 1, Counter: 1}
	for i := range maxSeen {
		bt.Seen = append(bt.Seen, Seen{Slot: i, Run: 1, Counter: 1})
	}
	for i := range maxAnnounce {
		bt.Fences = append(bt.Fences, Announce{Slot: i, Run: 1})
		bt.Acks = append(bt.Acks, Ack{Slot: i})
	}
	return bt
}
