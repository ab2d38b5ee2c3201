package config_test

import (
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/config/tomlfile"
)

func TestGuardKeywords(t *testing.T) {
	c, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Guard || c.GuardLease != 7*time.Second {
		t.Fatalf("defaults: guard %v lease %s", c.Guard, c.GuardLease)
	}
	c, err = tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\nguard = false\nguard_lease = \"1s\"\nmaintenance_grace_period = \"1s\"\n"))
	if err != nil || c.Guard {
		t.Fatalf("guard off: %v %+v", err, c)
	}
	for _, tt := range []struct{ data, want string }{
		{"[node]\nguard_lease = \"1500ms\"\n", "node.toml:2: node.guard_lease: 1.5s is too short: at least 2s"},
		{"[node]\nmaintenance_grace_period = \"4s\"\n", "node.toml:2: node.maintenance_grace_period: 4s is too short for the guard"},
		{"[node]\nguard_lease = \"true\"\n", "node.toml:2: node.guard_lease: invalid duration"},
	} {
		_, err := tomlfile.ParseNode("node.toml", []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseNode(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
}

// With the quorum on, the lease must outlast a vote waiting for the
// arbitrators: refused naming node.toml's line and the arbitrator's.
func TestGuardLeaseLongerThanTheArbitratorsWait(t *testing.T) {
	n, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\nguard_lease = \"5s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := tomlfile.ParseCluster("cluster.toml", []byte("[cluster]\nname = \"c\"\nquorum = true\n\n[arbitrator.a1]\nuri = \"tcp://10.0.0.9:80\"\ntimeout = \"4s\"\n"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	err = config.CheckMember(n, cl)
	if err == nil || !strings.Contains(err.Error(), "node.toml:3: node.guard_lease: 5s must be longer than the longest arbitrator timeout plus 1s (4s of [arbitrator.a1], cluster.toml:7)") {
		t.Fatalf("lease vs arbitrator: %v", err)
	}
	cl.Quorum = false
	if err := config.CheckMember(n, cl); err != nil {
		t.Fatalf("quorum off: %v", err)
	}
	cl.Quorum, n.Guard = true, false
	if err := config.CheckMember(n, cl); err != nil {
		t.Fatalf("guard off: %v", err)
	}
}
