package config_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"strings"
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// nodeKey is a new public node key, as [node_keys] lists it.
func nodeKey(t *testing.T) string {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return config.EncodeNodeKey(k.PublicKey().Bytes())
}

func TestArbitratorConf(t *testing.T) {
	sec := "6b1d0c8f2e4a7c9b3d5f1e0a2c4b6d8f9e7a5c3b1d0f2e4a6c8b0d2f4e6a8c01"
	good := "[arbitrator]\nlisten = \"192.0.2.9:10400\"\n\n[cluster.prod]\nsecret = \"" + sec + "\"\n\n[cluster.test]\nsecret = \"" + strings.ToUpper(sec) + "\"\n"
	c, err := tomlfile.Decode.ParseArbitratorConf("a.toml", []byte(good))
	if err != nil || c.Listen != "192.0.2.9:10400" || strings.Join(c.ClusterNames(), ",") != "prod,test" || c.Clusters["test"].Secret != sec || c.Clusters["prod"].NodeKeys != nil || c.Clusters["prod"].NodeKeysMode != "require" {
		t.Fatalf("good config: %+v, %v", c, err)
	}
	k1, k2 := nodeKey(t), nodeKey(t)
	head := "[arbitrator]\nlisten = \"192.0.2.9:1\"\n[cluster.prod]\nsecret = \"" + sec + "\"\n"
	// the members' keys, as a sub-table or inline
	for _, keys := range []string{"[cluster.prod.node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"" + k2 + "\"\n", "node_keys = { n1 = \"" + k1 + "\", n2 = \"" + k2 + "\" }\nnode_keys_mode = \"accept\"\n"} {
		c, err := tomlfile.Decode.ParseArbitratorConf("a.toml", []byte(head+keys))
		if err != nil || len(c.Clusters["prod"].NodeKeys) != 2 || config.EncodeNodeKey(c.Clusters["prod"].NodeKeys["n2"]) != k2 || !c.HasNodeKeys() {
			t.Fatalf("node keys %q: %+v, %v", keys, c, err)
		}
		if strings.Contains(keys, "accept") != (c.Clusters["prod"].NodeKeysMode == "accept") {
			t.Fatalf("mode of %q: %q", keys, c.Clusters["prod"].NodeKeysMode)
		}
	}
	for _, tc := range []struct{ data, want string }{
		{"[cluster.prod]\nsecret = \"" + sec + "\"\n", "a.toml: arbitrator.listen: required"},
		{"[arbitrator]\nlisten = \"192.0.2.9\"\n[cluster.prod]\nsecret = \"" + sec + "\"\n", "a.toml:2: arbitrator.listen: invalid address"},
		{"[arbitrator]\nlisten = \"192.0.2.9:1\"\nport = 3\n[cluster.prod]\nsecret = \"" + sec + "\"\n", "a.toml:3: arbitrator.port: unknown keyword"},
		{"[arbitrator]\nlisten = \"192.0.2.9:1\"\n", "a.toml: no [cluster.NAME] section"},
		{"[arbitrator]\nlisten = \"192.0.2.9:1\"\n[cluster.prod]\nsecret = \"x\"\n", "a.toml:4: cluster.prod.secret: must be 64 hex digits"},
		{"[arbitrator]\nlisten = \"192.0.2.9:1\"\n[cluster.prod]\nsecret = \"" + sec + "\"\nname = \"x\"\n", "a.toml:5: cluster.prod.name: unknown keyword"},
		{"[arbitrator]\nlisten = \"192.0.2.9:1\"\n[nodes]\nn1 = \"x\"\n", "a.toml:3: nodes: unknown section"},
		{"[arbitrator\n", "a.toml:2: syntax error"},
		// node keys: each a valid key, of its own, under a node name
		{head + "[cluster.prod.node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"abc\"\n", "a.toml:7: cluster.prod.node_keys.n2: invalid node key"},
		{head + "[cluster.prod.node_keys]\nn1 = \"" + k1 + "\"\nn2 = \"" + k1 + "\"\n", "a.toml:7: cluster.prod.node_keys.n2: the same key as n1"},
		{head + "[cluster.prod.node_keys]\nn1 = \"" + strings.Repeat("A", 43) + "=\"\n", "a.toml:6: cluster.prod.node_keys.n1: invalid node key"},
		{head + "[cluster.prod.node_keys]\nn1 = 3\n", "a.toml:6: cluster.prod.node_keys.n1: want a string"},
		{head + "node_keys = \"" + k1 + "\"\n", "a.toml:5: cluster.prod.node_keys: want a table"},
		{head + "node_keys = { n1 = \"x\" }\n", "a.toml:5: cluster.prod.node_keys.n1: invalid node key"},
		{head + "node_keys_mode = \"send\"\n[cluster.prod.node_keys]\nn1 = \"" + k1 + "\"\n", "a.toml:5: cluster.prod.node_keys_mode: want \"require\" or \"accept\""},
		{head + "node_keys_mode = \"accept\"\n", "a.toml:5: cluster.prod.node_keys_mode: \"accept\", but node_keys lists no key"},
		{"[arbitrator]\nlisten = \"192.0.2.9:1\"\n[cluster.prod]\nsecret = \"" + strings.Repeat("0", 64) + "\"\n", "a.toml:4: cluster.prod.secret: too weak"},
	} {
		_, err := tomlfile.Decode.ParseArbitratorConf("a.toml", []byte(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.data, err, tc.want)
		}
	}
}
