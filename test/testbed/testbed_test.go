package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/config/tomlfile"
)

func TestFreePortBelowTheEphemeralRange(t *testing.T) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		lo, _ = strconv.Atoi(strings.Fields(string(b))[0])
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo || p < 1024 || seen[p] {
			t.Fatalf("FreePort() = %d: want a port in 1024..%d never handed out before", p, lo-1)
		}
		seen[p] = true
	}
}

// The files the harness writes are what the daemon accepts.
func TestRootsParse(t *testing.T) {
	root := t.TempDir()
	nt := NodeToml{Name: "n1", Keys: []string{`ready_period = "2s"`, "", "rejoin_grace_period = \"5s\"\n"},
		HBAddr: "127.0.0.1", HBPort: 10001, HBTimeout: "3s", HBInterval: "1s"}
	if err := WriteNodeToml(root, nt.String()); err != nil {
		t.Fatal(err)
	}
	secret := NewSecret()
	cl := ClusterToml("t", secret, []Member{{Name: "n1", Addr: "127.0.0.1:10001"}, {Name: "n2", Addr: "127.0.0.1:10002"}})
	if err := WriteClusterToml(root, cl); err != nil {
		t.Fatal(err)
	}
	n, err := tomlfile.LoadNode(filepath.Join(root, "etc", "node.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "n1" || n.ReadyPeriod != 2*time.Second || n.RejoinGracePeriod != 5*time.Second ||
		n.HB.Port != 10001 || n.HB.Timeout != 3*time.Second || n.HB.Interval != time.Second {
		t.Errorf("node.toml %q read as %+v", nt.String(), n)
	}
	c, err := tomlfile.LoadCluster(filepath.Join(root, "etc", "cluster.toml"), "n1")
	if err != nil {
		t.Fatal(err) // also when the file is not 0600
	}
	if c.Name != "t" || c.Secret != secret || len(c.Nodes) != 2 || !c.ListsMembers() {
		t.Errorf("cluster.toml read as name %q, %d members, lists members %v (secret equal: %v)", c.Name, len(c.Nodes), c.ListsMembers(), c.Secret == secret)
	}
	if _, err := tomlfile.ParseService("web.toml", "web", []byte(HAService(NodeList([]string{"n1", "n2"}), "priority = 5"))); err != nil {
		t.Errorf("HAService: %v", err)
	}
}

// KillUnder kills the process a service's pid file names, but not one that
// took that number after the file was written (a stale pid file of a
// killed service): a process of another test run on the same host.
func TestKillUnderSparesAReusedPid(t *testing.T) {
	dir := t.TempDir()
	stranger := exec.Command("sleep", "60") // its cwd and arguments are not under dir
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { stranger.Wait(); close(exited) }()
	t.Cleanup(func() { stranger.Process.Kill(); <-exited })
	pidFile := filepath.Join(dir, "var", "services", "web", "main.pid")
	if err := WriteFile(pidFile, strconv.Itoa(stranger.Process.Pid)+"\n", 0o644); err != nil {
		t.Fatal(err)
	}
	// the file was written an hour before the process started: stale
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(pidFile, old, old); err != nil {
		t.Fatal(err)
	}
	KillUnder(dir)
	select {
	case <-exited:
		t.Fatal("KillUnder killed a process started after its pid file was written")
	case <-time.After(200 * time.Millisecond):
	}
	// written after the start: the process it names
	now := time.Now()
	if err := os.Chtimes(pidFile, now, now); err != nil {
		t.Fatal(err)
	}
	KillUnder(dir)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("KillUnder did not kill the process its pid file names")
	}
}
