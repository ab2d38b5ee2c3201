package config_test

import (
	"strings"
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// A service's nodes are members; a name the replaced config held already
// is let through (a node removed from cluster.toml); "*" is every member.
func TestCheckServiceNodes(t *testing.T) {
	cfg, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\norchestrate = \"ha\"\nnodes = [\"n1\", \"n9\", \"n8\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = config.CheckServiceNodes(cfg, nil, []string{"n1", "n2"})
	if err == nil || err.Error() != "web.toml:3: DEFAULT.nodes: n9, n8 are not cluster members (members: n1, n2): a service runs only on members of [nodes] in cluster.toml (add the node there on every node first)" {
		t.Fatalf("got %v", err)
	}
	if err := config.CheckServiceNodes(cfg, []string{"n9", "n8"}, []string{"n1"}); err != nil {
		t.Fatalf("names held before: %v", err)
	}
	all, _ := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\nnodes = [\"*\"]\n"))
	if err := config.CheckServiceNodes(all, nil, []string{"n1"}); err != nil || !strings.Contains(string(all.Raw), "*") {
		t.Fatalf("nodes = [\"*\"]: %v", err)
	}
}
