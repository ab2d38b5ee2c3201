package config

import (
	"fmt"
	"math"
	"strconv"
)

// WebListenAddr is the address node.web_addr listens on: "" stays ""
// (no web view), a missing host is the loopback (":8080" is
// 127.0.0.1:8080: the view of the cluster is not offered to the network
// unless an address says so).
func WebListenAddr(addr string) string {
	host, port, ok := splitHostPort(addr)
	if addr == "" || !ok || host != "" {
		return addr
	}
	return "127.0.0.1:" + port // no net here: config is pure
}

// WebLoopback reports whether node.web_addr listens on the loopback only.
func WebLoopback(addr string) bool {
	host, _, ok := splitHostPort(WebListenAddr(addr))
	return ok && isLoopback(host)
}

// checkWeb checks the web view's keys: web_addr like metrics_addr; a
// certificate and its key together; and an access token wherever the
// view listens off the loopback (anyone who reaches the address would read
// the cluster's state otherwise).
func (d *document) checkWeb(c *NodeConfig, node *section) error {
	if c.WebAddr == "" {
		return nil
	}
	if err := checkMetricsAddr(c.WebAddr); err != nil {
		return d.errAt(node, "web_addr", "%v", err)
	}
	if (c.WebTLSCert == "") != (c.WebTLSKey == "") {
		set, unset := "web_tls_cert", "web_tls_key"
		if c.WebTLSCert == "" {
			set, unset = unset, set
		}
		return d.errAt(node, set, "set without %s: web_tls_cert and web_tls_key go together (HTTPS), set both or neither", unset)
	}
	if !WebLoopback(c.WebAddr) && c.WebTokenFile == "" {
		return d.errAt(node, "web_addr", "%q is not a loopback address: set web_token_file too (and web_tls_cert/web_tls_key), or the cluster's state is open to anyone who reaches it", c.WebAddr)
	}
	host, port, _ := splitHostPort(WebListenAddr(c.WebAddr))
	p, _ := strconv.Atoi(port)
	if p == c.HB.Port && hostsOverlap(host, c.HB.Addr) {
		return d.errAt(node, "web_addr", "%q uses the heartbeat port %d: give the web view another port", c.WebAddr, c.HB.Port)
	}
	if c.MetricsAddr != "" {
		mh, mp, _ := splitHostPort(c.MetricsAddr)
		if mp == port && hostsOverlap(host, mh) {
			return d.errAt(node, "web_addr", "%q uses the port of metrics_addr %q: give the web view another port", c.WebAddr, c.MetricsAddr)
		}
	}
	return nil
}

// The web view's access token (node.web_token_file) must be long and
// look random: at least MinWebTokenLen characters and MinWebTokenBits by
// the estimate of WebTokenWeak.
const (
	MinWebTokenLen  = 16
	MinWebTokenBits = 32
)

// WebTokenWeak says why an access token of the web view is too easy to
// guess, "" when it is not. Its strength is estimated from its own
// characters: the Shannon entropy of their frequencies (bits a character)
// times the number of characters that neither continue a constant step
// (a repeated character, "abcd", "1234") nor repeat a pair of characters
// seen before ("passwordpassword"). One repeated character scores 0,
// "0123456789abcdef" 16 bits, "Summer2024Summer" 29; random tokens of 24
// hexadecimal digits score 44 at the least (80 typically), the 48 of
// `openssl rand -hex 24` 100 at the least (one of 16 random hexadecimal
// digits scores below 32 about once in a thousand). With the delay each
// wrong guess costs, MinWebTokenBits is far beyond guessing: the rule
// refuses what a person typed, not what a generator made.
func WebTokenWeak(tok string) string {
	if n := len([]rune(tok)); n < MinWebTokenLen {
		return fmt.Sprintf("the token is %d characters, want at least %d (e.g. openssl rand -hex 24)", n, MinWebTokenLen)
	}
	if bits := webTokenBits(tok); bits < MinWebTokenBits {
		return fmt.Sprintf("the token looks guessable: about %.0f bits by its characters (repeats, runs such as abcd or 1234), want at least %d (e.g. openssl rand -hex 24)", bits, MinWebTokenBits)
	}
	return ""
}

// webTokenBits is WebTokenWeak's estimate.
func webTokenBits(tok string) float64 {
	rs := []rune(tok)
	freq := map[rune]int{}
	for _, r := range rs {
		freq[r]++
	}
	var h float64
	for _, n := range freq {
		p := float64(n) / float64(len(rs))
		h -= p * math.Log2(p)
	}
	fresh := 0
	pairs := map[[2]rune]bool{}
	for i := range rs {
		if i > 0 {
			p := [2]rune{rs[i-1], rs[i]}
			if pairs[p] {
				continue // a pair seen before: a repeated pattern
			}
			pairs[p] = true
		}
		if i < 2 || rs[i]-rs[i-1] != rs[i-1]-rs[i-2] {
			fresh++
		}
	}
	return h * float64(fresh)
}
