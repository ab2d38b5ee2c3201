package config

import (
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
