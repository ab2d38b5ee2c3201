package e2e

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// One daemon: create, start, status JSON, freeze persisted across a daemon
// restart, stop, and a bad create refused.
func TestSingleDaemonServiceLifecycle(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	n := newNode(t, "n1", "")
	n.startDaemon()

	cfg := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, cfg, testbed.PidService)
	n.must("svcmgr", "-s", "web", "create", "--config", cfg)
	if _, err := os.Stat(filepath.Join(n.root, "etc", "services", "web.toml")); err != nil {
		t.Fatalf("config not installed: %v", err)
	}
	waitFor(t, 5*time.Second, "web checked down", func() bool { return n.instance("web").Avail == dataset.StatusDown })

	n.must("svcmgr", "-s", "web", "start", "--local")
	inst := n.instance("web")
	if inst.Avail != dataset.StatusUp {
		t.Fatalf("after start --local: avail %q, want up", inst.Avail)
	}
	if inst.Monitor.LocalExpect != "started" || inst.Monitor.State != dataset.Idle {
		t.Fatalf("after start --local: monitor %+v, want idle/started", inst.Monitor)
	}
	if r := inst.Resources["app#main"]; r.Status != dataset.StatusUp || !r.Monitor {
		t.Fatalf("app#main = %+v, want up and monitored", r)
	}

	// the JSON of print status is services.web of the status object
	var ss dataset.ServiceStatus
	if err := json.Unmarshal([]byte(n.must("svcmgr", "-s", "web", "print", "status", "--format", "json")), &ss); err != nil {
		t.Fatal(err)
	}
	if ss.Avail != dataset.StatusUp || ss.Instances["n1"].Avail != dataset.StatusUp {
		t.Fatalf("print status json: avail %q, instance %q; want up, up", ss.Avail, ss.Instances["n1"].Avail)
	}
	tree := n.must("svcmgr", "-s", "web", "print", "status")
	if !strings.Contains(tree, "app#main") || !strings.Contains(tree, "n1") {
		t.Fatalf("status tree lacks the resource or node:\n%s", tree)
	}

	// a freeze survives a daemon restart, and the restart leaves the service running
	n.must("svcmgr", "-s", "web", "freeze")
	n.must("nodemgr", "daemon", "stop")
	n.startDaemon()
	waitFor(t, 5*time.Second, "web checked after restart", func() bool { return n.instance("web").Avail != dataset.StatusUnknown })
	inst = n.instance("web")
	if !inst.Frozen {
		t.Fatal("the freeze was lost across the daemon restart")
	}
	if inst.Avail != dataset.StatusUp {
		t.Fatalf("after a daemon restart the service is %q, want still up", inst.Avail)
	}
	if n.status().Services["web"].Frozen != "frozen" {
		t.Fatalf("service frozen = %q, want frozen", n.status().Services["web"].Frozen)
	}
	// the thaw is a target: stop --local is refused until it is reached
	// (it would thaw the instance again after the stop), so wait for it
	n.must("svcmgr", "-s", "web", "thaw", "--wait")

	// stop --local stops and freezes
	n.must("svcmgr", "-s", "web", "stop", "--local")
	inst = n.instance("web")
	if inst.Avail != dataset.StatusDown || !inst.Frozen {
		t.Fatalf("after stop --local: avail %q frozen %v; want down, frozen", inst.Avail, inst.Frozen)
	}

	// a bad create is refused with exit 2, naming file and key; nothing installed
	bad := filepath.Join(t.TempDir(), "bad.toml")
	writeFile(t, bad, "[DEFAULT]\norchestrate = \"sometimes\"\n")
	r := n.run("svcmgr", "-s", "bad", "create", "--config", bad)
	if r.Code != 2 || !strings.Contains(r.Err, bad) || !strings.Contains(r.Err, "orchestrate") {
		t.Fatalf("bad create: want exit 2 naming %s and orchestrate, got %s", bad, r)
	}
	if _, err := os.Stat(filepath.Join(n.root, "etc", "services", "bad.toml")); !os.IsNotExist(err) {
		t.Fatalf("a refused config was installed (stat err %v)", err)
	}
	// a bad set changes nothing
	before := n.must("svcmgr", "-s", "web", "print", "config")
	r = n.run("svcmgr", "-s", "web", "set", "--kw", "DEFAULT.placement=random")
	if r.Code != 2 {
		t.Fatalf("bad set: want exit 2, got %s", r)
	}
	if after := n.must("svcmgr", "-s", "web", "print", "config"); after != before {
		t.Fatalf("a refused set changed the config:\n%s\nwas\n%s", after, before)
	}
	// a good set is applied and readable with get
	n.must("svcmgr", "-s", "web", "set", "--kw", "DEFAULT.priority=7")
	if got := strings.TrimSpace(n.must("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.priority")); got != "7" {
		t.Fatalf("get DEFAULT.priority = %q, want 7", got)
	}
	// a resource name that is not in the config is a typo unless --add;
	// unset of TYPE#NAME removes a whole resource
	if r := n.run("svcmgr", "-s", "web", "set", "--kw", "app#wbe.start=true"); r.Code != 2 || !strings.Contains(r.Err, "no resource app#wbe") {
		t.Fatalf("set of a resource not in the config: want exit 2 naming it, got %s", r)
	}
	n.must("svcmgr", "-s", "web", "set", "--add", "--kw", "app#extra.check=true")
	if !strings.Contains(n.must("svcmgr", "-s", "web", "print", "config"), "[app.extra]") {
		t.Fatal("set --add added no resource")
	}
	n.must("svcmgr", "-s", "web", "unset", "--kw", "app#extra")
	if strings.Contains(n.must("svcmgr", "-s", "web", "print", "config"), "[app.extra]") {
		t.Fatal("unset --kw app#extra left the resource")
	}

	n.must("svcmgr", "-s", "web", "delete")
	if out := n.must("svcmgr", "ls"); strings.Contains(out, "web") {
		t.Fatalf("web still listed after delete:\n%s", out)
	}
}

