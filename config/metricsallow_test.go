package config_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// node.metrics_allow: IP addresses and CIDR prefixes; anything else is a
// config error naming the file, the line and the key.
func TestNodeMetricsAllow(t *testing.T) {
	c, err := tomlfile.ParseNode("node.toml", []byte("[node]\nmetrics_addr = \":9477\"\nmetrics_allow = [\"10.0.0.5\", \"192.168.1.7/24\", \"::1\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.MetricsAllowList(c.MetricsAllow)
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("192.168.1.0/24"), netip.MustParsePrefix("::1/128")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("metrics_allow %v: %v, %v; want %v", c.MetricsAllow, got, err, want)
	}
	for data, msg := range map[string]string{
		"[node]\nmetrics_allow = [\"10.0.0.300\"]\n":  `node.toml:2: node.metrics_allow: invalid entry "10.0.0.300": want an IP address or a CIDR prefix`,
		"[node]\nmetrics_allow = [\"10.0.0.0/33\"]\n": `node.toml:2: node.metrics_allow: invalid entry "10.0.0.0/33"`,
		"[node]\nmetrics_allow = [\"scraper.lan\"]\n": `node.toml:2: node.metrics_allow: invalid entry "scraper.lan"`,
	} {
		if _, err := tomlfile.ParseNode("node.toml", []byte(data)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseNode(%q) = %v, want %q", data, err, msg)
		}
	}
}
