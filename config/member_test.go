package config_test

import (
	"strings"
	"testing"

	. "haven/config"
	"haven/config/tomlfile"
)

var testSecret = "3159c6d29505f6186d904edf9d27ceebf038c15d0029ef8c56266481db282dac"

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
		{sec + "[nodes]\nn1 = []\n", `cluster.toml:4: nodes.n1: no heartbeat address`},
		{sec + "[nodes]\nn1 = [\"10.0.0.1:1\", \"10.1.0.1\"]\n", `cluster.toml:4: nodes.n1: link 2: invalid address "10.1.0.1": want host:port`},
		{sec + "[nodes]\nn1 = [\"10.0.0.1:1\", \"host-b:1\"]\n", `cluster.toml:4: nodes.n1: link 2: "host-b:1": with several links each address must be an IP address`},
		{sec + "[nodes]\nn1 = [\"10.0.0.1:1\", \"10.0.0.1:1\"]\n", `cluster.toml:4: nodes.n1: link 2: address "10.0.0.1:1" listed twice`},
		{sec + "[nodes]\nn1 = [\"10.0.0.1:1\", 2]\n", `cluster.toml:4: nodes.n1: want a list of strings, got an element of type an integer`},
		{sec + "[nodes]\nn1 = [\"10.0.0.1:1\", \"10.1.0.1:1\"]\nn2 = \"10.0.0.2:1\"\n", `cluster.toml:5: nodes.n2: 1 heartbeat address(es), but n1 lists 2`},
		{sec + "[nodes]\nn1 = [\"10.0.0.1:1\", \"10.1.0.1:1\"]\nn2 = [\"10.0.0.2:1\", \"10.1.0.1:1\"]\n", `cluster.toml:5: nodes.n2: address "10.1.0.1:1" is also the address of n1`},
		{sec + "[nodes]\nn1 = [\"1.0.0.1:1\",\"1.0.0.2:1\",\"1.0.0.3:1\",\"1.0.0.4:1\",\"1.0.0.5:1\",\"1.0.0.6:1\",\"1.0.0.7:1\",\"1.0.0.8:1\",\"1.0.0.9:1\"]\n", `cluster.toml:4: nodes.n1: 9 heartbeat addresses: at most 8 links`},
		{sec + "insecure_no_secret = true\n[nodes]\nn1 = \"127.0.0.1:10001\"\nn2 = \"127.0.0.1:10002\"\n",
			"cluster.toml:3: cluster.insecure_no_secret: set while cluster.secret is set: remove one"},
	}
	for _, tt := range tests {
		_, err := tomlfile.ParseCluster("cluster.toml", []byte(tt.data), "n1")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("tomlfile.ParseCluster(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
	// the insecure keyword lets a test cluster run without a secret
	c, err := tomlfile.ParseCluster("cluster.toml", []byte("[cluster]\ninsecure_no_secret = true\n[nodes]\nn1 = \"127.0.0.1:1\"\nn2 = \"127.0.0.1:2\"\n"), "n1")
	if err != nil || !c.InsecureNoSecret {
		t.Errorf("insecure_no_secret: %+v, %v", c, err)
	}
	// several links per member; a single string stays one link
	c, err = tomlfile.ParseCluster("cluster.toml", []byte(sec+"[nodes]\nn1 = [\"10.0.0.1:10000\", \"10.1.0.1:10000\"]\nn2 = [\"10.0.0.2:10000\", \"10.1.0.2:10000\"]\n"), "n1")
	if err != nil || len(c.Nodes) != 2 || c.Nodes[1].Addr != "10.0.0.2:10000" || strings.Join(c.Nodes[1].LinkAddrs(), ",") != "10.0.0.2:10000,10.1.0.2:10000" {
		t.Errorf("two links: %+v, %v", c, err)
	}
	c, err = tomlfile.ParseCluster("cluster.toml", []byte(sec+"[nodes]\nn1 = \"10.0.0.1:10000\"\n"), "n1")
	if err != nil || c.Nodes[0].Links != nil || strings.Join(c.Nodes[0].LinkAddrs(), ",") != "10.0.0.1:10000" {
		t.Errorf("one link: %+v, %v", c, err)
	}
	// a one-node cluster needs no secret
	if _, err := tomlfile.ParseCluster("cluster.toml", []byte("[nodes]\nn1 = \"127.0.0.1:1\"\n"), "n1"); err != nil {
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
	cl, err := tomlfile.ParseCluster("cluster.toml", []byte(cluster), "n1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		n, err := tomlfile.ParseNode("node.toml", []byte(tt.node))
		if err != nil {
			t.Fatalf("tomlfile.ParseNode(%q): %v", tt.node, err)
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
		n, err := tomlfile.ParseNode("node.toml", []byte(ok))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckMember(n, cl); err != nil {
			t.Errorf("CheckMember(%q) = %v, want nil", ok, err)
		}
	}
	// without [nodes], the node is alone: its [hb] is not checked
	alone, err := tomlfile.ParseCluster("cluster.toml", nil, "n1")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\n[hb]\nport = 10005\naddr = \"10.0.0.9\"\n"))
	if err := CheckMember(n, alone); err != nil {
		t.Errorf("CheckMember(alone) = %v, want nil", err)
	}
}
