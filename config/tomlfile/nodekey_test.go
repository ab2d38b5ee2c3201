package tomlfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/config"
)

func TestGenerateLoadNodeKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etc", "node.key")
	k, err := GenerateNodeKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v, %v", fi, err)
	}
	got, err := LoadNodeKey(path)
	if err != nil || !got.Equal(k) {
		t.Fatalf("Load: %v", err)
	}
	if _, err := config.ParseNodeKey(PublicNodeKey(k)); err != nil {
		t.Errorf("public key %q does not parse: %v", PublicNodeKey(k), err)
	}
	// never replaced
	if _, err := GenerateNodeKey(path); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("second Generate: %v", err)
	}
	if again, _ := LoadNodeKey(path); !again.Equal(k) {
		t.Error("the key changed")
	}
}

// A key other users may read, a link, a directory or content that is no
// key is refused, and the content is never echoed.
func TestNodeKeyLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "node.key")
	if _, err := GenerateNodeKey(path); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o640)
	if _, err := LoadNodeKey(path); err == nil || !strings.Contains(err.Error(), "mode 0640 lets other users read") {
		t.Errorf("mode 0640: %v", err)
	}
	os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link.key")
	os.Symlink(path, link)
	if _, err := LoadNodeKey(link); err == nil {
		t.Error("a symbolic link was followed")
	}
	if _, err := LoadNodeKey(dir); err == nil {
		t.Error("a directory was read")
	}
	bad := filepath.Join(dir, "bad.key")
	secretish := "c2VjcmV0LWJ1dC1ub3QtMzItYnl0ZXMK"
	os.WriteFile(bad, []byte(secretish+"\n"), 0o600)
	if _, err := LoadNodeKey(bad); err == nil || strings.Contains(err.Error(), secretish) || !strings.Contains(err.Error(), "not a node key") {
		t.Errorf("bad content: %v", err)
	}
	if _, err := LoadNodeKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing key loaded")
	}
}
