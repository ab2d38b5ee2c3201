package daemon

import (
	"path/filepath"
	"strings"
	"testing"

	"haven/config/tomlfile"
)

// An arbitrator's key in cluster.toml needs this node's key pair: without
// node.key the daemon refuses to start (the file, the line, the key);
// with it the reports to that arbitrator get both keys.
func TestLoadNodeKeysArbitrator(t *testing.T) {
	dir := t.TempDir()
	priv, err := tomlfile.GenerateNodeKey(filepath.Join(dir, "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	arb, err := tomlfile.ArbitratorKeyKind.Generate(filepath.Join(dir, "arbitrator.key"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := tomlfile.GenerateNodeKey(filepath.Join(dir, "n2.key"))
	base := "[cluster]\nsecret = \"6b1d0c8f2e4a7c9b3d5f1e0a2c4b6d8f9e7a5c3b1d0f2e4a6c8b0d2f4e6a8c01\"\n[nodes]\nn1 = \"127.0.0.1:10000\"\nn2 = \"127.0.0.2:10000\"\n" +
		"[arbitrator.a1]\nuri = \"haven://127.0.0.3:10400\"\nkey = \"" + tomlfile.PublicNodeKey(arb) + "\"\n"
	keys := "[node_keys]\nn1 = \"" + tomlfile.PublicNodeKey(priv) + "\"\nn2 = \"" + tomlfile.PublicNodeKey(other) + "\"\n"

	c, err := tomlfile.ParseCluster("cluster.toml", []byte(base), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadNodeKeys(filepath.Join(dir, "node.key"), c, "n1"); err == nil || !strings.HasPrefix(err.Error(), "cluster.toml:8: arbitrator.a1.key: this node has no node key") {
		t.Fatalf("an arbitrator key without node keys: %v", err)
	}
	c, err = tomlfile.ParseCluster("cluster.toml", []byte(base+keys), "n1")
	if err != nil {
		t.Fatal(err)
	}
	nk, err := loadNodeKeys(filepath.Join(dir, "node.key"), c, "n1")
	if err != nil || nk.priv == nil || nk.arbs["a1"] == nil || !nk.arbs["a1"].Equal(arb.PublicKey()) {
		t.Fatalf("keys: %+v, %v", nk, err)
	}
}
