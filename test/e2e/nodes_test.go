package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

func nodeLog(t *testing.T, n *node) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(n.root, "log", "node.log"))
	return string(b)
}

// A node with the wrong secret never joins, and the secret is never logged.
func TestWrongSecretStaysOut(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	secret := testbed.NewSecret()
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{secret: secret})
	// n2 gets another secret
	b, _ := os.ReadFile(filepath.Join(c["n2"].root, "etc", "cluster.toml"))
	other := testbed.NewSecret()
	writeClusterToml(t, c["n2"], strings.Replace(string(b), secret, other, 1))
	c["n1"].startDaemon()
	c["n2"].startDaemon()
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if s := peerStatus(c["n1"], "n2"); s == dataset.NodeUp {
			t.Fatalf("n1 sees n2 %s although n2 has another secret", s)
		}
		if s := peerStatus(c["n2"], "n1"); s == dataset.NodeUp {
			t.Fatalf("n2 sees n1 %s although n2 has another secret", s)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, n := range []string{"n1", "n2"} {
		log := nodeLog(t, c[n])
		if strings.Contains(log, secret) || strings.Contains(log, other) {
			t.Fatalf("%s logged a cluster secret", n)
		}
		st := c[n].must("svcmon", "--format", "json")
		if strings.Contains(st, secret) || strings.Contains(st, other) {
			t.Fatalf("%s shows a cluster secret in its status", n)
		}
	}
	if !strings.Contains(nodeLog(t, c["n1"]), "rejected") {
		t.Fatalf("n1 did not log the rejected traffic:\n%s", nodeLog(t, c["n1"]))
	}
}

// Compat mismatch disables ha orchestration with the messages of docs/contract.md section 8, and
// the agreement enables it again.
func TestCompatMismatchAndRecoveryLogged(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{})
	c["n1"].startDaemon()
	// the daemon started by this start inherits its environment
	if r := c["n2"].runEnv([]string{"HAVEN_COMPAT=2"}, "nodemgr", "daemon", "start"); r.Code != 0 {
		t.Fatalf("daemon start with HAVEN_COMPAT=2: %s", r)
	}
	const off = "cluster members run incompatible versions. disable ha orchestration"
	const on = "cluster members run compatible versions. enable ha orchestration"
	waitFor(t, 10*time.Second, "n1 logs the incompatibility", func() bool { return strings.Contains(nodeLog(t, c["n1"]), off) })
	if c["n1"].status().Cluster.Compat {
		t.Fatal("cluster.compat is true while n2 runs compat 2")
	}
	if out := c["n1"].must("svcmon"); !strings.Contains(out, "compat") || !strings.Contains(out, "warn") {
		t.Fatalf("svcmon does not show the compat warning:\n%s", out)
	}
	// n2 upgraded back to the same compat as n1
	c["n2"].must("nodemgr", "daemon", "stop")
	c["n2"].startDaemon()
	waitFor(t, 10*time.Second, "n1 logs the recovery", func() bool { return strings.Contains(nodeLog(t, c["n1"]), on) })
	waitFor(t, 5*time.Second, "cluster.compat true again", func() bool { return c["n1"].status().Cluster.Compat })
}

// daemon stop: the node announces maintenance, peers keep its data for the
// grace period, then treat it as down. shutdown: the node stops its
// instances and announces shutting.
func TestMaintenanceGraceAndShutdown(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{})
	c["n1"].startDaemon()
	c["n2"].startDaemon()
	waitFor(t, 10*time.Second, "n1 sees n2 up", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })

	cfg := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, cfg, strings.Replace(testbed.PidService, "[DEFAULT]", "[DEFAULT]\nnodes = [\"n2\", \"n1\"]", 1))
	c["n2"].must("svcmgr", "-s", "web", "create", "--config", cfg)
	c["n2"].must("svcmgr", "-s", "web", "start", "--local")
	waitFor(t, 5*time.Second, "n1 sees web up on n2", func() bool {
		return c["n1"].status().Services["web"].Instances["n2"].Avail == dataset.StatusUp
	})

	stopped := time.Now()
	c["n2"].must("nodemgr", "daemon", "stop")
	waitFor(t, 3*time.Second, "n1 sees n2 in maintenance", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeStMaint })
	// past hb.timeout (3s) but within the grace (6s): still maintenance, data kept
	for time.Since(stopped) < 4500*time.Millisecond {
		time.Sleep(100 * time.Millisecond)
	}
	st := c["n1"].status()
	if st.Nodes["n2"].Status != dataset.NodeStMaint {
		t.Fatalf("n2 is %s 4.5s after its daemon stop, want maintenance until the 6s grace ends", st.Nodes["n2"].Status)
	}
	if st.Services["web"].Instances["n2"].Avail != dataset.StatusUp {
		t.Fatalf("n1 dropped n2's data during the grace: web on n2 is %s", st.Services["web"].Instances["n2"].Avail)
	}
	waitFor(t, 5*time.Second, "n1 treats n2 as down after the grace", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeDown })

	// back within no time: up again, the service never stopped
	c["n2"].startDaemon()
	waitFor(t, 10*time.Second, "n1 sees n2 up again", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })
	// the restarted daemon knows its instance once its first check ran
	waitFor(t, 10*time.Second, "n2 checked web", func() bool { return c["n2"].instance("web").Avail != dataset.StatusUnknown })
	if a := c["n2"].instance("web").Avail; a != dataset.StatusUp {
		t.Fatalf("web on n2 is %s after a daemon restart, want up (a daemon stop leaves services running)", a)
	}

	// shutdown stops the local instances and announces shutting: in a
	// delta of the data n1 holds, so n1 holds n2's data as it is first (a
	// shutdown 150 ms after the restart, on a loaded host, announced it in
	// a delta of a generation n1 had not received yet: n1 saw n2 up, then
	// down after hb.timeout)
	settled(t, 10*time.Second, c["n1"], c["n2"])
	r := c["n2"].run("nodemgr", "daemon", "shutdown")
	if r.Code != 0 {
		t.Fatalf("shutdown: %s", r)
	}
	if _, err := os.Stat(filepath.Join(c["n2"].root, "var", "services", "web", "main.pid")); !os.IsNotExist(err) {
		t.Fatal("web still running on n2 after a daemon shutdown")
	}
	// the last data n2 sent says shutting; n1 shows it until n2 goes silent
	waitFor(t, 2*time.Second, "n1 sees n2 shutting", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeStShutting })
	waitFor(t, 5*time.Second, "n1 sees n2 down after hb.timeout", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeDown })
}

