// Package pairkey derives the master key of a pair of X25519 key pairs
// mixed with a cluster's secret: the root of the keys that only the two
// ends of the pair can derive (the heartbeat's pairwise frames between two
// members, the reports of a member to the one-vote arbitrator;
// docs/security.md, "Per-node keys").
package pairkey

import (
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

// Master is HKDF-SHA256-Extract of secret followed by the X25519 shared
// secret of priv and pub, under the salt label (one label per use, so
// that the keys of one use never open the frames of another). The same
// for both ends: Master(s, a, B) == Master(s, b, A). Without secret no
// key derives, whatever private key one holds.
func Master(secret []byte, priv *ecdh.PrivateKey, pub *ecdh.PublicKey, label string) ([]byte, error) {
	shared, err := priv.ECDH(pub)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, append(append([]byte(nil), secret...), shared...), []byte(label))
	if err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	return prk, nil
}
