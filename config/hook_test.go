package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/config/tomlfile"
)

func TestNodeHooksAndMetricsAddr(t *testing.T) {
	data := `[node]
metrics_addr = "127.0.0.1:9477"

[hook.pager]
events = ["failover", "peer_down"]
command = "/usr/local/bin/page --urgent"

[hook.all]
events = ["*"]
command = "sh -c 'cat >> /var/log/haven-events.json'"
timeout = "2s"
`
	c, err := tomlfile.ParseNode("node.toml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if c.MetricsAddr != "127.0.0.1:9477" {
		t.Errorf("metrics_addr %q", c.MetricsAddr)
	}
	want := []config.Hook{
		{Name: "all", Events: []string{"*"}, Command: "sh -c 'cat >> /var/log/haven-events.json'", Timeout: 2 * time.Second},
		{Name: "pager", Events: []string{"failover", "peer_down"}, Command: "/usr/local/bin/page --urgent", Timeout: 10 * time.Second},
	}
	if !reflect.DeepEqual(c.Hooks, want) {
		t.Errorf("hooks\n got %+v\nwant %+v", c.Hooks, want)
	}
	if !c.Hooks[0].Matches("action_end") || !c.Hooks[1].Matches("failover") || c.Hooks[1].Matches("action_end") {
		t.Error("Matches")
	}
	// off by default
	c, err = tomlfile.ParseNode("node.toml", []byte("[node]\n"))
	if err != nil || c.MetricsAddr != "" || len(c.Hooks) != 0 {
		t.Fatalf("defaults: %v %+v", err, c)
	}
}

func TestNodeHookAndMetricsErrors(t *testing.T) {
	tests := []struct{ data, want string }{
		{"[node]\nmetrics_addr = \"9477\"\n", `node.toml:2: node.metrics_addr: invalid address "9477": want host:port`},
		{"[node]\nmetrics_addr = \"metrics.example:9477\"\n", `node.toml:2: node.metrics_addr: invalid address "metrics.example:9477": the host must be an IP address`},
		{"[node]\nmetrics_addr = \"127.0.0.1:0\"\n", `node.toml:2: node.metrics_addr: invalid address "127.0.0.1:0": port "0" out of range 1..65535`},
		{"[hook.a]\ncommand = \"true\"\n", "node.toml:1: hook.a.events: required keyword missing"},
		{"[hook.a]\nevents = [\"failover\"]\n", "node.toml:1: hook.a.command: required keyword missing"},
		{"[hook.a]\nevents = [\"failover\", \"failovr\"]\ncommand = \"true\"\n", `node.toml:2: hook.a.events: unknown event kind "failovr" (known: action_begin,`},
		{"[hook.a]\nevents = []\ncommand = \"true\"\n", `node.toml:2: hook.a.events: empty`},
		{"[hook.a]\nevents = [\"*\"]\ncommand = \"sh -c 'x\"\n", `node.toml:3: hook.a.command: `},
		{"[hook.a]\nevents = [\"*\"]\ncommand = \"  \"\n", `node.toml:3: hook.a.command: empty command`},
		{"[hook.a]\nevents = [\"*\"]\ncommand = \"true\"\ntimeout = 0\n", `node.toml:4: hook.a.timeout: must be more than 0`},
		{"[hook.a]\nevents = [\"*\"]\ncommand = \"true\"\nwhen = 1\n", `node.toml:4: hook.a.when: unknown keyword (known: command, events, timeout)`},
		{"[hook]\nevents = [\"*\"]\n", `keywords of hook go in sections [hook.NAME]`},
	}
	for _, tt := range tests {
		_, err := tomlfile.ParseNode("node.toml", []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseNode(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
}
