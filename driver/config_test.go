package driver

import (
	"slices"
	"testing"
	"time"

	"haven/config"
)

// The digest of what the members' configuration must share: a part
// differs exactly when what it covers differs (an arbitrator's URI, a
// member fenced or not, the disk fence), not when a timeout or a fence
// command's text does.
func TestClusterConfParts(t *testing.T) {
	base := func() (*config.NodeConfig, *config.ClusterConfig) {
		return &config.NodeConfig{Name: "n1"}, &config.ClusterConfig{Name: "prod", Quorum: true,
			Nodes:       []config.Member{{Name: "n1", Addr: "10.0.0.1:10000"}, {Name: "n2", Addr: "10.0.0.2:10000"}},
			Arbitrators: []config.Arbitrator{{Name: "a1", URI: "haven://10.0.0.9:10001", Weight: 1, Timeout: time.Second}},
			Stonith:     map[string]config.Stonith{"n2": {Node: "n2", Command: "ipmitool ... off", Timeout: time.Minute}}}
	}
	n, cl := base()
	mine := ClusterConf(n, cl)
	for _, tc := range []struct {
		what   string
		change func(n *config.NodeConfig, cl *config.ClusterConfig)
		want   []string
	}{
		{"the secret and a timeout", func(n *config.NodeConfig, cl *config.ClusterConfig) {
			cl.Secret, cl.Arbitrators[0].Timeout, cl.Stonith["n2"] = "x", 3*time.Second, config.Stonith{Node: "n2", Command: "ipmitool ... off"}
		}, nil},
		{"an arbitrator moved", func(_ *config.NodeConfig, cl *config.ClusterConfig) { cl.Arbitrators[0].URI = "haven://10.0.0.8:10001" },
			[]string{"cluster.toml [arbitrator.*]"}},
		{"a member more", func(_ *config.NodeConfig, cl *config.ClusterConfig) {
			cl.Nodes = append(cl.Nodes, config.Member{Name: "n3", Addr: "10.0.0.3:10000"})
		}, []string{"cluster.toml [nodes]"}},
		{"quorum off", func(_ *config.NodeConfig, cl *config.ClusterConfig) { cl.Quorum = false }, []string{"cluster.toml quorum"}},
		{"a fence command", func(_ *config.NodeConfig, cl *config.ClusterConfig) {
			cl.Stonith["n2"] = config.Stonith{Node: "n2", Command: "other"}
		}, nil},
		{"a member fenced more", func(_ *config.NodeConfig, cl *config.ClusterConfig) {
			cl.Stonith["n1"] = config.Stonith{Node: "n1", Command: "ipmitool ... off"}
		}, []string{"cluster.toml [stonith.*]"}},
		{"disk fencing", func(n *config.NodeConfig, _ *config.ClusterConfig) {
			n.HB.Disk.Path, n.HB.Disk.Fence = "/dev/sdb", true
		},
			[]string{"node.toml hb.disk.fence"}},
	} {
		n, cl := base()
		tc.change(n, cl)
		if got := mine.Differs(ClusterConf(n, cl)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: differs in %v, want %v", tc.what, got, tc.want)
		}
	}
}
