package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// refused runs `nodemgr daemon start` and wants exit want with one line
// on stderr holding every part of msg.
func refused(t *testing.T, n *node, want int, msg ...string) {
	t.Helper()
	r := n.run("nodemgr", "daemon", "start")
	if r.Code != want {
		t.Fatalf("daemon start on %s: want exit %d\n%s", n.name, want, r)
	}
	if strings.Count(strings.TrimSpace(r.Err), "\n") != 0 {
		t.Fatalf("daemon start on %s: want one line on stderr\n%s", n.name, r)
	}
	for _, m := range msg {
		if !strings.Contains(r.Err, m) {
			t.Fatalf("daemon start on %s: stderr misses %q\n%s", n.name, m, r)
		}
	}
	if _, err := os.Stat(filepath.Join(n.root, "run", "daemon.sock")); err == nil {
		if n.run("nodemgr", "daemon", "status").Code == 0 {
			t.Fatalf("a daemon runs on %s after a refused start", n.name)
		}
	}
}

// A node that was a member of a cluster refuses to start without its
// cluster.toml, or with another cluster's name or secret, until the admin
// says --new-cluster.
func TestClusterIdentityRemembered(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	secret := testbed.NewSecret()
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{name: "prod", secret: secret})
	c["n1"].startDaemon()
	c["n2"].startDaemon()
	waitFor(t, 20*time.Second, "n1 sees n2 up", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })
	n2 := c["n2"]
	n2.must("nodemgr", "daemon", "stop")

	conf := filepath.Join(n2.root, "etc", "cluster.toml")
	state := filepath.Join(n2.root, "var", "state.json")
	if s := readFile(t, state); !strings.Contains(s, `"prod"`) || strings.Contains(s, secret) {
		t.Fatalf("state.json must hold the cluster name and not the secret:\n%s", s)
	}
	good := readFile(t, conf)
	if err := os.Rename(conf, conf+".away"); err != nil {
		t.Fatal(err)
	}
	refused(t, n2, 2, conf+": missing, but this node was a member of cluster \"prod\" (recorded in "+state+
		"): restore it, or start with --new-cluster to leave that cluster")

	// another secret
	other := testbed.NewSecret()
	writeClusterToml(t, n2, strings.Replace(good, secret, other, 1))
	refused(t, n2, 2, conf+":3: cluster.secret: differs from the secret of cluster \"prod\"", "--new-cluster")
	// another name
	writeClusterToml(t, n2, strings.Replace(good, `name = "prod"`, `name = "test"`, 1))
	refused(t, n2, 2, conf+":2: cluster.name: \"test\", but this node was a member of cluster \"prod\"", "--new-cluster")
	// alone
	writeClusterToml(t, n2, "[cluster]\nname = \"prod\"\n")
	refused(t, n2, 2, "but this node was a member of cluster \"prod\"", "--new-cluster")

	// the admin moves n2 to cluster "test" with another secret
	writeClusterToml(t, n2, strings.Replace(strings.Replace(good, secret, other, 1), `name = "prod"`, `name = "test"`, 1))
	n2.must("nodemgr", "daemon", "start", "--new-cluster")
	if log := nodeLog(t, n2); !strings.Contains(log, "cluster identity changed by --new-cluster") || !strings.Contains(log, "WARN") {
		t.Fatalf("the change of cluster is not logged at WARN:\n%s", log)
	}
	if log := nodeLog(t, n2); strings.Contains(log, secret) || strings.Contains(log, other) {
		t.Fatal("node.log holds a cluster secret")
	}
	// the new identity is the one remembered: a plain restart works
	n2.must("nodemgr", "daemon", "stop")
	n2.startDaemon()
	if s := readFile(t, state); !strings.Contains(s, `"test"`) || strings.Contains(s, other) {
		t.Fatalf("state.json after --new-cluster:\n%s", s)
	}
}

// A single node that never had a cluster.toml starts as in the README tour,
// and keeps doing so.
func TestSingleNodeWithoutClusterToml(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "solo", "")
	n.startDaemon()
	n.must("nodemgr", "daemon", "stop")
	n.startDaemon()
	if s, err := os.ReadFile(filepath.Join(n.root, "var", "state.json")); err == nil && strings.Contains(string(s), `"cluster"`) {
		t.Fatalf("a single node recorded a cluster identity:\n%s", s)
	}
}

