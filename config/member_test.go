package config

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var testSecret = strings.Repeat("0123456789abcdef", 4)

// Refusals of cluster.toml alone: names that differ only in case, two
// members at one address, a cluster without a secret.
func TestClusterMemberErrors(t *testing.T) {
	sec := "[cluster]\nsecret = \"" + testSecret + "\"\n"
	tests := []struct{ data, want string }{
		{sec + "[nodes]\nn1 = \"127.0.0.1:10001\"\nN1 = \"127.0.0.1:10002\"\n",
			`cluster.toml:5: nodes.N1: member "N1" differs from "n1" only in case`},
		{sec + "[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10001\"\n",
			`cluster.toml:5: nodes.n2: address "127.0.0.1:10001" is also the address of n1`},
		{sec + "[nodes]\nn1 = \"[::1]:10001\"\nn2 = \"[0:0::1]:10001\"\n",
			`cluster.toml:5: nodes.n2: address "[0:0::1]:10001" is also the address of n1`},
		{sec + "[nodes]\nn1 = \"Host-A:10001\"\nn2 = \"host-a:10001\"\n",
			`cluster.toml:5: nodes.n2: address "host-a:10001" is also the address of n1`},
		{"[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\n",
			"cluster.toml: cluster.secret: a cluster of 2 members needs a secret"},
		{"[cluster]\nname = \"x\"\n[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\n",
			"cluster.toml:1: cluster.secret: a cluster of 2 members needs a secret"},
		{sec + "insecure_no_secret = true\n[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\n",
			"cluster.toml:3: cluster.insecure_no_secret: set while cluster.secret is set: remove one"},
	}
	for _, tt := range tests {
		_, err := ParseCluster("cluster.toml", []byte(tt.data), "n1")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCluster(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
	// the insecure keyword lets a test cluster run without a secret
	c, err := ParseCluster("cluster.toml", []byte("[cluster]\ninsecure_no_secret = true\n[nodes]\nn1 = \"127.0.0.1:1\"\nn2 = \"127.0.0.1:2\"\n"), "n1")
	if err != nil || !c.InsecureNoSecret {
		t.Errorf("insecure_no_secret: %+v, %v", c, err)
	}
	// a one-node cluster needs no secret
	if _, err := ParseCluster("cluster.toml", []byte("[nodes]\nn1 = \"127.0.0.1:1\"\n"), "n1"); err != nil {
		t.Errorf("one member without a secret: %v", err)
	}
}

// Refusals of node.toml against cluster.toml: each names the node.toml
// line and key, and the cluster.toml entry it disagrees with.
func TestCheckMember(t *testing.T) {
	cluster := "[cluster]\nsecret = \"" + testSecret + "\"\n\n[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\nn3 = \"db3.example:10003\"\n"
	tests := []struct{ node, want string }{
		{"[node]\nname = \"n4\"\n",
			`node.toml:2: node.name: "n4" is not a member of [nodes] in cluster.toml:4 (members: n1, n2, n3)`},
		{"[node]\nname = \"N1\"\n",
			`node.toml:2: node.name: "N1" is not a member of [nodes]`},
		{"[node]\nname = \"n1\"\n[hb]\naddr = \"127.0.0.1\"\nport = 10005\n",
			`node.toml:5: hb.port: 10005 differs from the port of this node's entry in cluster.toml:5 (nodes.n1 = "127.0.0.1:10001")`},
		{"[node]\nname = \"n1\"\n",
			`node.toml: hb.port: 10000 (the default) differs from the port of this node's entry in cluster.toml:5 (nodes.n1 = "127.0.0.1:10001")`},
		{"[node]\nname = \"n2\"\n[hb]\nport = 10002\naddr = \"10.0.0.9\"\n",
			`node.toml:5: hb.addr: "10.0.0.9" is not the host of this node's entry in cluster.toml:6 (nodes.n2 = "127.0.0.1:10002"): want that address or a wildcard (0.0.0.0, ::)`},
		{"[node]\nname = \"n3\"\n[hb]\nport = 10003\naddr = \"10.0.0.3\"\n",
			`node.toml:5: hb.addr: "10.0.0.3" is not the host of this node's entry`},
	}
	cl, err := ParseCluster("cluster.toml", []byte(cluster), "n1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		n, err := ParseNode("node.toml", []byte(tt.node))
		if err != nil {
			t.Fatalf("ParseNode(%q): %v", tt.node, err)
		}
		err = CheckMember(n, cl)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckMember(%q) = %v, want %q", tt.node, err, tt.want)
		}
	}
	for _, ok := range []string{
		"[node]\nname = \"n1\"\n[hb]\nport = 10001\n",
		"[node]\nname = \"n1\"\n[hb]\nport = 10001\naddr = \"127.0.0.1\"\n",
		"[node]\nname = \"n2\"\n[hb]\nport = 10002\naddr = \"::\"\n",
		"[node]\nname = \"n3\"\n[hb]\nport = 10003\n",
	} {
		n, err := ParseNode("node.toml", []byte(ok))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckMember(n, cl); err != nil {
			t.Errorf("CheckMember(%q) = %v, want nil", ok, err)
		}
	}
	// without [nodes], the node is alone: its [hb] is not checked
	alone, err := ParseCluster("cluster.toml", nil, "n1")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := ParseNode("node.toml", []byte("[node]\nname = \"n1\"\n[hb]\nport = 10005\naddr = \"10.0.0.9\"\n"))
	if err := CheckMember(n, alone); err != nil {
		t.Errorf("CheckMember(alone) = %v, want nil", err)
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
	node := func(name string) *NodeConfig {
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