// The daemon owns its root: a second daemon is refused, the socket is
// private, garbage on the socket does not kill it, and stop works.
func TestDaemonOwnsRootAndSurvivesGarbage(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()

	r := n.run("nodemgr", "daemon", "run")
	if r.Code == 0 || !strings.Contains(r.Err, "another daemon") {
		t.Fatalf("second daemon on the same root: want refusal, got %s", r)
	}
	sock := filepath.Join(n.root, "run", "daemon.sock")
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", st.Mode().Perm())
	}
	for _, junk := range []string{"\x00\xff\xfe garbage\r\n\r\n", "GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", "POST /services/create HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{{{{{"} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(junk))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 512)
		c.Read(buf)
		c.Close()
	}
	n.must("nodemgr", "daemon", "status")

	r = n.run("svcmgr", "-s", "nosuch", "start", "--local")
	if r.Code != 1 {
		t.Fatalf("action on a missing service: want exit 1, got %s", r)
	}
	n.must("nodemgr", "daemon", "stop")
	r = n.run("nodemgr", "daemon", "status")
	if r.Code != 1 || !strings.Contains(r.Err, "not running") {
		t.Fatalf("status of a stopped daemon: want exit 1 saying not running, got %s", r)
	}
}

// Bad node config: the daemon refuses to start with exit 2, naming file and key.
func TestDaemonRefusesBadNodeConfig(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "[node]\nname = \"n1\"\nready_period = \"soon\"\n")
	r := n.run("nodemgr", "daemon", "start")
	if r.Code != 2 || !strings.Contains(r.Err, "node.toml") || !strings.Contains(r.Err, "ready_period") {
		t.Fatalf("want exit 2 naming node.toml and ready_period, got %s", r)
	}
}

// validate --config needs no daemon.
func TestValidateWithoutDaemon(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	good := filepath.Join(t.TempDir(), "good.toml")
	writeFile(t, good, testbed.PidService)
	n.must("svcmgr", "validate", "--config", good)
	bad := filepath.Join(t.TempDir(), "bad.toml")
	writeFile(t, bad, "[DEFAULT]\nnodes = [\"n1\"]\n\n[app.web]\nstart = \"true\"\nfrobnicate = 1\n")
	r := n.run("svcmgr", "validate", "--config", bad)
	if r.Code != 2 || !strings.Contains(r.Err, "bad.toml:6") || !strings.Contains(r.Err, "frobnicate") {
		t.Fatalf("want exit 2 naming bad.toml:6 and frobnicate, got %s", r)
	}
	r = n.run("svcmgr", "-s", "x", "ls")
	if r.Code != 1 || !strings.Contains(r.Err, "not running") {
		t.Fatalf("ls without a daemon: want exit 1 saying not running, got %s", r)
	}
}
