package arbitrator

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"haven/internal/pairkey"
	"haven/quorum"
)

// The wire: one UDP datagram each way, all integers big-endian.
//
//	header   = magic 'A' | version 1 | type | cluster length | cluster | node length | node | inc (8) | seq (8)
//	report   = header (type 1) | AES-256-GCM(ReportBody JSON), nonce seq | 0
//	grant    = header (type 2, the report's cluster, node, inc, seq) | AES-256-GCM(GrantBody JSON), nonce seq | 1
//
// The key is HKDF-SHA256 of the cluster secret, expanded for the cluster
// name, the node's name and its incarnation (one key per run of a node, as
// the heartbeat's); the associated data is the header. A grant repeats the
// header of the report it answers, so it opens only for that report: a
// captured grant cannot answer another one. The secret never crosses the
// wire.
//
// Per-node keys: when the node has its key pair and the arbitrator's
// public key (cluster.toml [arbitrator.NAME] key), and the arbitrator has
// its key pair and the node's public key (arbitrator.toml node_keys), a
// report and its grant are sealed with a pairwise key instead: HKDF-SHA256
// of the cluster secret and the X25519 agreement of the two key pairs
// (pairkey.Master), expanded for the cluster, the node and its
// incarnation. Only that node and the arbitrator derive it: another member
// holding the secret and its own key cannot report as that node. The type
// byte says so (typePair, covered by the associated data). An arbitrator
// of a release before per-node keys refuses such a frame as not of its
// version: the node seals so only once its cluster.toml has the key that
// arbitrator's release made (docs/operations.md, "The 2-node case").
const (
	magic      = 'A'
	version    = 1
	typeReport = 1
	typeGrant  = 2
	// typePair flags the type byte of a frame sealed with a pairwise key.
	typePair = 0x80

	// MaxDatagram bounds what the arbitrator reads, and what a report
	// may be (a partition of 32 members is about 600 bytes).
	MaxDatagram = 4096
	tagSize     = 16
	maxName     = 255
)

// versionMax is the newest version read (version is the one written, the
// first release's): the release after a change reads it, so that nodes and
// arbitrators upgrade in any order (node/upgrade, docs/operations.md
// "Upgrading"). Version 2 is version 1's layout.
const versionMax = 2

var (
	errNotFrame = errors.New("not an arbitrator frame of this version")
	errAuth     = errors.New("cannot authenticate (wrong cluster secret, or damaged)")
	errPairAuth = errors.New("cannot authenticate: not sealed with the key of its node and this arbitrator (forged by another holder of the cluster secret, a node key that is not the one listed, a wrong cluster secret, or damaged)")
)

// ReportBody is what a node tells the arbitrator.
type ReportBody struct {
	// Partition are the members the node hears and that hear it, itself
	// included.
	Partition []string `json:"partition"`
	// Running is how many failover services the node runs.
	Running int `json:"running"`
	// SentUnixMs is the node's wall clock when it sent the report: the
	// arbitrator refuses reports too far from its own (a replay of old
	// traffic after it restarted).
	SentUnixMs int64 `json:"sent_unix_ms"`
}

// GrantBody is the arbitrator's answer.
type GrantBody = quorum.GrantAnswer

// header is a parsed frame header.
type header struct {
	typ           byte // typeReport or typeGrant
	pair          bool // sealed with a pairwise key
	cluster, node string
	inc, seq      uint64
	raw           []byte
}

