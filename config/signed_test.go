package config_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	. "haven/config"
	"haven/config/tomlfile"
)

func newAdminKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

const signedWeb = "[DEFAULT]\nnodes = \"n1 n2\"\n\n[app.web]\nstart = \"/bin/true\"\n"

// reasonOf is the Reason of a *SignatureError, "" for another error.
func reasonOf(err error) string {
	var se *SignatureError
	if errors.As(err, &se) {
		return se.Reason
	}
	return ""
}

// The signature check: a config signed by a listed key verifies; every
// other text is refused with its reason: missing, another key (unknown,
// or another key under a listed name), changed after signing, another
// cluster, another service, a serial changed in the line, a damaged line,
// a line that is not the last one.
func TestVerifyService(t *testing.T) {
	alicePub, alice := newAdminKey(t)
	bobPub, bob := newAdminKey(t)
	_, eve := newAdminKey(t)
	keys := map[string]ed25519.PublicKey{"alice": alicePub, "bob": bobPub}
	signed, err := SignService([]byte(signedWeb), "prod", "web", "alice", alice, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(signed, []byte(signedWeb)) || !bytes.HasSuffix(signed, []byte("\n")) || bytes.Count(signed, []byte("\n")) != 6 {
		t.Fatalf("signed text:\n%s", signed)
	}
	s, err := VerifyService("web.toml", signed, "prod", "web", keys)
	if err != nil || s.Key != "alice" || s.Serial != 7 {
		t.Fatalf("verify: %+v, %v", s, err)
	}
	// without the final newline, and parsed as TOML: the line is a comment
	if _, err := VerifyService("web.toml", bytes.TrimSuffix(signed, []byte("\n")), "prod", "web", keys); err != nil {
		t.Errorf("without the final newline: %v", err)
	}
	if _, err := tomlfile.ParseService("web.toml", "web", signed); err != nil {
		t.Errorf("signed config does not parse: %v", err)
	}
	// signing again replaces the line
	again, _ := SignService(signed, "prod", "web", "bob", bob, 8)
	if s, err := VerifyService("web.toml", again, "prod", "web", keys); err != nil || s.Key != "bob" || s.Serial != 8 || bytes.Count(again, []byte(SignaturePrefix)) != 1 {
		t.Errorf("signed again: %+v, %v\n%s", s, err, again)
	}
	byEve, _ := SignService([]byte(signedWeb), "prod", "web", "eve", eve, 7)
	eveAsAlice, _ := SignService([]byte(signedWeb), "prod", "web", "alice", eve, 7)
	otherCluster, _ := SignService([]byte(signedWeb), "test", "web", "alice", alice, 7)
	otherService, _ := SignService([]byte(signedWeb), "prod", "db", "alice", alice, 7)
	changed := bytes.Replace(signed, []byte("/bin/true"), []byte("/bin/sh"), 1)
	line := signed[len(signedWeb):]
	serialUp := []byte(signedWeb + strings.Replace(string(line), " 7 ", " 8 ", 1))
	tests := []struct {
		name, raw, reason, msg string
	}{
		{"unsigned", signedWeb, SigUnsigned, "web.toml: config_refused: unsigned: no signature line"},
		{"empty", "", SigUnsigned, "no signature line"},
		{"unknown key", string(byEve), SigUnknownKey, `web.toml:6: config_refused: unknown key: signed by "eve", which cluster.toml [admin_keys] does not list (alice, bob)`},
		{"another key under a listed name", string(eveAsAlice), SigBad, `the signature of "alice" does not verify`},
		{"changed after signing", string(changed), SigBad, "does not verify"},
		{"another cluster", string(otherCluster), SigBad, "does not verify"},
		{"another service", string(otherService), SigBad, "does not verify"},
		{"serial changed", string(serialUp), SigBad, "does not verify"},
		{"line cut", string(signed[:len(signed)-10]), SigBad, "not 64 bytes in base64"},
		{"line not last", string(signed) + "[app.evil]\nstart = \"/bin/rm\"\n", SigBad, "the signature line is not the last line"},
		{"two fields", signedWeb + SignaturePrefix + "alice 7\n", SigBad, "2 fields"},
		{"bad serial", signedWeb + SignaturePrefix + "alice -1 AAAA\n", SigBad, "invalid serial"},
		{"bad name", signedWeb + SignaturePrefix + "a/b 1 AAAA\n", SigBad, "invalid key name"},
		{"text after the line on it", strings.TrimSuffix(string(signed), "\n") + " x\n", SigBad, "4 fields"},
	}
	for _, tt := range tests {
		_, err := VerifyService("web.toml", []byte(tt.raw), "prod", "web", keys)
		if reasonOf(err) != tt.reason || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v (reason %q), want %s: %q", tt.name, err, reasonOf(err), tt.reason, tt.msg)
		}
	}
	if s, ok := SignatureOf(signed); !ok || s.Serial != 7 || s.Key != "alice" {
		t.Errorf("SignatureOf: %+v %v", s, ok)
	}
	if _, ok := SignatureOf([]byte(signedWeb)); ok {
		t.Error("SignatureOf an unsigned text")
	}
	if got := Unsigned(signed); string(got) != signedWeb {
		t.Errorf("Unsigned: %q", got)
	}
}

