package config

import (
	"encoding/hex"
	"fmt"
	"strconv"
)

// Checks that look at several keys of one file at once (node.toml), and
// the weak secrets of cluster.toml. Each is a config error naming the file,
// the line and every key involved: the daemon exits 2 on it at start,
// instead of failing later when the heartbeat or the metrics listener
// starts.

// checkNodeCross checks the keys of node.toml against each other.
func (d *document) checkNodeCross(c *NodeConfig, node, hb *section) error {
	if c.HB.Interval >= c.HB.Timeout {
		sec, key := hb, "interval"
		if !hb.isSet("interval") {
			key = "timeout"
		}
		return d.errAt(sec, key, "hb.interval %s%s must be shorter than hb.timeout %s%s: a peer would be declared down between two beats",
			c.HB.Interval, defaultNote(hb, "interval"), c.HB.Timeout, defaultNote(hb, "timeout"))
	}
	if c.MetricsAddr != "" {
		host, port, _ := splitHostPort(c.MetricsAddr)
		p, _ := strconv.Atoi(port)
		if p == c.HB.Port && hostsOverlap(host, c.HB.Addr) {
			return d.errAt(node, "metrics_addr", "%q uses the heartbeat port: hb.port %d%s on hb.addr %q%s (the heartbeat listens on it over UDP and TCP): give the metrics another port",
				c.MetricsAddr, c.HB.Port, defaultNote(hb, "port"), c.HB.Addr, defaultNote(hb, "addr"))
		}
	}
	return nil
}

// defaultNote says that a key is not set in the file (its default applies).
func defaultNote(sec *section, key string) string {
	if sec.isSet(key) {
		return ""
	}
	return " (the default)"
}

// hostsOverlap reports whether two listen hosts may share an address: one
// is a wildcard, they are the same, or both are the loopback.
func hostsOverlap(a, b string) bool {
	if isWildcard(a) || isWildcard(b) || sameHost(a, b) {
		return true
	}
	return isLoopback(a) && isLoopback(b)
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, ok := parseIP(h)
	return ok && ip.IsLoopback()
}

// minSecretBytes is the fewest distinct byte values a secret must hold
// among its 32 (weakSecret).
const minSecretBytes = 16

// weakSecret says why a secret of 64 hex digits is obviously not random
// ("" when it is not): fewer than minSecretBytes distinct byte values among
// its 32 bytes (all zeros, one repeated byte, a short repeated pattern: 32
// random bytes hold about 30 distinct values, fewer than 16 has a chance
// below 1e-15), or bytes that step by a constant (00 01 02 ...).
func weakSecret(secret string) string {
	b, err := hex.DecodeString(secret)
	if err != nil || len(b) < 2 {
		return ""
	}
	seen := map[byte]bool{}
	for _, x := range b {
		seen[x] = true
	}
	if len(seen) < minSecretBytes {
		return fmt.Sprintf("only %d distinct byte values among its %d bytes (at least %d wanted)", len(seen), len(b), minSecretBytes)
	}
	step := b[1] - b[0]
	for i := 2; i < len(b); i++ {
		if b[i]-b[i-1] != step {
			return ""
		}
	}
	return fmt.Sprintf("its bytes step by a constant (%#02x)", step)
}
