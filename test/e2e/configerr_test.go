package e2e

import (
	"fmt"
	"strings"
	"testing"

	"haven/test/testbed"
)

// twoNodeRoot writes a node n1 of a two-node cluster whose node.toml has
// the [hb] keys given (and the [node] keys extra), and whose cluster.toml
// holds secret: the heartbeat starts, so every heartbeat setting is read.
func twoNodeRoot(t *testing.T, secret, timeout, interval string, extra ...string) (*node, int) {
	t.Helper()
	p1, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, "n1", testbed.NodeToml{Name: "n1", Keys: extra, HBAddr: "127.0.0.1", HBPort: p1, HBTimeout: timeout, HBInterval: interval}.String())
	if secret == "" {
		secret = testbed.NewSecret()
	}
	if err := testbed.WriteClusterToml(n.root, testbed.ClusterToml("c", secret, []testbed.Member{
		{Name: "n1", Addr: fmt.Sprintf("127.0.0.1:%d", p1)}, {Name: "n2", Addr: fmt.Sprintf("127.0.0.1:%d", p2)}})); err != nil {
		t.Fatal(err)
	}
	return n, p1
}

// Every config error found at daemon start, the checks across keys too,
// exits 2 naming the file, the line and the keys (never 1: the systemd
// unit restarts the daemon on 1 forever, not on 2).
func TestConfigCrossKeyErrorsExit2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		n    func() *node
		want []string
	}{
		{"interval not shorter than timeout", func() *node { n, _ := twoNodeRoot(t, "", "2s", "3s"); return n },
			[]string{"node.toml:", "hb.interval: hb.interval 3s must be shorter than hb.timeout 2s"}},
		{"default interval not shorter than timeout", func() *node { n, _ := twoNodeRoot(t, "", "2s", ""); return n },
			[]string{"node.toml:", "hb.timeout: hb.interval 5s (the default) must be shorter than hb.timeout 2s"}},
		{"metrics on the heartbeat port", func() *node {
			n, port := twoNodeRoot(t, "", "", "")
			setNodeKey(t, n, fmt.Sprintf("metrics_addr = \":%d\"", port))
			return n
		}, []string{"node.toml:2: node.metrics_addr:", "uses the heartbeat port: hb.port"}},
		{"all-zero secret", func() *node { n, _ := twoNodeRoot(t, strings.Repeat("0", 64), "", ""); return n },
			[]string{"cluster.toml:3: cluster.secret: too weak: only 1 distinct byte values"}},
		{"repeated pattern secret", func() *node { n, _ := twoNodeRoot(t, strings.Repeat("deadbeef", 8), "", ""); return n },
			[]string{"cluster.toml:3: cluster.secret: too weak: only 4 distinct byte values"}},
		{"links: members list different numbers", func() *node {
			n, p := twoNodeRoot(t, "", "", "")
			writeClusterToml(t, n, testbed.ClusterToml("c", testbed.NewSecret(), []testbed.Member{
				{Name: "n1", Links: []string{fmt.Sprintf("127.0.0.1:%d", p), fmt.Sprintf("127.0.0.2:%d", p)}}, {Name: "n2", Addr: "127.0.0.1:1"}}))
			return n
		}, []string{"cluster.toml:7: nodes.n2: 1 heartbeat address(es), but n1 lists 2"}},
		{"links: a host name among several", func() *node {
			n, p := twoNodeRoot(t, "", "", "")
			writeClusterToml(t, n, testbed.ClusterToml("c", testbed.NewSecret(), []testbed.Member{
				{Name: "n1", Links: []string{fmt.Sprintf("127.0.0.1:%d", p), "db1.example:1"}}, {Name: "n2", Links: []string{"127.0.0.1:1", "127.0.0.2:1"}}}))
			return n
		}, []string{`cluster.toml:6: nodes.n1: link 2: "db1.example:1": with several links each address must be an IP address`}},
	}
	for _, c := range cases {
		n := c.n()
		for _, args := range [][]string{{"daemon", "run"}, {"daemon", "start"}} {
			r := runBounded(t, n, args...) // before the fix some of these daemons ran
			if r.Code != 2 {
				t.Errorf("%s: nodemgr %s: exit %d, want 2: %s", c.name, strings.Join(args, " "), r.Code, r)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(r.Out+r.Err, w) {
					t.Errorf("%s: nodemgr %s: %s: want %q", c.name, strings.Join(args, " "), r, w)
				}
			}
			if strings.Contains(r.Out+r.Err, "0000000000") || strings.Contains(r.Out+r.Err, "deadbeefdeadbeef") {
				t.Errorf("%s: the secret is echoed: %s", c.name, r)
			}
		}
	}
}
