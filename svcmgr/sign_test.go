package svcmgr

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/cli/cliutil"
	"haven/config"
)

// An admin key on a workstation: generated 0600 and never printed (only
// its [admin_keys] line), never replaced; a file signed with it for a
// cluster named on the line verifies against that line's key, for that
// cluster and service only; a key file other users may read is refused.
func TestKeyGenerateAndSignOnAWorkstation(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "keys", "alice.key")
	code, out, errs := runCLI(t, "key", "generate", "--name", "alice", "--key", key)
	if code != 0 || !strings.HasPrefix(out, `alice = "`) {
		t.Fatalf("generate: exit %d, %q %q", code, out, errs)
	}
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	data, _ := os.ReadFile(key)
	seed := strings.Fields(string(data))[2]
	if strings.Contains(out+errs, seed) {
		t.Fatal("the private key was printed")
	}
	if code, _, errs := runCLI(t, "key", "generate", "--name", "alice", "--key", key); code == 0 || !strings.Contains(errs, "never replaced") {
		t.Errorf("generate over a key: exit %d, %q", code, errs)
	}
	code, shown, _ := runCLI(t, "key", "show", "--key", key)
	if code != 0 || shown != out {
		t.Errorf("show: %d %q, want %q", code, shown, out)
	}
	pub, err := config.ParseAdminKey(strings.Split(out, `"`)[1])
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "web.toml")
	os.WriteFile(file, []byte("[DEFAULT]\nnodes = \"n1\"\n[app.web]\nstart = \"/bin/true\"\n"), 0o644)
	if code, _, errs := runCLI(t, "sign", file, "--key", key); code != cliutil.ExitUsage || !strings.Contains(errs, "--cluster NAME") {
		t.Errorf("sign without a cluster: exit %d, %q", code, errs)
	}
	if code, out, errs := runCLI(t, "sign", file, "--key", key, "--cluster", "prod", "--serial", "42"); code != 0 || !strings.Contains(out, "signed for service web by alice, serial 42") {
		t.Fatalf("sign: exit %d, %q %q", code, out, errs)
	}
	signed, _ := os.ReadFile(file)
	keys := map[string]ed25519.PublicKey{"alice": pub}
	if s, err := config.VerifyService(file, signed, "prod", "web", keys); err != nil || s.Serial != 42 {
		t.Errorf("verify: %v %v", s, err)
	}
	for _, c := range [][2]string{{"test", "web"}, {"prod", "db"}} {
		if _, err := config.VerifyService(file, signed, c[0], c[1], keys); err == nil {
			t.Errorf("verifies for cluster %s service %s", c[0], c[1])
		}
	}
	// signed again: a serial above the text's own
	if code, _, errs := runCLI(t, "sign", file, "--key", key, "--cluster", "prod"); code != 0 {
		t.Fatalf("sign again: %q", errs)
	}
	again, _ := os.ReadFile(file)
	if s, err := config.VerifyService(file, again, "prod", "web", keys); err != nil || s.Serial <= 42 || strings.Count(string(again), config.SignaturePrefix) != 1 {
		t.Errorf("signed again: %v %v\n%s", s, err, again)
	}
	os.Chmod(key, 0o640)
	if code, _, errs := runCLI(t, "sign", file, "--key", key, "--cluster", "prod"); code == 0 || !strings.Contains(errs, "lets other users read an admin's private key") {
		t.Errorf("key readable by others: exit %d, %q", code, errs)
	}
}
