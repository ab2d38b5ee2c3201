package disk

import (
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"haven/internal/pairkey"
)

// Per-node keys on the shared disk (docs/security.md, "The shared disk",
// "Per-node keys"). The cluster secret's HMAC proves a block comes from a
// holder of the secret, which every member is: alone, it lets one member's
// files write a block into another member's slot as that member. When a
// writer has its key pair (node.key) and cluster.toml [node_keys] lists
// its readers, each block also carries, after the secret's MAC, one tag
// per reader: HMAC-SHA256 (cut to 16 bytes) of the SHA-256 of the block's
// header and body, under a key only the writer and that reader derive
// (HKDF-SHA256 of the cluster secret's disk key and the X25519 agreement
// of their two key pairs, expanded for the cluster, the writer and the
// reader). The header's flag byte (byte 11, 0 in blocks without tags)
// says the tags follow:
//
//	14+len+32  count (1 byte)
//	then count times: the reader's slot (uint16), its tag (16 bytes)
//
// Why tags per reader and not a signature: a reader checks every slot of
// the disk every period (up to 32 members, a period of a fraction of a
// second) and a tag costs it one SHA-256 of the block and one HMAC of 32
// bytes, about a microsecond, where an Ed25519 verification costs about
// 50 (docs/benchmarks.md, "Disk blocks bound to their writer's key"); the
// writer pays one HMAC per reader, 18 bytes per reader of the block's 4
// KiB, and the keys are the X25519 pairs the heartbeat already uses: no
// second key per node to make and to list. What a tag cannot do that a
// signature could, let a reader check another reader's tag, nobody needs:
// a writer that gives one reader a wrong tag only makes itself unheard by
// that reader, as not writing would.
//
// A node tags its blocks exactly when it has its own key pair (readers of
// an earlier release read the blocks as before: they ignore the flag and
// what follows the MAC). A reader that has its key pair checks its tag in
// every block of a writer whose key it lists: a tag that does not verify
// is refused (ErrNotOwnKey); a block without a tag for it is refused in
// node_keys_mode "require" and taken on the secret alone in "accept" and
// "send", the steps of a rolling migration.

// flagPair marks (header byte 11) a block whose per-reader tags follow
// its MAC.
const flagPair = 1

// maxTagged bounds the members of a cluster whose blocks carry tags:
// with the tags of 64 readers, the longest names and every list of a beat
// full still fit a block (the echo then cut to about 50 slots).
const maxTagged = 64

// tagLen is the length of a reader's tag; pairEntryLen of its entry.
const (
	tagLen       = 16
	pairEntryLen = 2 + tagLen
)

// ErrNotOwnKey: the block is not authenticated by its writer's node key
// (sealed with the cluster secret alone although its writer has a key, or
// a tag that does not verify: written by another holder of the secret).
var ErrNotOwnKey = errors.New("not authenticated with its writer's node key")

// Node key modes (cluster.node_keys_mode), as the heartbeat's.
const (
	ModeRequire = "require"
	ModeSend    = "send"
	ModeAccept  = "accept"
)

// pairKeys are this node's per-pair tag keys.
type pairKeys struct {
	self    string
	slot    int // this node's slot
	mode    string
	members []string          // sorted: slot order
	out     map[int][]byte    // reader slot -> key of this node's tags for it
	in      map[string][]byte // writer -> key of its tags for this node
}

