package heartbeat

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// The envelope: every byte the real transport accepts is authenticated
// before memberlist parses it (memberlist's own encryption and label are
// off). Wire format, all integers big-endian:
//
//	header  = magic 'H' | version 1 | type | name length | name | inc (8) | seq (8)
//	datagram = header | AES-256-GCM(payload)
//	stream   = header | record | record ...   (first direction: open, reply: accept)
//	record   = length (4) | AES-256-GCM(at most recordMax bytes)
//
// The key of a frame is HKDF-SHA256 of the cluster secret, expanded for the
// cluster name, the sender's name and its incarnation: one key per run of a
// sender; with per-node keys, the pairwise key of the sender and the
// receiver, flagged by typePair in the type byte (pairkeys.go). The nonce is the sequence number and the record index, unique
// within a run. The associated data is the header (magic, version, type,
// sender, incarnation, sequence number), the cluster name and the record
// index; an accept record also carries the open header it answers, so a
// reply belongs to one stream.
const (
	envMagic   = 'H'
	envVersion = 1 // the version written: the first release's, unchanged since
	// envVersionMax is the newest envelope version read: a version's
	// frames are read by the release after it (node/upgrade), so that the
	// next one may write a new version once the cluster feature level
	// allows it. Version 2 is version 1's layout.
	envVersionMax = 2

	typeDatagram  = 1 // memberlist packet
	typeChallenge = 2 // "prove you are alive": payload is a nonce
	typeResponse  = 3 // the nonce, sealed under the responder's current incarnation
	typeOpen      = 4 // first record of a stream, from the dialer
	typeAccept    = 5 // first record of the reply, from the listener

	hdrFixed   = 4 + 8 + 8 // magic, version, type, name length + inc + seq
	tagSize    = 16
	nonceSize  = 12
	lenSize    = 4
	challenge  = 16       // nonce bytes of a challenge
	recordMax  = 64 << 10 // plaintext bytes per stream record
	maxDgram   = 64 << 10 // largest datagram read
	streamMax  = 24 << 20 // plaintext bytes per inbound stream (> maxMessage + memberlist state)
	maxNameLen = 255
)

// fixedLabel keys the envelope of an insecure cluster (Config.Insecure):
// it guards against corruption and foreign clusters, not against attackers.
const fixedLabel = "haven insecure heartbeat key (no cluster secret)"

var (
	errNotFrame = errors.New("not a heartbeat frame of this version")
	errAuth     = errors.New("cannot authenticate (wrong cluster secret or cluster name, or damaged)")
)

// header is a parsed envelope header.
type header struct {
	typ      byte // without typePair
	pair     bool // sealed with a pairwise key (pairkeys.go)
	name     string
	inc, seq uint64
	raw      []byte // the header bytes, part of the associated data
}

func appendHeader(dst []byte, typ byte, name string, inc, seq uint64) []byte {
	dst = append(dst, envMagic, envVersion, typ, byte(len(name)))
	dst = append(dst, name...)
	dst = binary.BigEndian.AppendUint64(dst, inc)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// envVersionOK reports whether an envelope of version v is read.
func envVersionOK(v byte) bool { return v >= envVersion && v <= envVersionMax }

// headerLen is the size of a header naming name.
func headerLen(name string) int { return hdrFixed + len(name) }

// parseHeader reads the header at the start of b; it never reads past b.
func parseHeader(b []byte) (header, []byte, error) {
	if len(b) < hdrFixed || b[0] != envMagic || !envVersionOK(b[1]) {
		return header{}, nil, errNotFrame
	}
	n := int(b[3])
	if n == 0 || len(b) < hdrFixed+n {
		return header{}, nil, errNotFrame
	}
	h := header{typ: b[2] &^ typePair, pair: b[2]&typePair != 0, name: string(b[4 : 4+n])}
	h.inc = binary.BigEndian.Uint64(b[4+n:])
	h.seq = binary.BigEndian.Uint64(b[12+n:])
	h.raw = b[:hdrFixed+n]
	if h.typ < typeDatagram || h.typ > typeAccept || h.inc == 0 || h.seq == 0 {
		return header{}, nil, errNotFrame
	}
	return h, b[hdrFixed+n:], nil
}

// keyring derives and caches the AEAD of each (sender, incarnation).
type keyring struct {
	prk     []byte
	cluster string
	pairs   *pairKeys // nil without per-node keys (pairkeys.go)

	mu    sync.Mutex
	cache map[keyID]cipher.AEAD
}

type keyID struct {
	name string
	to   string // "": the key of name's frames to every member (the cluster secret's)
	inc  uint64
}

// maxKeys bounds the cache (with per-node keys a run of each member has a
// key to this node, this node's run one to each member, and a migration
// keeps the cluster secret's keys too); forged incarnations only cost a
// derivation.
const maxKeys = 256

// newKeyring extracts the master key from the secret; an insecure cluster
// passes nil and keys from a fixed label and the cluster name.
func newKeyring(secret []byte, cluster string) (*keyring, error) {
	if secret == nil {
		secret = []byte(fixedLabel)
	}
	prk, err := hkdf.Extract(sha256.New, secret, []byte("haven heartbeat envelope v1"))
	if err != nil {
		return nil, fmt.Errorf("heartbeat: derive key: %w", err)
	}
	return &keyring{prk: prk, cluster: cluster, cache: map[keyID]cipher.AEAD{}}, nil
}

func (k *keyring) aead(name string, inc uint64) cipher.AEAD {
	id := keyID{name: name, inc: inc}
	k.mu.Lock()
	defer k.mu.Unlock()
	if a := k.cache[id]; a != nil {
		return a
	}
	return k.cacheLocked(id, k.prk, k.keyInfo("frame key\x00", inc, name))
}

// keyInfo is the HKDF info of a frame key: label, then the cluster name
// and names, each after its length in one byte, then the incarnation.
func (k *keyring) keyInfo(label string, inc uint64, names ...string) []byte {
	info := make([]byte, 0, 80)
	info = append(info, label...)
	for _, s := range append([]string{k.cluster}, names...) {
		info = append(info, byte(len(s)))
		info = append(info, s...)
	}
	return binary.BigEndian.AppendUint64(info, inc)
}

// cacheLocked derives the AEAD of id from prk and info and caches it.
func (k *keyring) cacheLocked(id keyID, prk, info []byte) cipher.AEAD {
	key, err := hkdf.Expand(sha256.New, prk, string(info), 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256 HKDF cannot fail
	}
	a := newGCM(key)
	if len(k.cache) >= maxKeys {
		clear(k.cache)
	}
	k.cache[id] = a
	return a
}

func nonceFor(seq uint64, idx uint32) []byte {
	n := make([]byte, nonceSize)
	binary.BigEndian.PutUint64(n, seq)
	binary.BigEndian.PutUint32(n[8:], idx)
	return n
}

// adata is the associated data of record idx of a direction whose context
// is ctx (its header, the header it answers if any, then the cluster name).
func adata(ctx []byte, idx uint32) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(nil), ctx...), idx)
}

