package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// A service's nodes are cluster members: create and set
// on the daemon refuse another name (exit 2, the file, DEFAULT.nodes and
// the members), on a single node without cluster.toml too (the node
// itself is the only member).
func TestServiceNodesMustBeMembers(t *testing.T) {
	t.Parallel()
	n := newNode(t, "n1", "")
	n.startDaemon()
	cfg := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, cfg, testbed.HAService(`["n1", "n9"]`, ""))
	r := n.run("svcmgr", "-s", "web", "create", "--config", cfg)
	if r.Code != 2 || !strings.Contains(r.Err, "DEFAULT.nodes: n9 is not a cluster member (members: n1)") || !strings.Contains(r.Err, "web.toml:") {
		t.Fatalf("create with nodes n1, n9: want exit 2 naming web.toml, DEFAULT.nodes and the members\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(n.root, "etc", "services", "web.toml")); !os.IsNotExist(err) {
		t.Fatalf("the refused config is installed: %v", err)
	}
	createService(t, n, "web", testbed.HAService(`["n1"]`, ""))
	r = n.run("svcmgr", "-s", "web", "set", "--kw", "nodes+=n9")
	if r.Code != 2 || !strings.Contains(r.Err, "DEFAULT.nodes: n9 is not a cluster member (members: n1)") {
		t.Fatalf("set --kw nodes+=n9: want exit 2 naming DEFAULT.nodes and the members\n%s", r)
	}
	if got := n.must("svcmgr", "-s", "web", "get", "--kw", "nodes"); strings.Contains(got, "n9") {
		t.Fatalf("nodes after a refused set: %s", got)
	}
	n.must("svcmgr", "-s", "web", "set", "--kw", "priority=5") // other edits go on
}

// A config received from a peer naming a node that is not a member here
// (the peers' cluster.toml differ) is refused as a peer config that does
// not parse is: not installed, config_refused logged with the key, and the
// service shown as invalid in this node's status (svcmon) until a valid
// version is installed.
func TestPeerConfigWithUnknownNodeRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t, []string{"n1", "n2", "n3"}, clusterOpts{})
	p := filepath.Join(c["n2"].root, "etc", "cluster.toml")
	var keep []string
	for _, l := range strings.Split(readFile(t, p), "\n") {
		if !strings.HasPrefix(l, "n3 = ") {
			keep = append(keep, l)
		}
	}
	writeClusterToml(t, c["n2"], strings.Join(keep, "\n"))
	c["n1"].startDaemon()
	c["n2"].startDaemon()
	waitFor(t, 10*time.Second, "n1 sees n2 up", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })
	cfg := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, cfg, testbed.HAService(`["n1", "n2", "n3"]`, ""))
	// n1 installs it (n3 is a member there); n2 never confirms it
	c["n1"].run("svcmgr", "-s", "web", "create", "--config", cfg)
	waitFor(t, 20*time.Second, "n2 logs the refused config", func() bool {
		return strings.Contains(nodeLog(t, c["n2"]), "DEFAULT.nodes: n3 is not a cluster member (members: n1, n2)")
	})
	if _, err := os.Stat(filepath.Join(c["n2"].root, "etc", "services", "web.toml")); !os.IsNotExist(err) {
		t.Fatalf("n2 installed a config naming a node it does not know: %v", err)
	}
	// shown as invalid on n2 (svcmon), as a config that does not parse is
	waitFor(t, 10*time.Second, "n2 shows web's config refused", func() bool {
		e := c["n2"].status().Services["web"].ConfigError
		return strings.Contains(e, "the config from n1 is refused here: ") && strings.Contains(e, "DEFAULT.nodes: n3 is not a cluster member (members: n1, n2)")
	})
	if out := c["n2"].must("svcmon"); !strings.Contains(out, "config invalid: the config from n1 is refused here") {
		t.Fatalf("svcmon on n2 does not show web's config as invalid:\n%s", out)
	}
	// a valid version from n1 is installed, and the mark goes
	c["n1"].must("svcmgr", "-s", "web", "set", "--kw", "nodes-=n3")
	waitFor(t, 20*time.Second, "n2 installs the repaired web", func() bool {
		_, err := os.Stat(filepath.Join(c["n2"].root, "etc", "services", "web.toml"))
		return err == nil
	})
	waitFor(t, 10*time.Second, "the refusal no longer shown on n2", func() bool { return c["n2"].status().Services["web"].ConfigError == "" })
}
