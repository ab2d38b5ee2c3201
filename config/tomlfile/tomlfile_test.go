package tomlfile

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"haven/config"
)

var testSecret = "3159c6d29505f6186d904edf9d27ceebf038c15d0029ef8c56266481db282dac"

// exportedEqual compares the exported fields of two configs (the line
// index is config's own).
func exportedEqual(a, b any) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := 0; i < va.NumField(); i++ {
		if va.Type().Field(i).IsExported() && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return false
		}
	}
	return true
}

func TestLoadNodeDefaults(t *testing.T) {
	c, err := LoadNode(filepath.Join(t.TempDir(), "node.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &config.NodeConfig{
		File:                   c.File,
		Name:                   ShortHostname(),
		Labels:                 map[string]string{},
		ReadyPeriod:            16 * time.Second,
		MaintenanceGracePeriod: 60 * time.Second,
		RejoinGracePeriod:      90 * time.Second,
		SplitAction:            "crash",
		MonitorInterval:        5 * time.Second,
		CheckInterval:          60 * time.Second,
		OCFRoot:                "/usr/lib/ocf",
		ContainerEnv:           map[string]string{},
		CrashCommand:           "echo c > /proc/sysrq-trigger",
		RebootCommand:          "echo b > /proc/sysrq-trigger",
		HB: config.HBConfig{Addr: "0.0.0.0", Port: 10000, Timeout: 15 * time.Second, Interval: 5 * time.Second,
			Disk: config.HBDiskConfig{Timeout: 10 * time.Second}},
		MetricsAllow: []string{},
		Guard:        true,
		GuardLease:   12 * time.Second,
	}
	if !exportedEqual(c, want) {
		t.Errorf("LoadNode(missing) = %+v, want %+v", c, want)
	}
	if strings.Contains(c.Name, ".") || c.Name == "" {
		t.Errorf("name %q is not a short host name", c.Name)
	}
}

func TestLoadNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.toml")
	data := `[node]
name = "n1"
labels = { env = "PRD", az = "a" }
ready_period = 2
split_action = "crash"
monitor_interval = "500ms"

[hb]
addr = "127.0.0.1"
port = 10001
timeout = "6s"
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadNode(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "n1" || c.Labels["env"] != "PRD" || c.Labels["az"] != "a" || c.ReadyPeriod != 2*time.Second ||
		c.SplitAction != "crash" || c.MonitorInterval != 500*time.Millisecond || c.CheckInterval != time.Minute ||
		c.HB.Addr != "127.0.0.1" || c.HB.Port != 10001 || c.HB.Timeout != 6*time.Second || c.HB.Interval != 5*time.Second {
		t.Errorf("LoadNode = %+v", c)
	}
}

func TestLoadCluster(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadCluster(filepath.Join(dir, "cluster.toml"), "n9")
	if err != nil {
		t.Fatal(err)
	}
	want := &config.ClusterConfig{File: c.File, Name: "default", Nodes: []config.Member{{Name: "n9", Addr: "127.0.0.1:10000"}}, NodeKeysMode: "require"}
	if !exportedEqual(c, want) || c.ListsMembers() {
		t.Errorf("LoadCluster(missing) = %+v, want %+v (no [nodes])", c, want)
	}

	secret := "3159c6d29505f6186d904edf9d27ceebf038c15d0029ef8c56266481db282dac"
	path := filepath.Join(dir, "c.toml")
	data := `[cluster]
name = "prod"
secret = "` + secret + `"
quorum = false

[nodes]
n2 = "127.0.0.1:10002"
n1 = "127.0.0.1:10001"
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = LoadCluster(path, "n1")
	if err != nil {
		t.Fatal(err)
	}
	want = &config.ClusterConfig{
		File: path, Name: "prod", Secret: secret,
		Nodes:        []config.Member{{Name: "n1", Addr: "127.0.0.1:10001"}, {Name: "n2", Addr: "127.0.0.1:10002"}},
		NodeKeysMode: "require",
	}
	if !exportedEqual(c, want) || !c.ListsMembers() {
		t.Errorf("LoadCluster = %+v, want %+v ([nodes])", c, want)
	}
	if got := c.NodeNames(); !reflect.DeepEqual(got, []string{"n1", "n2"}) {
		t.Errorf("NodeNames = %v", got)
	}
}

// The node's own [nodes] address must be one of this host's when it is a
// literal IP: this is what stops a node configured with another's name.
func TestCheckLocalAddr(t *testing.T) {
	cl, err := ParseCluster("cluster.toml", []byte("[cluster]\nsecret = \""+testSecret+"\"\n[nodes]\nn1 = \"192.0.2.1:10000\"\nn2 = \"192.0.2.2:10000\"\nn3 = \"db3.example:10000\"\nn4 = \"127.0.0.4:10000\"\n"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	ipnet := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	local := []net.Addr{ipnet("127.0.0.1/8"), ipnet("192.0.2.1/24"), ipnet("::1/128")}
	node := func(name string) *config.NodeConfig {
		n, err := ParseNode("node.toml", []byte("[node]\nname = \""+name+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := CheckLocalAddr(node("n1"), cl, local); err != nil {
		t.Errorf("n1 at a local address: %v", err)
	}
	if err := CheckLocalAddr(node("n3"), cl, local); err != nil {
		t.Errorf("n3 at a host name (not checked): %v", err)
	}
	if err := CheckLocalAddr(node("n4"), cl, local); err != nil {
		t.Errorf("n4 at a loopback address: %v", err)
	}
	err = CheckLocalAddr(node("n2"), cl, local)
	want := `cluster.toml:5: nodes.n2: 192.0.2.2 is not an address of this host: is this node really n2? (node.name in node.toml)`
	if err == nil || err.Error() != want {
		t.Errorf("n2 at another host's address: %v, want %q", err, want)
	}
	// several links: each address must be local
	cl2, err := ParseCluster("cluster.toml", []byte("[cluster]\nsecret = \""+testSecret+"\"\n[nodes]\nn1 = [\"192.0.2.1:10000\", \"198.51.100.1:10000\"]\nn2 = [\"192.0.2.2:10000\", \"198.51.100.2:10000\"]\n"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckLocalAddr(node("n1"), cl2, local)
	want = `cluster.toml:4: nodes.n1: 198.51.100.1 is not an address of this host`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("n1's second link at another host's address: %v, want %q", err, want)
	}
	if err := CheckLocalAddr(node("n1"), cl2, append(local, ipnet("198.51.100.1/24"))); err != nil {
		t.Errorf("n1 with both links local: %v", err)
	}
}

// A cluster.toml holding the secret is refused when other users may read it.
func TestClusterSecretFileMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.toml")
	data := "[cluster]\nsecret = \"" + testSecret + "\"\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	_, err := LoadCluster(path, "n1")
	want := path + ": mode 0644 lets other users read the cluster secret: chmod 600 it"
	if err == nil || err.Error() != want {
		t.Errorf("LoadCluster(0644) = %v, want %q", err, want)
	}
	os.Chmod(path, 0o640)
	if _, err := LoadCluster(path, "n1"); err == nil || !strings.Contains(err.Error(), "mode 0640") {
		t.Errorf("LoadCluster(0640) = %v", err)
	}
	os.Chmod(path, 0o600)
	if _, err := LoadCluster(path, "n1"); err != nil {
		t.Errorf("LoadCluster(0600) = %v", err)
	}
	// without a secret, the mode does not matter
	if err := os.WriteFile(path, []byte("[cluster]\nname = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadCluster(path, "n1"); err != nil {
		t.Errorf("LoadCluster(no secret, 0644) = %v", err)
	}
}