// SetNodeKeys gives the keys this node's key pair and the listed members'
// public keys: from then on its blocks carry a tag for each listed member
// (itself included), and the blocks of a listed writer are checked as
// mode says. Members is the cluster's member list (any order); keys of
// names that are not members are ignored. A nil priv (no node.key) leaves
// the blocks untagged and unchecked.
func (k *Keys) SetNodeKeys(self string, members []string, priv *ecdh.PrivateKey, pubs map[string]*ecdh.PublicKey, mode string) error {
	if priv == nil {
		return nil
	}
	switch mode {
	case "":
		mode = ModeRequire
	case ModeRequire, ModeSend, ModeAccept:
	default:
		return fmt.Errorf("disk heartbeat: node key mode %q: want %s, %s or %s", mode, ModeRequire, ModeSend, ModeAccept)
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	if len(ms) > maxTagged {
		// the tags and a beat's lists must fit a block
		return fmt.Errorf("disk heartbeat: per-node keys for at most %d members, %d listed", maxTagged, len(ms))
	}
	slot := slices.Index(ms, self)
	if slot < 0 {
		return fmt.Errorf("disk heartbeat: %s is not a member", self)
	}
	pk := &pairKeys{self: self, slot: slot, mode: mode, members: ms, out: map[int][]byte{}, in: map[string][]byte{}}
	all := map[string]*ecdh.PublicKey{self: priv.PublicKey()}
	for name, pub := range pubs {
		if name != self && pub != nil {
			all[name] = pub
		}
	}
	for name, pub := range all {
		i := slices.Index(ms, name)
		if i < 0 {
			continue
		}
		prk, err := pairkey.Master(k.prk, priv, pub, "haven disk heartbeat pairwise v1")
		if err != nil {
			return fmt.Errorf("disk heartbeat: node key of %s: %w", name, err)
		}
		if pk.out[i], err = k.tagKey(prk, self, name); err != nil {
			return err
		}
		if pk.in[name], err = k.tagKey(prk, name, self); err != nil {
			return err
		}
	}
	k.pair = pk
	return nil
}

// tagKey is the key of the tags of writer's blocks for reader.
func (k *Keys) tagKey(prk []byte, writer, reader string) ([]byte, error) {
	return hkdf.Expand(sha256.New, prk, "slot tag\x00"+k.cluster+"\x00"+writer+"\x00"+reader, 32)
}

// tag is the tag of a block whose header and body hash to sum.
func tag(key []byte, sum []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(sum)
	return m.Sum(nil)[:tagLen]
}

// pairLen is the room the tags of this node's blocks take.
func (k *Keys) pairLen() int {
	if k.pair == nil {
		return 0
	}
	return 1 + pairEntryLen*len(k.pair.out)
}

// tagBlock appends this node's tags to the sealed block b of body length
// n (flag already set).
func (k *Keys) tagBlock(b []byte, n int) {
	sum := sha256.Sum256(b[:headerLen+n])
	p := headerLen + n + macLen
	slots := make([]int, 0, len(k.pair.out))
	for s := range k.pair.out {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	b[p] = byte(len(slots))
	p++
	for _, s := range slots {
		binary.BigEndian.PutUint16(b[p:], uint16(s))
		copy(b[p+2:], tag(k.pair.out[s], sum[:]))
		p += pairEntryLen
	}
}

// checkPair checks the tag of this node in block b (body length n) that
// writer wrote: nil when it verifies, or when none is needed.
func (k *Keys) checkPair(b []byte, n int, writer string) error {
	if k.pair == nil {
		return nil // this node has no key pair: the secret alone
	}
	key := k.pair.in[writer]
	if key == nil {
		return nil // a writer without a listed key: the secret alone
	}
	var got []byte
	if b[11]&flagPair != 0 {
		p := headerLen + n + macLen
		if p >= BlockSize {
			return fmt.Errorf("%w: no room for its tags", ErrMalformed)
		}
		cnt := int(b[p])
		p++
		if p+cnt*pairEntryLen > BlockSize {
			return fmt.Errorf("%w: %d tags past the block", ErrMalformed, cnt)
		}
		for i := range cnt {
			e := b[p+i*pairEntryLen:]
			if int(binary.BigEndian.Uint16(e)) == k.pair.slot {
				got = e[2:pairEntryLen]
				break
			}
		}
	}
	if got == nil {
		if k.pair.mode != ModeRequire {
			return nil // a migration step: the secret alone is taken
		}
		how := "sealed with the cluster secret alone"
		if b[11]&flagPair != 0 {
			how = "tagged for other readers, not for this node"
		}
		return fmt.Errorf("%w: %s, but %s has a node key (cluster.node_keys_mode = %q): written by another holder of the secret, or %s's cluster.toml lacks this node's key or %s runs without its node.key",
			ErrNotOwnKey, how, writer, ModeRequire, writer, writer)
	}
	sum := sha256.Sum256(b[:headerLen+n])
	if !hmac.Equal(got, tag(key, sum[:])) {
		return fmt.Errorf("%w: its tag for this node does not verify under %s's node key: written by another holder of the secret (another member's files), or damaged", ErrNotOwnKey, writer)
	}
	return nil
}
