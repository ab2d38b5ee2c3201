package config

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Admin-signed orders (docs/security.md, "Admin-signed deletions and
// targets"): with [admin_keys], a service's deletion (its tombstone) and
// the admin targets that make the other nodes act (start, stop, freeze,
// thaw, switch, takeover, giveback, a flex node's start or stop) carry an
// admin's signature, so that a member's files alone no longer let their
// holder order the others to delete, stop, freeze or move a service.
//
// An order's signature is a short text, "NAME SERIAL BASE64" (the fields
// of a config's signature line): NAME the admin key's name, SERIAL a
// number the node core never lets go back (node/configsigned.go), BASE64
// an Ed25519 signature over a tag of its own (a config's, a deletion's and
// a target's signatures never verify as one another), the cluster's name,
// the service's name, the serial and, for a target, what it asks and the
// node it names.

// The tags of the orders' signed messages.
const (
	deletionTag = "haven service deletion signature v1"
	targetTag   = "haven service target signature v1"
)

// OrderError refuses a peer's or a request's order for its signature.
// What is "deletion" or "target"; Reason one of the Sig constants.
type OrderError struct {
	What   string
	Reason string
	Msg    string
}

func (e *OrderError) Error() string {
	prefix := "target_refused: " + e.Reason
	if e.What == "deletion" {
		prefix = "config_refused: " + e.Reason + " deletion"
	}
	return prefix + ": " + e.Msg
}

// orderMessage is what an order's signature signs.
func orderMessage(tag, cluster, service string, serial uint64, more ...string) []byte {
	var b bytes.Buffer
	for _, s := range append([]string{tag, cluster, service, strconv.FormatUint(serial, 10)}, more...) {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// signOrder makes the signature text of the message of tag.
func signOrder(tag, cluster, service, name string, priv ed25519.PrivateKey, serial uint64, more ...string) (string, error) {
	if err := ValidKeyName(name); err != nil {
		return "", err
	}
	if err := ValidServiceName(service); err != nil {
		return "", err
	}
	sig := ed25519.Sign(priv, orderMessage(tag, cluster, service, serial, more...))
	return fmt.Sprintf("%s %d %s", name, serial, base64.StdEncoding.EncodeToString(sig)), nil
}

// MaxOrderSig bounds the length of an order's signature text (about 150
// bytes: a key name of at most 64, a serial of at most 20 digits, 88 of
// base64), checked on a peer's whatever the cluster lists: a node never
// holds or relays a longer one.
const MaxOrderSig = 256

// OrderSigTooLong refuses a signature text above MaxOrderSig (what:
// "deletion" or "target"), nil for one within it.
func OrderSigTooLong(what, sig string) error {
	if len(sig) <= MaxOrderSig {
		return nil
	}
	return &OrderError{What: what, Reason: SigBad, Msg: fmt.Sprintf("the signature is %d bytes long: at most %d", len(sig), MaxOrderSig)}
}

// ParseOrderSig splits an order's signature text without checking it.
func ParseOrderSig(s string) (name string, serial uint64, sig []byte, err error) {
	if len(s) > MaxOrderSig {
		return "", 0, nil, fmt.Errorf("the signature is %d bytes long: at most %d", len(s), MaxOrderSig)
	}
	return parseSignatureLine(SignaturePrefix + s)
}

// verifyOrder checks the signature text sig of an order (what) against
// keys.
func verifyOrder(what, tag, sig, cluster, service string, keys map[string]ed25519.PublicKey, more ...string) (*Signature, error) {
	remedy := "svcmgr delete --key KEYFILE"
	if what == "target" {
		remedy = "svcmgr ACTION --key KEYFILE"
	}
	if sig == "" {
		return nil, &OrderError{What: what, Reason: SigUnsigned, Msg: "no admin signature, and cluster.toml lists [admin_keys]: an admin orders it (" + remedy + ")"}
	}
	name, serial, raw, err := ParseOrderSig(sig)
	if err != nil {
		return nil, &OrderError{What: what, Reason: SigBad, Msg: err.Error()}
	}
	pub, ok := keys[name]
	if !ok {
		return nil, &OrderError{What: what, Reason: SigUnknownKey, Msg: fmt.Sprintf("signed by %q, which cluster.toml [admin_keys] does not list (%s)", name, strings.Join(slices.Sorted(maps.Keys(keys)), ", "))}
	}
	if !ed25519.Verify(pub, orderMessage(tag, cluster, service, serial, more...), raw) {
		return nil, &OrderError{What: what, Reason: SigBad, Msg: fmt.Sprintf("the signature of %q does not verify for this %s of service %q in cluster %q at serial %d (signed for another service, cluster or order)", name, what, service, cluster, serial)}
	}
	return &Signature{Key: name, Serial: serial}, nil
}

// SignDeletion signs the deletion of service in cluster with the admin
// key name (priv) at serial.
func SignDeletion(cluster, service, name string, priv ed25519.PrivateKey, serial uint64) (string, error) {
	return signOrder(deletionTag, cluster, service, name, priv, serial)
}

// VerifyDeletion checks the signature text sig of the deletion of service
// in cluster against keys: the refusal is an *OrderError.
func VerifyDeletion(sig, cluster, service string, keys map[string]ed25519.PublicKey) (*Signature, error) {
	return verifyOrder("deletion", deletionTag, sig, cluster, service, keys)
}

// SignTarget signs the target expect (dataset.Expect*) of service in
// cluster, scoped to node ("" for none), with the admin key name (priv)
// at serial.
func SignTarget(cluster, service, expect, node, name string, priv ed25519.PrivateKey, serial uint64) (string, error) {
	return signOrder(targetTag, cluster, service, name, priv, serial, expect, node)
}

// VerifyTarget checks the signature text sig of the target expect (node)
// of service in cluster against keys: the refusal is an *OrderError.
func VerifyTarget(sig, cluster, service, expect, node string, keys map[string]ed25519.PublicKey) (*Signature, error) {
	return verifyOrder("target", targetTag, sig, cluster, service, keys, expect, node)
}

// Deletion checks the signature of a deletion of service (nil checker:
// none needed).
func (sc SignatureCheck) Deletion(sig, service string) (*Signature, error) {
	if !sc.On() {
		return nil, nil
	}
	return VerifyDeletion(sig, sc.Cluster, service, sc.Keys)
}

// Target checks the signature of a target of service.
func (sc SignatureCheck) Target(sig, service, expect, node string) (*Signature, error) {
	if !sc.On() {
		return nil, nil
	}
	return VerifyTarget(sig, sc.Cluster, service, expect, node, sc.Keys)
}
