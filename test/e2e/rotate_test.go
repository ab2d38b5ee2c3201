package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// The secret rotation of docs/security.md works as
// written: freeze the services, stop every daemon, install the new secret
// everywhere, start every daemon with --new-cluster, thaw. The nodes hear
// each other again under the new secret, and the service ran throughout
// (same process).
func TestSecretRotationProcedure(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	old := testbed.NewSecret()
	names := []string{"n1", "n2"}
	c := startCluster(t, names, clusterOpts{secret: old})
	sameWeb := webOnN1(t, c, names)

	c["n1"].must("svcmgr", "-s", "web", "freeze")
	for _, n := range names {
		c[n].must("nodemgr", "daemon", "stop")
	}
	secret := testbed.NewSecret()
	for _, n := range names {
		conf := c[n].root + "/etc/cluster.toml"
		writeClusterToml(t, c[n], strings.Replace(readFile(t, conf), old, secret, 1))
	}
	for _, n := range names {
		c[n].must("nodemgr", "daemon", "start", "--new-cluster")
	}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				waitFor(t, 20*time.Second, a+" sees "+b+" up under the new secret", func() bool { return peerStatus(c[a], b) == dataset.NodeUp })
			}
		}
		waitFor(t, 20*time.Second, a+" out of rejoin", func() bool { return c[a].status().Nodes[a].Monitor == dataset.NodeIdle })
	}
	c["n1"].must("svcmgr", "-s", "web", "thaw")
	waitFor(t, 20*time.Second, "web up on n1 and thawed", func() bool {
		st := c["n2"].status().Services["web"]
		return upOnlyOn(c["n2"], "web", "n1")() && !st.Instances["n1"].Frozen && !st.Instances["n2"].Frozen
	})
	sameWeb("the rotation")
	// every node remembers the new secret: a plain restart works
	c["n2"].must("nodemgr", "daemon", "stop")
	c["n2"].startDaemon()
}

// webOnN1 creates the ha service web on names, waits until it runs on n1,
// and returns a check that its app is still that process, running.
func webOnN1(t *testing.T, c map[string]*node, names []string) func(during string) {
	t.Helper()
	createService(t, c["n1"], "web", testbed.HAService(`["`+strings.Join(names, `", "`)+`"]`, ""))
	waitFor(t, 20*time.Second, "web up on n1", upOnlyOn(c[names[1]], "web", "n1"))
	pidFile := c["n1"].root + "/var/services/web/main.pid"
	pid := strings.TrimSpace(readFile(t, pidFile))
	return func(during string) {
		t.Helper()
		if now := strings.TrimSpace(readFile(t, pidFile)); now != pid {
			t.Fatalf("web's app was restarted during %s: pid %s, then %s", during, pid, now)
		}
		if p, _ := strconv.Atoi(pid); !testbed.Alive(p) {
			t.Fatalf("web's app (pid %d) no longer runs", p)
		}
	}
}
