package config

import (
	"net/netip"
	"strings"
)

// The host:port and IP helpers of config, written over net/netip so that
// config (and the pure core with it) does not import net. They accept
// exactly what net.SplitHostPort and net.ParseIP accept (hostport_test.go
// compares them).

// parseIP parses an IPv4 or IPv6 address without zone, as net.ParseIP.
func parseIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func isIP(s string) bool {
	_, ok := parseIP(s)
	return ok
}

// isIPv4 reports whether s is an IPv4 address (or an IPv4-mapped IPv6 one).
func isIPv4(s string) bool {
	a, ok := parseIP(s)
	return ok && a.Is4()
}

// splitHostPort splits "host:port", "[host]:port" or "[host%zone]:port"
// as net.SplitHostPort does; ok is false where it returns an error.
func splitHostPort(hostport string) (host, port string, ok bool) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return "", "", false
	}
	j, k := 0, 0
	if hostport[0] == '[' {
		end := strings.IndexByte(hostport, ']')
		if end < 0 || end+1 != i {
			return "", "", false
		}
		host = hostport[1:end]
		j, k = 1, end+1
	} else {
		host = hostport[:i]
		if strings.IndexByte(host, ':') >= 0 {
			return "", "", false
		}
	}
	if strings.IndexByte(hostport[j:], '[') >= 0 || strings.IndexByte(hostport[k:], ']') >= 0 {
		return "", "", false
	}
	return host, hostport[i+1:], true
}

// joinHostPort is net.JoinHostPort.
func joinHostPort(host, port string) string {
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
