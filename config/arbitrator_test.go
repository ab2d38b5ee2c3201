package config_test

import (
	"strings"
	"testing"

	"haven/config/tomlfile"
)

func TestArbitratorConf(t *testing.T) {
	sec := strings.Repeat("ab", 32)
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
	} {
		_, err := tomlfile.Decode.ParseArbitratorConf("a.toml", []byte(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.data, err, tc.want)
		}
	}
}
