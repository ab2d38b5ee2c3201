package config_test

import (
	"strings"
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// The flex keywords: defaults, and every contradiction refused with the
// file, the line and the key.
func TestFlexKeywords(t *testing.T) {
	cfg, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.IsFlex() || cfg.FlexTarget != 2 || cfg.FlexMin != 1 || cfg.FlexMax != 2 {
		t.Fatalf("flex %v target %d min %d max %d, want flex 2 1 2", cfg.IsFlex(), cfg.FlexTarget, cfg.FlexMin, cfg.FlexMax)
	}
	plain, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\"]\n"))
	if err != nil || plain.IsFlex() || plain.Topology != "failover" {
		t.Fatalf("default topology: %v %q", err, plain.Topology)
	}
	const head = "[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]\norchestrate = \"ha\"\ntopology = \"flex\"\n"
	tests := []struct{ name, data, want string }{
		{"min over target", head + "flex_target = 2\nflex_min = 3\n", "w.toml:6: DEFAULT.flex_min: 3 is more than flex_target (2)"},
		{"target over max", head + "flex_target = 3\nflex_max = 2\n", "w.toml:5: DEFAULT.flex_target: 3 is more than flex_max (2)"},
		{"max over nodes", head + "flex_target = 2\nflex_max = 4\n", "w.toml:6: DEFAULT.flex_max: 4 instances, but the service has 3 nodes (n1, n2, n3): at most one instance per node"},
		{"target over nodes", head + "flex_target = 4\n", "w.toml:5: DEFAULT.flex_target: 4 instances, but the service has 3 nodes"},
		{"target zero", head + "flex_target = 0\n", "w.toml:5: DEFAULT.flex_target: must be at least 1 (got 0)"},
		{"all with max", head + "flex_target = \"all\"\nflex_max = 3\n", "w.toml:6: DEFAULT.flex_max: not with flex_target = \"all\""},
		{"all min over nodes", head + "flex_target = \"all\"\nflex_min = 4\n", "w.toml:6: DEFAULT.flex_min: 4 instances, but the service has 3 nodes (n1, n2, n3)"},
		{"all min negative", head + "flex_target = \"all\"\nflex_min = -1\n", "w.toml:6: DEFAULT.flex_min: must not be negative"},
		{"target word", head + "flex_target = \"many\"\n", `w.toml:5: DEFAULT.flex_target: invalid value "many": want an integer or "all"`},
		{"target negative", head + "flex_target = -2\n", "w.toml:5: DEFAULT.flex_target: integer -2 out of range"},
		{"min negative", head + "flex_min = -1\n", "w.toml:5: DEFAULT.flex_min: must not be negative"},
		{"flex keyword on failover", "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\nflex_target = 2\n", `w.toml:3: DEFAULT.flex_target: applies to topology = "flex" only (this service is "failover")`},
		{"flex without ha", "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\ntopology = \"flex\"\n", `w.toml:1: DEFAULT.orchestrate: a flex service needs orchestrate = "ha" (got "no")`},
		{"flex multiple_active", head + "multiple_active = \"warn\"\n", `w.toml:5: DEFAULT.multiple_active: not for a flex service (got "warn")`},
		{"topology bad", "[DEFAULT]\ntopology = \"global\"\n", `w.toml:2: DEFAULT.topology: invalid value "global": want one of "failover", "flex"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tomlfile.ParseService("w.toml", "w", []byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// With nodes = ["*"], flex_max is checked against the members when the
// service is created or set (CheckServiceNodes).
func TestFlexMaxOverMembers(t *testing.T) {
	cfg, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"*\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := config.CheckServiceNodes(cfg, nil, []string{"n1", "n2", "n3"}); err != nil {
		t.Fatalf("3 members: %v", err)
	}
	err = config.CheckServiceNodes(cfg, nil, []string{"n1", "n2"})
	if err == nil || !strings.Contains(err.Error(), "DEFAULT.flex_max: 3 instances, but the service has 2 nodes (*)") {
		t.Fatalf("2 members: %v", err)
	}
}

// The global mode (flex_target = "all"): flex_min defaults to 1, flex_max
// is the number of listed nodes, or 0 (the members, at run time) with "*",
// where flex_min is checked against the members.
func TestFlexGlobalKeywords(t *testing.T) {
	cfg, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = \"all\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.FlexGlobal() || cfg.FlexTarget != config.CountAll || cfg.FlexMin != 1 || cfg.FlexMax != 3 {
		t.Fatalf("global %v target %d min %d max %d, want true all 1 3", cfg.FlexGlobal(), cfg.FlexTarget, cfg.FlexMin, cfg.FlexMax)
	}
	star, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"*\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = \"all\"\nflex_min = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if star.FlexMax != 0 {
		t.Fatalf("nodes *: flex_max %d, want 0 (the members)", star.FlexMax)
	}
	if err := config.CheckServiceNodes(star, nil, []string{"n1", "n2", "n3"}); err != nil {
		t.Fatalf("3 members: %v", err)
	}
	err = config.CheckServiceNodes(star, nil, []string{"n1", "n2"})
	if err == nil || !strings.Contains(err.Error(), "DEFAULT.flex_min: 3 instances, but the service has 2 nodes (*)") {
		t.Fatalf("2 members: %v", err)
	}
}

// svcmgr set of flex_target goes through the same checks, and "all" and
// numbers are read back as written.
func TestFlexTargetSet(t *testing.T) {
	const data = "[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = 2\nflex_max = 3\n"
	out, err := tomlfile.SetKeyword("w.toml", []byte(data), "flex_target=3")
	if err != nil {
		t.Fatalf("set 3: %v", err)
	}
	if !strings.Contains(string(out), "flex_target = 3") {
		t.Fatalf("set 3 wrote:\n%s", out)
	}
	if _, err := tomlfile.SetKeyword("w.toml", []byte(data), "flex_target=4"); err == nil || !strings.Contains(err.Error(), "DEFAULT.flex_target: 4 is more than flex_max (3)") {
		t.Fatalf("set 4: %v", err)
	}
}
