package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/test/testbed"
)

// freePort returns a port free for both TCP and UDP on 127.0.0.1
// (testbed.FreePort).
func freePort(t *testing.T) int {
	t.Helper()
	port, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

type clusterOpts struct {
	name     string
	secret   string
	timeout  string // hb.timeout
	interval string
	extra    string // more [node] keys
}

// newCluster makes the roots of nodes sharing one cluster.toml, on loopback.
func newCluster(t *testing.T, names []string, o clusterOpts) map[string]*node {
	t.Helper()
	if o.name == "" {
		o.name = "test"
	}
	if o.secret == "" {
		o.secret = testbed.NewSecret()
	}
	if o.timeout == "" {
		o.timeout = "3s"
	}
	if o.interval == "" {
		o.interval = "1s"
	}
	ports := map[string]int{}
	var members []testbed.Member
	for _, n := range names {
		ports[n] = freePort(t)
		members = append(members, testbed.Member{Name: n, Addr: fmt.Sprintf("127.0.0.1:%d", ports[n])})
	}
	cluster := testbed.ClusterToml(o.name, o.secret, members)
	out := map[string]*node{}
	for _, n := range names {
		nodeToml := testbed.NodeToml{Name: n,
			Keys:   []string{`monitor_interval = "300ms"`, `rejoin_grace_period = "5s"`, `maintenance_grace_period = "6s"`, `ready_period = "2s"`, o.extra},
			HBAddr: "127.0.0.1", HBPort: ports[n], HBTimeout: o.timeout, HBInterval: o.interval}
		nd := newNode(t, n, nodeToml.String())
		writeClusterToml(t, nd, cluster)
		out[n] = nd
	}
	return out
}

// writeClusterToml writes the node's cluster.toml, 0600.
func writeClusterToml(t *testing.T, n *node, content string) {
	t.Helper()
	if err := testbed.WriteClusterToml(n.root, content); err != nil {
		t.Fatal(err)
	}
}

func peerStatus(n *node, peer string) dataset.NodeStatus {
	return n.status().Nodes[peer].Status
}

func TestClusterConvergesDistributesConfigsAndDetectsCrash(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c := newCluster(t, names, clusterOpts{})
	for _, n := range names {
		c[n].startDaemon()
	}
	for _, a := range names {
		for _, b := range names {
			if a == b {
				continue
			}
			waitFor(t, 10*time.Second, a+" sees "+b+" up", func() bool { return peerStatus(c[a], b) == dataset.NodeUp })
		}
	}
	// rejoin ends once every node was heard: no node froze itself
	for _, n := range names {
		if c[n].status().Nodes[n].Frozen {
			t.Fatalf("%s froze itself although every node was heard", n)
		}
	}
	// nodemgr print status: this node's view of its peers
	var ds api.DaemonStatus
	if err := json.Unmarshal([]byte(c["n1"].must("nodemgr", "print", "status", "--format", "json")), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds.Peers) != 2 || ds.Peers[0].Status != "up" || ds.Peers[1].Status != "up" || ds.HB.Received == 0 {
		t.Fatalf("nodemgr print status on n1: peers %+v, received %d; want n2 and n3 up and frames received", ds.Peers, ds.HB.Received)
	}
	if out := c["n1"].must("nodemgr", "print", "status"); !strings.Contains(out, "n2") || !strings.Contains(out, "n3") {
		t.Fatalf("nodemgr print status does not list the peers:\n%s", out)
	}

	// a config created on n1 reaches n3, installed there
	cfg := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, cfg, strings.Replace(testbed.PidService, "[DEFAULT]", "[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]", 1))
	c["n1"].must("svcmgr", "-s", "web", "create", "--config", cfg)
	waitFor(t, 5*time.Second, "web installed on n3", func() bool {
		_, err := os.Stat(filepath.Join(c["n3"].root, "etc", "services", "web.toml"))
		return err == nil
	})
	// an edit on n3 reaches n1
	c["n3"].must("svcmgr", "-s", "web", "set", "--kw", "DEFAULT.priority=5")
	waitFor(t, 5*time.Second, "the edit made on n3 seen on n1", func() bool {
		return strings.TrimSpace(c["n1"].run("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.priority").Out) == "5"
	})
	// a start on n2 is seen from n1
	c["n2"].must("svcmgr", "-s", "web", "start", "--local")
	waitFor(t, 5*time.Second, "n1 sees web up on n2", func() bool {
		return c["n1"].status().Services["web"].Instances["n2"].Avail == dataset.StatusUp
	})
	c["n2"].must("svcmgr", "-s", "web", "stop", "--local")

	// kill -9 of n3: the others declare it down after hb.timeout (3s), not long after
	pid := daemonPid(t, c["n3"])
	killed := time.Now()
	if err := syscallKill(pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 6*time.Second, "n1 sees n3 down", func() bool { return peerStatus(c["n1"], "n3") == dataset.NodeDown })
	took := time.Since(killed)
	if took < 2*time.Second {
		t.Fatalf("n3 declared down %s after the kill, before hb.timeout (3s) could elapse", took)
	}
	t.Logf("crash of n3 detected by n1 after %s (hb.timeout 3s)", took.Round(10*time.Millisecond))

	// n3 comes back and catches up with an edit it missed
	c["n1"].must("svcmgr", "-s", "web", "set", "--kw", "DEFAULT.priority=9")
	os.Remove(filepath.Join(c["n3"].root, "run", "daemon.sock"))
	c["n3"].startDaemon()
	waitFor(t, 10*time.Second, "n3 catches up with the edit made while it was down", func() bool {
		return strings.TrimSpace(c["n3"].run("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.priority").Out) == "9"
	})
	waitFor(t, 10*time.Second, "n1 sees n3 up again", func() bool { return peerStatus(c["n1"], "n3") == dataset.NodeUp })

	// a delete on n2 removes the config everywhere
	c["n2"].must("svcmgr", "-s", "web", "delete")
	for _, n := range names {
		waitFor(t, 5*time.Second, "web removed on "+n, func() bool {
			_, err := os.Stat(filepath.Join(c[n].root, "etc", "services", "web.toml"))
			return os.IsNotExist(err)
		})
	}
}

func daemonPid(t *testing.T, n *node) int {
	t.Helper()
	pid := testbed.DaemonPID(n.root)
	if pid == 0 {
		t.Fatalf("%s: no daemon pid", n.name)
	}
	return pid
}

// A node removed from a service's nodes stops its running instance (the
// service moved to n2, another member: a name that is no member is
// refused).
func TestNodeRemovedFromServiceStopsInstance(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	n := c["n1"]
	createService(t, n, "web", testbed.PidService)
	n.must("svcmgr", "-s", "web", "start", "--local")
	n.must("svcmgr", "-s", "web", "set", "--kw", "DEFAULT.nodes=n2")
	pid := filepath.Join(n.root, "var", "services", "web", "main.pid")
	waitFor(t, 5*time.Second, "web stopped on n1", func() bool {
		_, err := os.Stat(pid)
		return os.IsNotExist(err)
	})
	if _, ok := n.status().Services["web"].Instances["n1"]; ok {
		t.Fatal("n1 still shows an instance of web after its removal from the nodes")
	}
}