// context returns the associated-data prefix of a direction.
func (k *keyring) context(hdr, answers []byte) []byte {
	ctx := make([]byte, 0, len(hdr)+len(answers)+1+len(k.cluster))
	ctx = append(ctx, hdr...)
	ctx = append(ctx, answers...)
	ctx = append(ctx, byte(len(k.cluster)))
	return append(ctx, k.cluster...)
}

// sealDatagram returns the datagram carrying payload, sealed with the
// cluster secret's key of name's run inc.
func (k *keyring) sealDatagram(typ byte, name string, inc, seq uint64, payload []byte) []byte {
	return k.seal(k.aead(name, inc), typ, name, inc, seq, payload)
}

// seal returns the datagram carrying payload, sealed with a; typ carries
// typePair when a is a pairwise key.
func (k *keyring) seal(a cipher.AEAD, typ byte, name string, inc, seq uint64, payload []byte) []byte {
	out := make([]byte, 0, headerLen(name)+len(payload)+tagSize)
	out = appendHeader(out, typ, name, inc, seq)
	return a.Seal(out, nonceFor(seq, 0), payload, adata(k.context(out, nil), 0))
}

// window is a sliding replay window over sequence numbers (RFC 4303 style):
// numbers up to windowSize behind the highest seen are accepted once each
// (datagrams are reordered), older ones and duplicates are refused.
type window struct {
	top  uint64
	bits [windowSize / 64]uint64
}

const windowSize = 1024

// fresh tells whether seq is new; it does not record it.
func (w *window) fresh(seq uint64) bool {
	switch {
	case seq == 0:
		return false
	case seq > w.top:
		return true
	case w.top-seq >= windowSize:
		return false
	}
	i := seq % windowSize
	return w.bits[i/64]&(1<<(i%64)) == 0
}

// maxJump is how far ahead of the highest sequence number seen a frame may
// be and still be accepted without a challenge: half the window, so that
// one frame far ahead (sealed by a holder of the secret) cannot push the
// window past the real sender's numbers and end its reception.
const maxJump = windowSize / 2

// jumps tells whether seq is too far ahead of the highest seen (none seen:
// any number is the first).
func (w *window) jumps(seq uint64) bool {
	return w.top != 0 && seq > w.top && seq-w.top > maxJump
}

// advance moves the window up to seq, a number known to be the sender's
// (its answer to our challenge): jumps are measured from there.
func (w *window) advance(seq uint64) {
	if seq > w.top {
		w.mark(seq)
	}
}

// mark records seq, which fresh accepted.
func (w *window) mark(seq uint64) {
	if seq > w.top {
		if seq-w.top >= windowSize {
			w.bits = [windowSize / 64]uint64{}
		} else {
			for s := w.top + 1; s < seq; s++ {
				i := s % windowSize
				w.bits[i/64] &^= 1 << (i % 64)
			}
		}
		w.top = seq
	}
	i := seq % windowSize
	w.bits[i/64] |= 1 << (i % 64)
}
