package config_test

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"strings"
	"testing"

	. "haven/config"
	"haven/config/tomlfile"
)

func newNodeKey(t *testing.T) string {
	t.Helper()
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return EncodeNodeKey(k.PublicKey().Bytes())
}

// [node_keys] and cluster.node_keys_mode: the keys are read per member,
// and each bad entry is refused naming the file, the line and the key.
func TestClusterNodeKeys(t *testing.T) {
	k1, k2 := newNodeKey(t), newNodeKey(t)
	head := "[cluster]\nsecret = \"" + testSecret + "\"\n"
	nodes := "[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\n"
	c, err := tomlfile.ParseCluster("cluster.toml", []byte(head+nodes+"[node_keys]\nn1 = \""+k1+"\"\nn2 = \""+k2+"\"\n"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeKeysMode != "require" || EncodeNodeKey(c.NodeKeys["n1"]) != k1 || EncodeNodeKey(c.NodeKeys["n2"]) != k2 {
		t.Errorf("keys: mode %q, %v", c.NodeKeysMode, c.NodeKeys)
	}
	c, err = tomlfile.ParseCluster("cluster.toml", []byte(head+"node_keys_mode = \"accept\"\n"+nodes+"[node_keys]\nn2 = \""+k2+"\"\n"), "n1")
	if err != nil || c.NodeKeys["n1"] != nil || c.NodeKeys["n2"] == nil {
		t.Errorf("accept with one key: %v, %v", c, err)
	}
	c, err = tomlfile.ParseCluster("cluster.toml", []byte(head+nodes), "n1")
	if err != nil || c.NodeKeys != nil {
		t.Errorf("no keys: %v, %v", c, err)
	}
	zero := EncodeNodeKey(make([]byte, 32))
	// a point of small order: every shared secret with it is zero
	one := EncodeNodeKey(append([]byte{1}, make([]byte, 31)...))
	tests := []struct{ data, want string }{
		{head + nodes + "[node_keys]\nn1 = \"" + k1 + "\"\nn3 = \"" + k2 + "\"\n", `cluster.toml:8: node_keys.n3: "n3" is not a cluster member`},
		{head + nodes + "[node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"abc\"\n", `cluster.toml:8: node_keys.n2: invalid node key "abc"`},
		{head + nodes + "[node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"" + k1[:43] + "\"\n", `cluster.toml:8: node_keys.n2: invalid node key`},
		{head + nodes + "[node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"" + zero + "\"\n", `cluster.toml:8: node_keys.n2: invalid node key "` + zero + `": not a usable X25519 public key`},
		{head + nodes + "[node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"" + one + "\"\n", `cluster.toml:8: node_keys.n2: invalid node key "` + one + `": not a usable X25519 public key`},
		{head + nodes + "[node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"" + k1 + "\"\n", `cluster.toml:8: node_keys.n2: the same key as n1`},
		{head + nodes + "[node_keys]\nn1 = \"" + k1 + "\"\n", `cluster.toml:6: node_keys: member n2 has no key: with cluster.node_keys_mode = "require"`},
		{head + nodes + "[node_keys]\nn1 = 3\n", `cluster.toml:7: node_keys.n1: want a string`},
		{head + "node_keys_mode = \"send\"\n" + nodes, `cluster.toml:3: cluster.node_keys_mode: "send", but [node_keys] lists no key`},
		{head + "node_keys_mode = \"on\"\n" + nodes, `cluster.toml:3: cluster.node_keys_mode: `},
	}
	for _, tt := range tests {
		_, err := tomlfile.ParseCluster("cluster.toml", []byte(tt.data), "n1")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCluster(%q)\n = %v\nwant %q", tt.data, err, tt.want)
		}
	}
	if _, err := ParseNodeKey(strings.Repeat("A", 43) + "="); err == nil || !bytes.Contains([]byte(err.Error()), []byte("not a usable")) {
		t.Errorf("all-zero key: %v", err)
	}
}