func appendHeader(dst []byte, typ byte, cluster, node string, inc, seq uint64) []byte {
	dst = append(dst, magic, version, typ, byte(len(cluster)))
	dst = append(dst, cluster...)
	dst = append(dst, byte(len(node)))
	dst = append(dst, node...)
	dst = binary.BigEndian.AppendUint64(dst, inc)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// parseHeader reads the header at the start of b; it never reads past b.
func parseHeader(b []byte) (header, []byte, error) {
	if len(b) < 4 || b[0] != magic || b[1] < version || b[1] > versionMax {
		return header{}, nil, errNotFrame
	}
	h := header{typ: b[2] &^ typePair, pair: b[2]&typePair != 0}
	i := 3
	str := func() (string, bool) {
		if i >= len(b) {
			return "", false
		}
		n := int(b[i])
		if n == 0 || i+1+n > len(b) {
			return "", false
		}
		s := string(b[i+1 : i+1+n])
		i += 1 + n
		return s, true
	}
	var ok bool
	if h.cluster, ok = str(); !ok {
		return header{}, nil, errNotFrame
	}
	if h.node, ok = str(); !ok {
		return header{}, nil, errNotFrame
	}
	if i+16 > len(b) {
		return header{}, nil, errNotFrame
	}
	h.inc = binary.BigEndian.Uint64(b[i:])
	h.seq = binary.BigEndian.Uint64(b[i+8:])
	i += 16
	h.raw = b[:i]
	if (h.typ != typeReport && h.typ != typeGrant) || h.inc == 0 || h.seq == 0 {
		return header{}, nil, errNotFrame
	}
	return h, b[i:], nil
}

// keys seal the frames of a node with an arbitrator: the cluster secret,
// and the master key of the pair (the node's key pair and the
// arbitrator's) when both have one; nil pair: the secret alone.
type keys struct {
	secret []byte
	pair   []byte
}

// pairLabel is the salt of the pair master keys of the arbitrator's wire.
const pairLabel = "haven arbitrator pairwise v1"

// pairKeys are the keys of a node and an arbitrator with key pairs: priv
// is the private key of one end, pub the public key of the other.
func pairKeys(secret []byte, priv *ecdh.PrivateKey, pub *ecdh.PublicKey) (keys, error) {
	m, err := pairkey.Master(secret, priv, pub, pairLabel)
	if err != nil {
		return keys{}, err
	}
	return keys{secret: secret, pair: m}, nil
}

// aead derives the AEAD of a node's run: from the pair master key when k
// has one, otherwise from the cluster secret.
func (k keys) aead(cluster, node string, inc uint64) (cipher.AEAD, error) {
	prk, label := k.pair, "pair report key\x00"
	if prk == nil {
		var err error
		if prk, err = hkdf.Extract(sha256.New, k.secret, []byte("haven arbitrator v1")); err != nil {
			return nil, err
		}
		label = "report key\x00"
	}
	info := []byte(label)
	info = append(info, byte(len(cluster)))
	info = append(info, cluster...)
	info = append(info, byte(len(node)))
	info = append(info, node...)
	info = binary.BigEndian.AppendUint64(info, inc)
	key, err := hkdf.Expand(sha256.New, prk, string(info), 32)
	if err != nil {
		return nil, err
	}
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}

func nonce(seq uint64, dir uint32) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n, seq)
	binary.BigEndian.PutUint32(n[8:], dir)
	return n
}

// seal builds a frame of typ carrying body, sealed with the pairwise key
// when k has one.
func seal(k keys, typ byte, cluster, node string, inc, seq uint64, body any) ([]byte, error) {
	if len(cluster) == 0 || len(cluster) > maxName || len(node) == 0 || len(node) > maxName {
		return nil, fmt.Errorf("cluster and node names of 1 to %d bytes", maxName)
	}
	a, err := k.aead(cluster, node, inc)
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	flag := byte(0)
	if k.pair != nil {
		flag = typePair
	}
	out := appendHeader(nil, typ|flag, cluster, node, inc, seq)
	out = a.Seal(out, nonce(seq, uint32(typ-1)), plain, out)
	if len(out) > MaxDatagram {
		return nil, fmt.Errorf("frame of %d bytes over %d", len(out), MaxDatagram)
	}
	return out, nil
}

// open authenticates frame b (its header already parsed as h) under k
// and decodes its body into v. A frame opens only under the kind of key
// its type byte names.
func open(k keys, h header, ct []byte, v any) error {
	if len(ct) < tagSize {
		return errNotFrame
	}
	fail := errAuth
	if h.pair {
		fail = errPairAuth
	}
	if h.pair != (k.pair != nil) {
		return fail
	}
	a, err := k.aead(h.cluster, h.node, h.inc)
	if err != nil {
		return err
	}
	plain, err := a.Open(nil, nonce(h.seq, uint32(h.typ-1)), ct, h.raw)
	if err != nil {
		return fail
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}

// maxSkew bounds how far a report's send time may be from the arbitrator's
// wall clock (NTP keeps hosts within a second).
const maxSkew = 30 * time.Second
