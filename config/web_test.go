package config_test

import (
	"strings"
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// The web view listens on the loopback unless told otherwise,
// and never off the loopback without an access token.
func TestWebAddr(t *testing.T) {
	for _, tt := range []struct {
		addr, listen string
		loop         bool
	}{
		{":8080", "127.0.0.1:8080", true},
		{"localhost:8080", "localhost:8080", true},
		{"[::1]:8080", "[::1]:8080", true},
		{"10.0.0.1:8080", "10.0.0.1:8080", false},
		{"0.0.0.0:8080", "0.0.0.0:8080", false},
	} {
		if got := config.WebListenAddr(tt.addr); got != tt.listen || config.WebLoopback(tt.addr) != tt.loop {
			t.Errorf("%q: listen %q loopback %v, want %q %v", tt.addr, got, config.WebLoopback(tt.addr), tt.listen, tt.loop)
		}
	}
	c, err := tomlfile.ParseNode("node.toml", []byte("[node]\nweb_addr = \"10.0.0.1:8080\"\nweb_token_file = \"/etc/haven/web.token\"\n"))
	if err != nil || c.WebAddr != "10.0.0.1:8080" || c.WebTokenFile != "/etc/haven/web.token" {
		t.Fatalf("%v %+v", err, c)
	}
	if c, err := tomlfile.ParseNode("node.toml", []byte("[node]\n")); err != nil || c.WebAddr != "" {
		t.Fatalf("off by default: %v %q", err, c.WebAddr)
	}
}

func TestWebAddrErrors(t *testing.T) {
	tests := []struct{ data, want string }{
		{"[node]\nweb_addr = \"0.0.0.0:8080\"\n", `node.toml:2: node.web_addr: "0.0.0.0:8080" is not a loopback address: set web_token_file`},
		{"[node]\nweb_addr = \"10.0.0.1:8080\"\nweb_tls_cert = \"c.pem\"\nweb_tls_key = \"k.pem\"\n", `node.web_addr: "10.0.0.1:8080" is not a loopback address`},
		{"[node]\nweb_addr = \"8080\"\n", `node.toml:2: node.web_addr: invalid address "8080"`},
		{"[node]\nweb_addr = \":8080\"\nweb_tls_cert = \"c.pem\"\n", `node.toml:3: node.web_tls_cert: set without web_tls_key`},
		{"[node]\nweb_addr = \":10000\"\n", `node.web_addr: ":10000" uses the heartbeat port 10000`},
		{"[node]\nmetrics_addr = \"127.0.0.1:9477\"\nweb_addr = \":9477\"\n", `node.toml:3: node.web_addr: ":9477" uses the port of metrics_addr`},
	}
	for _, tt := range tests {
		_, err := tomlfile.ParseNode("node.toml", []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseNode(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
}
