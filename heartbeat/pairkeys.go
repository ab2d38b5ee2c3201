package heartbeat

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"errors"
	"fmt"
	"slices"

	"haven/config"
	"haven/internal/pairkey"
)

// Per-node keys (docs/security.md, "Per-node keys"). When this node and a
// member both have a key pair (cluster.toml [node_keys], this node's
// node.key), their frames are sealed with a pairwise key: HKDF-SHA256 of
// the X25519 shared secret of the two key pairs and of the cluster
// secret's master key, expanded for the cluster name, the sender's name,
// the receiver's name and the sender's incarnation. Only the two ends can
// derive it: a member holding the secret and its own private key can no
// longer seal a frame that a third node accepts as another member's.
//
// The X25519 agreement is done once per member at start; a pairwise key
// is derived once per run of a sender, as the secret's key is: a frame
// costs what it costs without keys, one AES-256-GCM seal or open
// (docs/benchmarks.md, "Per-node keys").
//
// A frame sealed with a pairwise key says so in its type byte (typePair),
// which the associated data covers: the receiver knows which key to use,
// and node_keys_mode decides what it accepts (keyring.requires).

// typePair flags the type byte of a frame sealed with a pairwise key.
const typePair = 0x80

// Node key modes (cluster.node_keys_mode).
const (
	ModeRequire = "require" // pairwise to and from every member with a key, and only so
	ModeSend    = "send"    // pairwise to every member with a key, both kinds accepted
	ModeAccept  = "accept"  // as without keys, both kinds accepted
)

// errNotOwnKey is in the chain of the errors of frames refused because
// they are not sealed with the key of the pair their sender claims.
var errNotOwnKey = errors.New("not sealed with its sender's node key")

// pairKeys are the pairwise master keys of this node with each member
// (itself included) that has a key, and the mode.
type pairKeys struct {
	self string
	mode string
	prk  map[string][]byte // member -> master key of the pair
}

// setNodeKeys gives the keyring this node's private key and the members'
// public keys. Without a private key there are no pairwise keys.
func (k *keyring) setNodeKeys(self string, priv *ecdh.PrivateKey, pubs map[string]*ecdh.PublicKey, mode string) error {
	if priv == nil {
		return nil
	}
	switch mode {
	case "":
		mode = ModeRequire
	case ModeRequire, ModeSend, ModeAccept:
	default:
		return fmt.Errorf("heartbeat: node key mode %q: want %s, %s or %s", mode, ModeRequire, ModeSend, ModeAccept)
	}
	pk := &pairKeys{self: self, mode: mode, prk: map[string][]byte{}}
	all := map[string]*ecdh.PublicKey{self: priv.PublicKey()}
	for name, pub := range pubs {
		if name != self {
			all[name] = pub
		}
	}
	for name, pub := range all {
		prk, err := pairkey.Master(k.prk, priv, pub, "haven heartbeat pairwise v1")
		if err != nil {
			return fmt.Errorf("heartbeat: node key of %s: %w", name, err)
		}
		pk.prk[name] = prk
	}
	k.pairs = pk
	return nil
}

// pairTo tells whether frames to member to are sealed with a pairwise key.
func (k *keyring) pairTo(to string) bool {
	return k.pairs != nil && k.pairs.prk[to] != nil && k.pairs.mode != ModeAccept
}

// requires tells whether a frame of member from must be sealed with a
// pairwise key (a frame sealed with the cluster secret alone is refused).
func (k *keyring) requires(from string) bool {
	return k.pairs != nil && k.pairs.prk[from] != nil && k.pairs.mode == ModeRequire
}

// sendKey is the key of this node's frames of run inc to member to, and
// the flag of their type byte.
func (k *keyring) sendKey(self, to string, inc uint64) (cipher.AEAD, byte) {
	if k.pairTo(to) {
		return k.pairAEAD(self, to, inc), typePair
	}
	return k.aead(self, inc), 0
}

// openKey is the key that opens a frame of header h received by self, or
// why none may: a pairwise frame from a member this node holds no key of,
// or a frame sealed with the cluster secret alone from a member that must
// use its key.
func (k *keyring) openKey(h header, self string) (cipher.AEAD, error) {
	switch {
	case h.pair && (k.pairs == nil || k.pairs.prk[h.name] == nil):
		return nil, fmt.Errorf("%w: sealed with a node key, but this node has no key pair with %s (its own node.key, or %s in its cluster.toml [node_keys], missing)", errNotOwnKey, h.name, h.name)
	case h.pair:
		return k.pairAEAD(h.name, self, h.inc), nil
	case k.requires(h.name):
		return nil, fmt.Errorf("%w: sealed with the cluster secret alone, but %s has a node key (cluster.node_keys_mode = %q): forged by another holder of the secret, or %s is in an earlier step of node_keys_mode or its cluster.toml lacks this node's key", errNotOwnKey, h.name, ModeRequire, h.name)
	}
	return k.aead(h.name, h.inc), nil
}

// pairAEAD derives and caches the AEAD of frames from from to to in run
// inc of from, with the pair master key of this node and the other end.
func (k *keyring) pairAEAD(from, to string, inc uint64) cipher.AEAD {
	id := keyID{name: from, to: to, inc: inc}
	peer := from
	if from == k.pairs.self {
		peer = to
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if a := k.cache[id]; a != nil {
		return a
	}
	return k.cacheLocked(id, k.pairs.prk[peer], k.pairInfo(from, to, inc))
}

// pairInfo is the HKDF info of the pairwise key of frames from from to to
// in run inc of from.
func (k *keyring) pairInfo(from, to string, inc uint64) []byte {
	return k.keyInfo("pair frame key\x00", inc, from, to)
}

// newGCM is the AES-256-GCM of key.
func newGCM(key []byte) cipher.AEAD {
	blk, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // 32 bytes
	}
	a, err := cipher.NewGCM(blk)
	if err != nil {
		panic(err)
	}
	return a
}

// checkNodeKeys checks the per-node keys of the Config against its members.
func (s *settings) checkNodeKeys() error {
	for name := range s.MemberKeys {
		if !slices.ContainsFunc(s.Members, func(m config.Member) bool { return m.Name == name }) {
			return fmt.Errorf("heartbeat: node key of %q, not a member", name)
		}
	}
	if own := s.MemberKeys[s.Node]; own != nil && (s.NodeKey == nil || !s.NodeKey.PublicKey().Equal(own)) {
		return fmt.Errorf("heartbeat: this node's key (node.key) is not the key the members list for %s", s.Node)
	}
	if len(s.MemberKeys) == 0 || (s.NodeKeysMode != "" && s.NodeKeysMode != ModeRequire) {
		return nil
	}
	for _, m := range s.Members {
		if s.MemberKeys[m.Name] == nil {
			return fmt.Errorf("heartbeat: member %s has no node key, and the mode is %q", m.Name, ModeRequire)
		}
	}
	return nil
}

// errPairAuth is errAuth of a frame sealed with a pairwise key.
var errPairAuth = fmt.Errorf("%w; or sealed with a node key that is not its sender's", errAuth)

// authErr is the error of a frame of header h that did not authenticate.
func authErr(h header) error {
	if h.pair {
		return errPairAuth
	}
	return errAuth
}
