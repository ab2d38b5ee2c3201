package config

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// A web token must be long and look random (WebTokenWeak): repeats,
// patterns and runs are refused, random tokens of 12 bytes and more (24
// hexadecimal digits, 16 characters of base64) are taken.
func TestWebTokenWeak(t *testing.T) {
	for _, tok := range []string{
		"short", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abababababababababababab", "abcdabcdabcdabcdabcdabcd",
		"0123456789abcdef", "0123456789abcdefghijklmn", "passwordpassword", "Summer2024Summer", "letmeinletmein12", "1111111111111111111111111111111112",
	} {
		if WebTokenWeak(tok) == "" {
			t.Errorf("WebTokenWeak(%q) = \"\" (%.0f bits), want a refusal", tok, webTokenBits(tok))
		}
	}
	for _, tok := range []string{"d5b1c0e7a9f24c3e8b6a7d1f", "tok-3f9a1c0b7d2e4a65", "correct horse battery staple"} {
		if why := WebTokenWeak(tok); why != "" {
			t.Errorf("WebTokenWeak(%q): %s", tok, why)
		}
	}
	// random tokens of 12 bytes and more, in hexadecimal (24 digits) or
	// base64 (16 characters), pass: the estimate refuses what a person
	// typed, not what a generator made
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 20000 {
		b := make([]byte, 12+n%13)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		for _, tok := range []string{hex.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
			if why := WebTokenWeak(tok); why != "" {
				t.Fatalf("a random token refused: %q: %s", tok, why)
			}
		}
	}
}