// [admin_keys]: read by name; a bad entry is refused naming the file, the
// line and the key.
func TestClusterAdminKeys(t *testing.T) {
	a, _ := newAdminKey(t)
	b, _ := newAdminKey(t)
	ka, kb := EncodeAdminKey(a), EncodeAdminKey(b)
	head := "[cluster]\nsecret = \"" + testSecret + "\"\n[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\n"
	c, err := tomlfile.ParseCluster("cluster.toml", []byte(head+"[admin_keys]\nalice = \""+ka+"\"\nbob = \""+kb+"\"\n"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AdminKeys) != 2 || !c.AdminKeys["alice"].Equal(a) || !c.AdminKeys["bob"].Equal(b) {
		t.Errorf("admin keys: %v", c.AdminKeys)
	}
	for _, data := range []string{head, head + "[admin_keys]\n"} {
		if c, err := tomlfile.ParseCluster("cluster.toml", []byte(data), "n1"); err != nil || c.AdminKeys != nil {
			t.Errorf("no admin keys: %v, %v", c.AdminKeys, err)
		}
	}
	zero := EncodeAdminKey(make([]byte, 32))
	tests := []struct{ data, want string }{
		{head + "[admin_keys]\nalice = \"abc\"\n", `cluster.toml:7: admin_keys.alice: invalid admin key "abc"`},
		{head + "[admin_keys]\nalice = \"" + ka[:43] + "\"\n", `cluster.toml:7: admin_keys.alice: invalid admin key`},
		{head + "[admin_keys]\nalice = \"" + zero + "\"\n", `cluster.toml:7: admin_keys.alice: invalid admin key "` + zero + `": all zeros`},
		{head + "[admin_keys]\nalice = \"" + ka + "\"\nbob = \"" + ka + "\"\n", `cluster.toml:8: admin_keys.bob: the same key as alice`},
		{head + "[admin_keys]\nalice = 3\n", `cluster.toml:7: admin_keys.alice: want a string`},
		{head + "[admin_keys]\n\"a b\" = \"" + ka + "\"\n", `admin_keys.a b: invalid key name`},
	}
	for _, tt := range tests {
		_, err := tomlfile.ParseCluster("cluster.toml", []byte(tt.data), "n1")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q:\n got %v\nwant %s", tt.data, err, tt.want)
		}
	}
}

// FuzzVerifyService: hostile bytes never crash the check, and no text
// other than what was signed verifies: a verified text's body is the
// signed one, under the signed serial.
func FuzzVerifyService(f *testing.F) {
	pub, priv := newAdminKey(f)
	keys := map[string]ed25519.PublicKey{"alice": pub}
	signed, _ := SignService([]byte(signedWeb), "prod", "web", "alice", priv, 3)
	f.Add(signed)
	f.Add([]byte(signedWeb))
	f.Add([]byte(SignaturePrefix))
	f.Add([]byte(SignaturePrefix + "alice 1 " + strings.Repeat("A", 88) + "\n"))
	f.Add(append(signed, signed...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := VerifyService("web.toml", raw, "prod", "web", keys)
		if err != nil {
			if reasonOf(err) == "" {
				t.Fatalf("not a SignatureError: %v", err)
			}
			return
		}
		if !bytes.Equal(Unsigned(raw), []byte(signedWeb)) || s.Serial != 3 || s.Key != "alice" {
			t.Fatalf("verified a text that was not signed: %q (%+v)", raw, s)
		}
	})
}

// BenchmarkSignedConfig: the cost of the check of a signed config of
// about 1 KiB, beside that of its parse, which every config taken pays
// (docs/security.md, "Admin-signed configs": "Cost").
func BenchmarkSignedConfig(b *testing.B) {
	pub, priv := newAdminKey(b)
	keys := map[string]ed25519.PublicKey{"alice": pub}
	text := signedWeb + strings.Repeat("# a comment line of the config, to make it about 1 KiB\n", 18)
	signed, _ := SignService([]byte(text), "prod", "web", "alice", priv, 1)
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := tomlfile.ParseService("web.toml", "web", signed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if _, err := VerifyService("web.toml", signed, "prod", "web", keys); err != nil {
				b.Fatal(err)
			}
		}
	})
}
