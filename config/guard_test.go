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
	if !c.Guard || c.GuardLease != 12*time.Second {
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
	n, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\nguard_lease = \"5s\"\n\n[hb]\ninterval = \"1s\"\n"))
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

// With the quorum on, the lease counts from the newest acknowledged beat,
// up to two beat periods old: a lease not longer than that and a renewal
// is refused, naming node.toml's line (the default too).
func TestGuardLeaseLongerThanTwoBeats(t *testing.T) {
	cl, err := tomlfile.ParseCluster("cluster.toml", []byte("[cluster]\nname = \"c\"\nquorum = true\n"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ data, want string }{
		{"[node]\nname = \"n1\"\nguard_lease = \"11s\"\n", "node.toml:3: node.guard_lease: 11s must be longer than twice the beat period (5s: hb.interval, or hb.timeout/3 if shorter) plus 1s"},
		{"[node]\nname = \"n1\"\n\n[hb]\ninterval = \"6s\"\ntimeout = \"30s\"\n", "node.toml:1: node.guard_lease: 12s (the default) must be longer than twice the beat period (6s"},
		{"[node]\nname = \"n1\"\nguard_lease = \"11s\"\n\n[hb]\ntimeout = \"12s\"\n", ""}, // beat 4s
		{"[node]\nname = \"n1\"\n", ""},
	} {
		n, err := tomlfile.ParseNode("node.toml", []byte(tt.data))
		if err != nil {
			t.Fatal(err)
		}
		err = config.CheckMember(n, cl)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%q: %v, want %q", tt.data, err, tt.want)
		}
		cl.Quorum = false
		if err := config.CheckMember(n, cl); err != nil {
			t.Errorf("%q, quorum off: %v", tt.data, err)
		}
		cl.Quorum = true
	}
}
