package config_test

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	. "haven/config"
)

// orderReason is the Reason of an *OrderError, "" for another error.
func orderReason(err error) string {
	var oe *OrderError
	if errors.As(err, &oe) {
		return oe.Reason
	}
	return ""
}

// The signatures of deletions and targets: an admin's verifies for that
// cluster, service, order and scope only; missing, another key, a listed
// name with another key, another cluster, another service, another target
// or scope, a changed serial, a config's or a deletion's signature taken
// for a target (and back), a damaged text: each refused with its reason.
func TestVerifyOrders(t *testing.T) {
	alicePub, alice := newAdminKey(t)
	_, eve := newAdminKey(t)
	keys := map[string]ed25519.PublicKey{"alice": alicePub}

	del, err := SignDeletion("prod", "web", "alice", alice, 9)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := VerifyDeletion(del, "prod", "web", keys); err != nil || s.Key != "alice" || s.Serial != 9 {
		t.Fatalf("deletion: %+v, %v", s, err)
	}
	stop, err := SignTarget("prod", "web", "stopped", "", "alice", alice, 12)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := VerifyTarget(stop, "prod", "web", "stopped", "", keys); err != nil || s.Serial != 12 {
		t.Fatalf("target: %+v, %v", s, err)
	}
	sw, _ := SignTarget("prod", "web", "placed", "n3", "alice", alice, 13)
	evil, _ := SignDeletion("prod", "web", "alice", eve, 9)
	unknown, _ := SignDeletion("prod", "web", "mallory", eve, 9)
	other, _ := SignDeletion("test", "web", "alice", alice, 9)
	db, _ := SignDeletion("prod", "db", "alice", alice, 9)
	f := strings.Fields(del)
	reserial := f[0] + " 10 " + f[2]

	for _, tc := range []struct {
		name, sig, reason string
		target            bool
		expect, node      string
	}{
		{name: "unsigned deletion", sig: "", reason: SigUnsigned},
		{name: "another key under alice's name", sig: evil, reason: SigBad},
		{name: "a key not listed", sig: unknown, reason: SigUnknownKey},
		{name: "another cluster's", sig: other, reason: SigBad},
		{name: "another service's", sig: db, reason: SigBad},
		{name: "serial changed", sig: reserial, reason: SigBad},
		{name: "a target's signature as a deletion", sig: stop, reason: SigBad},
		{name: "damaged", sig: "alice 9 !!", reason: SigBad},
		{name: "too many fields", sig: del + " x", reason: SigBad},
		{name: "long", sig: strings.Repeat("a", 300), reason: SigBad},
		{name: "unsigned target", target: true, sig: "", expect: "stopped", reason: SigUnsigned},
		{name: "stop signed, freeze asked", target: true, sig: stop, expect: "frozen", reason: SigBad},
		{name: "switch to n3 signed, to n2 asked", target: true, sig: sw, expect: "placed", node: "n2", reason: SigBad},
		{name: "switch to n3 signed, giveback asked", target: true, sig: sw, expect: "placed", reason: SigBad},
		{name: "a deletion's signature as a target", target: true, sig: del, expect: "stopped", reason: SigBad},
	} {
		var err error
		if tc.target {
			_, err = VerifyTarget(tc.sig, "prod", "web", tc.expect, tc.node, keys)
		} else {
			_, err = VerifyDeletion(tc.sig, "prod", "web", keys)
		}
		if got := orderReason(err); got != tc.reason {
			t.Errorf("%s: reason %q, want %q (%v)", tc.name, got, tc.reason, err)
		}
	}
	_, err = VerifyDeletion("", "prod", "web", keys)
	if !strings.HasPrefix(err.Error(), "config_refused: unsigned deletion: ") {
		t.Errorf("deletion refusal: %v", err)
	}
	_, err = VerifyTarget("", "prod", "web", "stopped", "", keys)
	if !strings.HasPrefix(err.Error(), "target_refused: unsigned: ") {
		t.Errorf("target refusal: %v", err)
	}
	// without keys nothing is checked
	if s, err := (SignatureCheck{Cluster: "prod"}).Target("", "web", "stopped", ""); s != nil || err != nil {
		t.Errorf("no keys: %+v, %v", s, err)
	}
}

// FuzzVerifyTarget: no signature text but the one made verifies, and
// every refusal is an OrderError (hostile bytes never panic).
func FuzzVerifyTarget(f *testing.F) {
	pub, priv := newAdminKey(f)
	keys := map[string]ed25519.PublicKey{"alice": pub}
	good, _ := SignTarget("prod", "web", "stopped", "", "alice", priv, 5)
	f.Add(good)
	f.Add("")
	f.Add("alice 5 " + strings.Repeat("A", 88))
	f.Add(good + " " + good)
	f.Fuzz(func(t *testing.T, sig string) {
		s, err := VerifyTarget(sig, "prod", "web", "stopped", "", keys)
		if err != nil {
			if orderReason(err) == "" {
				t.Fatalf("not an OrderError: %v", err)
			}
			return
		}
		if strings.Join(strings.Fields(sig), " ") != good || s.Serial != 5 || s.Key != "alice" {
			t.Fatalf("verified a text that was not signed: %q (%+v)", sig, s)
		}
	})
}

// BenchmarkVerifyTarget: the check of a target's signature, paid once per
// target taken from a peer (docs/security.md, "Admin-signed deletions and
// targets").
func BenchmarkVerifyTarget(b *testing.B) {
	pub, priv := newAdminKey(b)
	keys := map[string]ed25519.PublicKey{"alice": pub}
	sig, _ := SignTarget("prod", "web", "stopped", "", "alice", priv, 5)
	for b.Loop() {
		if _, err := VerifyTarget(sig, "prod", "web", "stopped", "", keys); err != nil {
			b.Fatal(err)
		}
	}
}