// Hostile bytes on the heartbeat port (TCP and UDP) never crash a daemon
// nor break the cluster.
func TestGarbageOnHeartbeatPort(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{})
	c["n1"].startDaemon()
	c["n2"].startDaemon()
	waitFor(t, 10*time.Second, "n1 sees n2 up", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })
	addr := hbAddr(t, c["n1"])
	junk := [][]byte{
		{0}, {0xff, 0xff, 0xff, 0xff}, []byte("GET / HTTP/1.0\r\n\r\n"),
		append([]byte{1, 2, 3}, make([]byte, 4000)...),
	}
	for i := 0; i < 200; i++ {
		b := make([]byte, 1+i*7%1400)
		for j := range b {
			b[j] = byte(i*31 + j*17)
		}
		junk = append(junk, b)
	}
	for _, b := range junk {
		if u, err := net.Dial("udp", addr); err == nil {
			u.Write(b)
			u.Close()
		}
		if tc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			tc.SetDeadline(time.Now().Add(time.Second))
			tc.Write(b)
			tc.Close()
		}
	}
	c["n1"].must("nodemgr", "daemon", "status")
	// still a cluster: a change on n2 reaches n1
	createService(t, c["n2"], "web", strings.Replace(testbed.PidService, "[DEFAULT]", "[DEFAULT]\nnodes = [\"n1\", \"n2\"]", 1))
	waitFor(t, 5*time.Second, "n1 hears of web created on n2", func() bool {
		_, ok := c["n1"].status().Services["web"]
		return ok
	})
	if s := peerStatus(c["n1"], "n2"); s != dataset.NodeUp {
		t.Fatalf("n1 sees n2 %s after the garbage, want up", s)
	}
}

// hbAddr is the host:port of n's heartbeat, from its node.toml.
func hbAddr(t *testing.T, n *node) string {
	t.Helper()
	var port int
	for _, line := range strings.Split(readFile(t, filepath.Join(n.root, "etc", "node.toml")), "\n") {
		if strings.HasPrefix(line, "port = ") {
			fmt.Sscan(strings.TrimPrefix(line, "port = "), &port)
		}
	}
	if port == 0 {
		t.Fatal("no hb port in node.toml")
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// A node shut down cleanly (nodemgr daemon shutdown: its instances stopped
// before it left) runs nothing: stop --wait and freeze --wait succeed
// without it; the stop stays in place for it and is applied when it comes
// back (it freezes, and web does not start there). A crashed node still
// holds the wait back: it may run the service.
func TestWaitWithNodeShutDown(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own; mostly waits
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2", "n3"]`, ""))
	waitFor(t, 15*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))

	c["n3"].must("nodemgr", "daemon", "shutdown")
	waitFor(t, 10*time.Second, "n1 sees n3 down", func() bool { return peerStatus(c["n1"], "n3") == dataset.NodeDown })
	out := c["n1"].must("svcmgr", "-s", "web", "stop", "--wait", "--time", "20s")
	if !strings.Contains(out, "n3 shut down") {
		t.Fatalf("stop --wait with n3 shut down: %q, want it to say n3 applies it when back", out)
	}
	if w := where(c["n1"], "web"); len(w) != 0 {
		t.Fatalf("web up on %v after stop --wait", w)
	}
	c["n1"].must("svcmgr", "-s", "web", "freeze", "--wait", "--time", "10s")

	// n3 comes back: it takes the stop, and web stays down
	c["n3"].startDaemon()
	waitFor(t, 15*time.Second, "n3 freezes web once back", func() bool { return c["n3"].instance("web").Frozen })
	waitFor(t, 10*time.Second, "the stop target cleared once n3 took it", func() bool {
		return c["n1"].status().Services["web"].Instances["n1"].Monitor.GlobalExpect == dataset.ExpectNone
	})
	if w := where(c["n1"], "web"); len(w) != 0 {
		t.Fatalf("web up on %v after n3 came back, want down (stopped)", w)
	}

	// a crash: n3 may still run it, the wait says so
	c["n1"].must("svcmgr", "-s", "web", "start", "--wait", "--time", "20s")
	if _, err := testbed.Crash(c["n3"].root); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "n1 sees n3 down", func() bool { return peerStatus(c["n1"], "n3") == dataset.NodeDown })
	r := c["n1"].run("svcmgr", "-s", "web", "stop", "--wait", "--time", "5s")
	if r.Code != 1 || !strings.Contains(r.Err, "n3 unknown (node down)") {
		t.Fatalf("stop --wait with n3 crashed: %s, want exit 1 naming n3 unknown", r)
	}
}
