package svcmgr

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/cli/cliutil"
	"haven/config"
)

// TestValidateChecksSignature: on a node whose cluster.toml lists
// [admin_keys], validate says which key signed a config, and refuses
// (exit 2, the reason) one that is unsigned, changed after signing or
// signed for another cluster; without admin keys it says the signature
// is not checked.
func TestValidateChecksSignature(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc", "node.toml"), []byte("[node]\nname = \"n1\"\n"), 0o644)
	head := "[cluster]\nname = \"prod\"\nsecret = \"3159c6d29505f6186d904edf9d27ceebf038c15d0029ef8c56266481db282dac\"\n[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\n"
	writeCluster := func(body string) {
		if err := os.WriteFile(filepath.Join(root, "etc", "cluster.toml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCluster(head + "[admin_keys]\nalice = \"" + config.EncodeAdminKey(pub) + "\"\n")
	text := "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\n\n[app.web]\nstart = \"/bin/true\"\n"
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "web.toml")
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	signed, err := config.SignService([]byte(text), "prod", "web", "alice", priv, 42)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runAt(t, root, "validate", "--config", write(string(signed)))
	if code != 0 || !strings.Contains(out, "valid (signed by alice, serial 42") {
		t.Fatalf("signed: exit %d, %q %q", code, out, errs)
	}
	other, _ := config.SignService([]byte(text), "test", "web", "alice", priv, 42)
	for _, tc := range []struct{ name, body, want string }{
		{"unsigned", text, "config_refused: unsigned"},
		{"changed", strings.Replace(string(signed), "/bin/true", "/bin/evil", 1), "config_refused: bad signature"},
		{"another cluster's", string(other), "config_refused: bad signature"},
	} {
		code, _, errs := runAt(t, root, "validate", "--config", write(tc.body))
		if code != cliutil.ExitUsage || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "web.toml") {
			t.Errorf("%s: exit %d, stderr %q", tc.name, code, errs)
		}
	}
	writeCluster(head)
	code, out, _ = runAt(t, root, "validate", "--config", write(string(signed)))
	if code != 0 || !strings.Contains(out, "not checked: cluster.toml lists no [admin_keys]") {
		t.Errorf("no admin keys: exit %d, %q", code, out)
	}
}
