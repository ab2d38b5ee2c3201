package config_test

import (
	"strings"
	"testing"

	"haven/config/tomlfile"
)

func TestArbitratorConf(t *testing.T) {
	sec := "6b1d0c8f2e4a7c9b3d5f1e0a2c4b6d8f9e7a5c3b1d0f2e4a6c8b0d2f4e6a8c01"
	good := "[arbitrator]\nlisten = \"192.0.2.9:10400\"\n\n[cluster.prod]\nsecret = \"" + sec + "\"\n\n[cluster.test]\nsecret = \"" + strings.ToUpper(sec) + "\"\n"
	c, err := tomlfile.Decode.ParseArbitratorConf("a.toml", []byte(good))
	if err != nil || c.Listen != "192.0.2.9:10400" || strings.Join(c.ClusterNames(), ",") != "prod,test" || c.Clusters["test"] != sec {
		t.Fatalf("good config: %+v, %v", c, err)
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
		{"[arbitrator]\nlisten = \"192.0.2.9:1\"\n[cluster.prod]\nsecret = \"" + strings.Repeat("0", 64) + "\"\n", "a.toml:4: cluster.prod.secret: too weak"},
	} {
		_, err := tomlfile.Decode.ParseArbitratorConf("a.toml", []byte(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.data, err, tc.want)
		}
	}
}