// A node configured with another member's name never joins: on the same
// host its heartbeat port is taken, elsewhere the member's address is not
// its own; and [hb] must agree with its [nodes] entry.
func TestNodeNamedAsAnotherRefused(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{})
	c["n2"].startDaemon()
	cluster := readFile(t, filepath.Join(c["n2"].root, "etc", "cluster.toml"))
	nodeToml := readFile(t, filepath.Join(c["n2"].root, "etc", "node.toml"))

	// n3 says name = "n2", on n2's host: n2's heartbeat port is in use
	n3 := newNode(t, "n3", nodeToml)
	writeClusterToml(t, n3, cluster)
	refused(t, n3, 1, "another daemon may already run as this node (n2)")
	if log := nodeLog(t, c["n2"]); strings.Contains(log, "Refuting") {
		t.Fatalf("n2 had to refute an impostor:\n%s", log)
	}

	// n3 says name = "n2" with another port: refused at load
	_, n2port, _ := net.SplitHostPort(memberAddr(t, cluster, "n2"))
	writeFile(t, filepath.Join(n3.root, "etc", "node.toml"), strings.Replace(nodeToml, "port = "+n2port, "port = 1", 1))
	refused(t, n3, 2, filepath.Join(n3.root, "etc", "node.toml")+":10: hb.port: 1 differs from the port of this node's entry in "+
		filepath.Join(n3.root, "etc", "cluster.toml")+":7 (nodes.n2 = ")

	// n3 says name = "n2" on another host: n2's address is not one of its own
	writeFile(t, filepath.Join(n3.root, "etc", "node.toml"), strings.Replace(nodeToml, `addr = "127.0.0.1"`, `addr = "0.0.0.0"`, 1))
	writeClusterToml(t, n3, strings.Replace(cluster, memberAddr(t, cluster, "n2"), "192.0.2.222:"+n2port, 1))
	refused(t, n3, 2, filepath.Join(n3.root, "etc", "cluster.toml")+":7: nodes.n2: 192.0.2.222 is not an address of this host: is this node really n2?")

	// n3 is not a member
	writeFile(t, filepath.Join(n3.root, "etc", "node.toml"), "[node]\nname = \"n3\"\n")
	writeClusterToml(t, n3, cluster)
	refused(t, n3, 2, filepath.Join(n3.root, "etc", "node.toml")+`:2: node.name: "n3" is not a member of [nodes]`)
}

// memberAddr returns the [nodes] address of name in a cluster.toml text.
func memberAddr(t *testing.T, cluster, name string) string {
	t.Helper()
	for _, l := range strings.Split(cluster, "\n") {
		if k, v, ok := strings.Cut(l, " = "); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	t.Fatalf("no member %s in\n%s", name, cluster)
	return ""
}

// A cluster of several members does not start without a secret, unless
// the insecure keyword says so (with a WARN); a secret other users may
// read is refused.
func TestNoOpenCluster(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{})
	n1 := c["n1"]
	conf := filepath.Join(n1.root, "etc", "cluster.toml")
	good := readFile(t, conf)
	if err := os.Chmod(conf, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, n1, 2, conf+": mode 0644 lets other users read the cluster secret: chmod 600 it")
	if err := os.Chmod(conf, 0o600); err != nil {
		t.Fatal(err)
	}

	var open []string
	for _, l := range strings.Split(good, "\n") {
		if !strings.HasPrefix(l, "secret = ") {
			open = append(open, l)
		}
	}
	writeClusterToml(t, n1, strings.Join(open, "\n"))
	refused(t, n1, 2, conf+":1: cluster.secret: a cluster of 2 members needs a secret")

	writeClusterToml(t, n1, strings.Replace(strings.Join(open, "\n"), "[cluster]\n", "[cluster]\ninsecure_no_secret = true\n", 1))
	n1.startDaemon()
	if log := nodeLog(t, n1); !strings.Contains(log, "INSECURE: cluster.insecure_no_secret is set") {
		t.Fatalf("no WARN about the insecure cluster:\n%s", log)
	}
}
