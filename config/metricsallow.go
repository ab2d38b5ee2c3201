package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// MetricsAllowList parses node.metrics_allow: IP addresses and CIDR
// prefixes ("10.0.0.5", "10.1.0.0/16", "::1"). An empty list allows
// every address.
func MetricsAllowList(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("invalid entry %q: want an IP address or a CIDR prefix (e.g. \"10.0.0.0/24\")", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("invalid entry %q: want an IP address or a CIDR prefix (e.g. \"10.0.0.0/24\")", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
