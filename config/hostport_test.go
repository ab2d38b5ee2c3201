package config

import (
	"net"
	"testing"
)

// TestHostPortAsNet checks the net-free helpers against the net package
// they replace.
func TestHostPortAsNet(t *testing.T) {
	for _, s := range []string{
		"", ":", "a:1", "a:", ":1", "a", "a:b:c", "[::1]:80", "[::1]", "[::1]:", "[::1]x:80",
		"[::1]:80:90", "[fe80::1%eth0]:80", "[a]:1", "a[b]:1", "a]:1", "[a:1", "1.2.3.4:65536",
		"host.example:10000", "::1:80", "[[::1]]:80", "[::1]]:80",
	} {
		h, p, err := net.SplitHostPort(s)
		gh, gp, ok := splitHostPort(s)
		if ok != (err == nil) || ok && (gh != h || gp != p) {
			t.Errorf("splitHostPort(%q) = %q, %q, %v; net says %q, %q, %v", s, gh, gp, ok, h, p, err)
		}
		if err == nil {
			if got, want := joinHostPort(h, p), net.JoinHostPort(h, p); got != want {
				t.Errorf("joinHostPort(%q, %q) = %q, want %q", h, p, got, want)
			}
		}
	}
	for _, s := range []string{
		"", "1.2.3.4", "01.2.3.4", "1.2.3", "::1", "::ffff:1.2.3.4", "fe80::1%eth0", "0.0.0.0", "::",
		"256.1.1.1", "localhost", "2001:db8::1", " 1.2.3.4", "1.2.3.4 ", "::ffff:0.0.0.0",
	} {
		ip := net.ParseIP(s)
		if got, want := isIP(s), ip != nil; got != want {
			t.Errorf("isIP(%q) = %v, want %v", s, got, want)
		}
		if got, want := isIPv4(s), ip.To4() != nil; got != want {
			t.Errorf("isIPv4(%q) = %v, want %v", s, got, want)
		}
		if a, ok := parseIP(s); ok && a.String() != ip.String() {
			t.Errorf("parseIP(%q) = %s, want %s", s, a, ip)
		}
		if got, want := isWildcard(s), s == "" || ip != nil && ip.IsUnspecified(); got != want {
			t.Errorf("isWildcard(%q) = %v, want %v", s, got, want)
		}
	}
}
