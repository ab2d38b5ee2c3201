package daemon

import (
	"crypto/ecdh"
	"errors"
	"io/fs"
	"os"

	"haven/config"
	"haven/config/tomlfile"
	"haven/heartbeat"
)

// nodeKeys are the per-node keys of the heartbeat (docs/security.md,
// "Per-node keys"): this node's private key and the members' public keys.
type nodeKeys struct {
	priv *ecdh.PrivateKey // nil: none
	pubs map[string]*ecdh.PublicKey
	// arbs are the public keys of the one-vote arbitrators that have one
	// ([arbitrator.NAME] key), by name: this node's reports to them are
	// sealed with their pairwise key.
	arbs map[string]*ecdh.PublicKey
}

// loadNodeKeys reads this node's key when cluster.toml lists node keys,
// and the one-vote arbitrators' keys, which need this node's.
func loadNodeKeys(path string, c *config.ClusterConfig, self string) (nodeKeys, error) {
	nk, err := readNodeKeys(path, c, self)
	if err != nil {
		return nk, err
	}
	for _, a := range c.Arbitrators {
		if a.PubKey == nil {
			continue
		}
		if nk.priv == nil {
			return nk, c.ErrAt(config.SectionArbitrator+"."+a.Name, "key", "this node has no node key (%s, its public key listed in [node_keys]) to seal its reports to the arbitrator with: make it with nodemgr key generate, or remove this key", path)
		}
		pub, err := ecdh.X25519().NewPublicKey(a.PubKey)
		if err != nil {
			return nk, c.ErrAt(config.SectionArbitrator+"."+a.Name, "key", "%v", err)
		}
		if nk.arbs == nil {
			nk.arbs = map[string]*ecdh.PublicKey{}
		}
		nk.arbs[a.Name] = pub
	}
	return nk, nil
}

// readNodeKeys reads this node's key when cluster.toml lists node keys.
// When it lists this node's, node.key must hold its private half; without
// an entry (a migration step) a node.key that exists is used all the same.
func readNodeKeys(path string, c *config.ClusterConfig, self string) (nodeKeys, error) {
	var nk nodeKeys
	if len(c.NodeKeys) == 0 {
		return nk, nil
	}
	nk.pubs = map[string]*ecdh.PublicKey{}
	for name, b := range c.NodeKeys {
		pub, err := ecdh.X25519().NewPublicKey(b)
		if err != nil {
			return nk, c.ErrAt(config.SectionNodeKeys, name, "%v", err)
		}
		nk.pubs[name] = pub
	}
	own := nk.pubs[self]
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if own != nil {
			return nk, c.ErrAt(config.SectionNodeKeys, self, "this node's key is listed, but %s is missing: copy the node's own key back (it never leaves the host), or generate one with nodemgr key generate and list its public key on every member", path)
		}
		return nk, nil
	}
	priv, err := tomlfile.LoadNodeKey(path)
	if err != nil {
		return nk, err
	}
	if own != nil && !priv.PublicKey().Equal(own) {
		return nk, c.ErrAt(config.SectionNodeKeys, self, "not the public key of this node's %s (nodemgr key show prints it): the members would refuse this node's frames", path)
	}
	nk.priv = priv
	return nk, nil
}

// apply sets the keys of a heartbeat config.
func (nk nodeKeys) apply(cfg *heartbeat.Config, mode string) {
	if nk.pubs == nil {
		return
	}
	cfg.NodeKey, cfg.MemberKeys, cfg.NodeKeysMode = nk.priv, nk.pubs, mode
}
