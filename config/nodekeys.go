package config

import (
	"bytes"
	"crypto/ecdh"
	"encoding/base64"
	"fmt"
	"strings"
)

// NodeKeySize is the size of a node key, public or private (X25519).
const NodeKeySize = 32

// ParseNodeKey decodes a public node key as cluster.toml [node_keys] and
// `nodemgr key show` write it: 32 bytes in standard base64. A key the
// X25519 curve cannot use (all zeros, a point of small order) is refused.
func ParseNodeKey(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != NodeKeySize {
		return nil, fmt.Errorf("invalid node key %.60q: want the 44 characters `nodemgr key show` prints (32 bytes in base64)", s)
	}
	if _, err := ecdh.X25519().NewPublicKey(b); err != nil || lowOrder(b) {
		return nil, fmt.Errorf("invalid node key %.60q: not a usable X25519 public key", s)
	}
	return b, nil
}

// EncodeNodeKey is the text of a public node key.
func EncodeNodeKey(pub []byte) string { return base64.StdEncoding.EncodeToString(pub) }

// lowOrder tells whether pub is a point whose shared secret with any key
// is all zeros (a key that would make every pairwise key public).
func lowOrder(pub []byte) bool {
	probe, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{0x5a}, NodeKeySize))
	if err != nil {
		return true
	}
	p, err := ecdh.X25519().NewPublicKey(pub)
	if err != nil {
		return true
	}
	_, err = probe.ECDH(p) // an all-zero result is an error
	return err != nil
}

// parseNodeKeys reads [node_keys] into c.NodeKeys and checks it against
// the members and node_keys_mode.
func (d *document) parseNodeKeys(c *ClusterConfig) error {
	cl := d.ensure(SectionCluster)
	sec := d.find(SectionNodeKeys, "")
	if sec == nil || len(sec.keys) == 0 {
		if c.NodeKeysMode != "require" {
			return d.errAt(cl, "node_keys_mode", "%q, but [node_keys] lists no key: the migration modes turn keys on, list the members' keys first (nodemgr key show on each)", c.NodeKeysMode)
		}
		return nil
	}
	if !c.explicit {
		return d.errAt(sec, sec.keys[0], "node keys need the members listed in [nodes]")
	}
	c.NodeKeys = map[string][]byte{}
	owner := map[string]string{} // key -> member
	for _, name := range sec.keys {
		if !c.hasMember(name) {
			return d.errAt(sec, name, "%q is not a cluster member ([nodes]: %s)", name, strings.Join(c.NodeNames(), ", "))
		}
		pub, err := ParseNodeKey(sec.vals[name].(string))
		if err != nil {
			return d.errAt(sec, name, "%v", err)
		}
		if other, dup := owner[string(pub)]; dup {
			return d.errAt(sec, name, "the same key as %s: each member has its own key (run nodemgr key show on %s)", other, name)
		}
		owner[string(pub)] = name
		c.NodeKeys[name] = pub
	}
	if c.NodeKeysMode == "require" {
		for _, m := range c.Nodes {
			if c.NodeKeys[m.Name] == nil {
				return d.errAt(sec, "", "member %s has no key: with cluster.node_keys_mode = \"require\" (the default) every member needs one (nodemgr key show on %s; \"accept\" and \"send\" are the migration modes, docs/operations.md)", m.Name, m.Name)
			}
		}
	}
	return nil
}
