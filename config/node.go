package config

import (
	"fmt"
	"maps"
	"slices"

	pathpkg "path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// nodeNameRE is what a node name may be (a host name, short or not).
var nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ParseNode parses the content of node.toml. hostname is the node name
// when node.name is not set (the shell's short host name).
func (dec Decoder) ParseNode(file string, data []byte, hostname string) (*NodeConfig, error) {
	d, err := dec.decodeDoc(file, data, nodeSchema)
	if err != nil {
		return nil, err
	}
	node := d.ensure(SectionNode)
	hb := d.ensure(SectionHB)
	c := &NodeConfig{File: file, lines: d.lines}
	fill(c, node)
	fill(&c.HB, hb)
	hbDisk := d.ensure(SectionHBDisk)
	fill(&c.HB.Disk, hbDisk)
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if c.Name == "" {
		if node.isSet("name") {
			return nil, d.errAt(node, "name", "must not be empty")
		}
		c.Name = hostname
	}
	if !nodeNameRE.MatchString(c.Name) {
		return nil, d.errAt(node, "name", "invalid node name %q: want letters, digits, _ . and -", c.Name)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		if k == "" {
			return nil, d.errAt(node, "labels", "empty label name")
		}
	}
	if c.HB.Port < 1 || c.HB.Port > 65535 {
		return nil, d.errAt(hb, "port", "port %d out of range 1..65535", c.HB.Port)
	}
	if !isIP(c.HB.Addr) && c.HB.Addr != "localhost" {
		return nil, d.errAt(hb, "addr", "invalid address %q: want an IP address", c.HB.Addr)
	}
	for _, p := range []struct {
		sec *section
		key string
	}{{hb, "timeout"}, {hb, "interval"}, {node, "monitor_interval"}, {node, "check_interval"}, {node, "ready_period"}} {
		if formatValue(p.sec.value(p.key), false) == "0s" {
			return nil, d.errAt(p.sec, p.key, "must be more than 0")
		}
	}
	if !pathpkg.IsAbs(c.OCFRoot) {
		return nil, d.errAt(node, "ocf_root", "%q is not an absolute path", c.OCFRoot)
	}
	for k, v := range c.ContainerEnv {
		if !envNameRE.MatchString(k) || strings.ContainsRune(v, 0) {
			return nil, d.errAt(node, "container_env", "invalid variable %q: want a name of letters, digits and _, a value without NUL", k)
		}
	}
	if err := checkMetricsAddr(c.MetricsAddr); err != nil {
		return nil, d.errAt(node, "metrics_addr", "%v", err)
	}
	if _, err := MetricsAllowList(c.MetricsAllow); err != nil {
		return nil, d.errAt(node, "metrics_allow", "%v", err)
	}
	if err := d.checkWeb(c, node); err != nil {
		return nil, err
	}
	if c.Hooks, err = d.hooks(); err != nil {
		return nil, err
	}
	if err := d.checkHBDisk(c, node, hbDisk); err != nil {
		return nil, err
	}
	if err := d.checkGuard(c, node); err != nil {
		return nil, err
	}
	if err := d.checkNodeCross(c, node, hb); err != nil {
		return nil, err
	}
	return c, nil
}

// ensure returns the single section kind, empty when the file has none.
func (d *document) ensure(kind string) *section {
	if s := d.find(kind, ""); s != nil {
		return s
	}
	s := &section{kind: kind, raw: map[string]any{}, vals: map[string]any{}}
	d.sections = append(d.sections, s)
	return s
}

// DefaultMemberAddr is the heartbeat address of the local node when
// cluster.toml names no member.
const DefaultMemberAddr = "127.0.0.1:10000"

// ParseCluster parses the content of cluster.toml. When [nodes] is missing
// or empty, localNode is the only member, at DefaultMemberAddr.
func (dec Decoder) ParseCluster(file string, data []byte, localNode string) (*ClusterConfig, error) {
	d, err := dec.decodeDoc(file, data, clusterSchema)
	if err != nil {
		return nil, err
	}
	cl := d.ensure(SectionCluster)
	c := &ClusterConfig{File: file, lines: d.lines}
	fill(c, cl)
	if c.Name == "" {
		return nil, d.errAt(cl, "name", "must not be empty")
	}
	if c.Secret != "" && !isHex(c.Secret, 64) {
		return nil, d.errAt(cl, "secret", "must be 64 hex digits (32 bytes), got %d characters", len(c.Secret))
	}
	if why := weakSecret(c.Secret); why != "" {
		// never echo the secret, not even in part
		return nil, d.errAt(cl, "secret", "too weak: %s: generate one with `openssl rand -hex 32` (or head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')", why)
	}
	if len(c.Name) > 255 {
		return nil, d.errAt(cl, "name", "longer than 255 bytes (%d): the heartbeat carries it in one byte of length", len(c.Name))
	}
	if nodes := d.find(SectionNodes, ""); nodes != nil {
		byFold := map[string]string{} // lowercased name -> name
		byAddr := map[string]string{} // canonical host:port -> name
		for _, name := range nodes.keys {
			addrs := nodes.vals[name].([]string)
			if !nodeNameRE.MatchString(name) {
				return nil, d.errAt(nodes, name, "invalid node name %q", name)
			}
			if err := checkLinks(addrs); err != nil {
				return nil, d.errAt(nodes, name, "%v", err)
			}
			if other, dup := byFold[strings.ToLower(name)]; dup {
				return nil, d.errAt(nodes, name, "member %q differs from %q only in case: node names are compared as written, give them distinct names", name, other)
			}
			byFold[strings.ToLower(name)] = name
			for _, addr := range addrs {
				if other, dup := byAddr[canonicalHostPort(addr)]; dup {
					return nil, d.errAt(nodes, name, "address %q is also the address of %s: each member needs its own host:port", addr, other)
				}
				byAddr[canonicalHostPort(addr)] = name
			}
			if len(c.Nodes) > 0 && len(c.Nodes[0].LinkAddrs()) != len(addrs) {
				first := c.Nodes[0]
				return nil, d.errAt(nodes, name, "%d heartbeat address(es), but %s lists %d: every member lists one address per link, in the same order (link 1 first)", len(addrs), first.Name, len(first.LinkAddrs()))
			}
			m := Member{Name: name, Addr: addrs[0]}
			if len(addrs) > 1 {
				m.Links = addrs
			}
			c.Nodes = append(c.Nodes, m)
		}
	}
	c.explicit = len(c.Nodes) > 0
	if len(c.Nodes) == 0 {
		c.Nodes = []Member{{Name: localNode, Addr: DefaultMemberAddr}}
	}
	if c.InsecureNoSecret && c.Secret != "" {
		return nil, d.errAt(cl, "insecure_no_secret", "set while cluster.secret is set: remove one")
	}
	if len(c.Nodes) > 1 && c.Secret == "" && !c.InsecureNoSecret {
		return nil, d.errAt(cl, "secret", "a cluster of %d members needs a secret (64 hex digits, e.g. from `openssl rand -hex 32`): without one, anyone who can send a datagram to a heartbeat port runs commands as root on every node (cluster.insecure_no_secret = true is for tests only)", len(c.Nodes))
	}
	for _, sec := range d.sections {
		if sec.kind != SectionArbitrator {
			continue
		}
		if err := d.checkRequired(sec); err != nil {
			return nil, err
		}
		a := Arbitrator{Name: sec.name}
		fill(&a, sec)
		if err := checkArbitratorURI(a.URI); err != nil {
			return nil, d.errAt(sec, "uri", "%v", err)
		}
		if strings.HasPrefix(a.URI, "haven://") && c.Secret == "" {
			return nil, d.errAt(sec, "uri", "a one-vote arbitrator (haven://) authenticates the nodes with the cluster secret: set cluster.secret")
		}
		if a.Key != "" {
			if !strings.HasPrefix(a.URI, "haven://") {
				return nil, d.errAt(sec, "key", "only a one-vote arbitrator (haven://) has a key")
			}
			pub, err := ParseNodeKey(a.Key)
			if err != nil {
				return nil, d.errAt(sec, "key", "%v (nodemgr arbitrator key show prints it on the arbitrator's host)", err)
			}
			a.PubKey = pub
		}
		if a.Weight < 0 {
			return nil, d.errAt(sec, "weight", "must not be negative")
		}
		if a.Timeout <= 0 {
			return nil, d.errAt(sec, "timeout", "must be more than 0")
		}
		c.Arbitrators = append(c.Arbitrators, a)
	}
	for _, sec := range d.sections {
		if sec.kind != SectionStonith {
			continue
		}
		if err := d.checkRequired(sec); err != nil {
			return nil, err
		}
		st := Stonith{Node: sec.name}
		fill(&st, sec)
		if !c.hasMember(sec.name) {
			return nil, d.errAt(sec, "command", "[stonith.%s]: %s is not a cluster member ([nodes])", sec.name, sec.name)
		}
		if strings.TrimSpace(st.Command) == "" {
			return nil, d.errAt(sec, "command", "must not be empty")
		}
		if st.Timeout <= 0 {
			return nil, d.errAt(sec, "timeout", "must be more than 0")
		}
		if c.Stonith == nil {
			c.Stonith = map[string]Stonith{}
		}
		c.Stonith[sec.name] = st
	}
	if err := d.parseNodeKeys(c); err != nil {
		return nil, err
	}
	if err := d.parseAdminKeys(c); err != nil {
		return nil, err
	}
	sortMembers(c)
	return c, nil
}

func (c *ClusterConfig) hasMember(name string) bool {
	for _, m := range c.Nodes {
		if m.Name == name {
			return true
		}
	}
	return false
}

func sortMembers(c *ClusterConfig) {
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
	sort.Slice(c.Arbitrators, func(i, j int) bool { return c.Arbitrators[i].Name < c.Arbitrators[j].Name })
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// canonicalHostPort writes addr so that two spellings of one address
// compare equal: IPs in their canonical form, host names lowercased.
func canonicalHostPort(addr string) string {
	host, port, ok := splitHostPort(addr)
	if !ok {
		return addr
	}
	if ip, ok := parseIP(host); ok {
		host = ip.String()
	}
	p, _ := strconv.Atoi(port)
	return joinHostPort(strings.ToLower(host), strconv.Itoa(p))
}

// MaxLinks is the most heartbeat links (addresses) a member may list.
const MaxLinks = 8

// checkLinks checks the heartbeat addresses of one [nodes] entry: one
// host:port, or a list of 1 to MaxLinks distinct ones; with several, each
// host is an IP address (the daemon binds each of its own).
func checkLinks(addrs []string) error {
	if len(addrs) == 0 {
		return fmt.Errorf("no heartbeat address: want \"host:port\" or a list [\"ip:port\", \"ip:port\"], one per link")
	}
	if len(addrs) > MaxLinks {
		return fmt.Errorf("%d heartbeat addresses: at most %d links", len(addrs), MaxLinks)
	}
	seen := map[string]bool{}
	for i, addr := range addrs {
		if err := checkHostPort(addr); err != nil {
			if len(addrs) > 1 {
				return fmt.Errorf("link %d: invalid address %q: %v", i+1, addr, err)
			}
			return fmt.Errorf("invalid address %q: %v", addr, err)
		}
		if host, _, _ := splitHostPort(addr); len(addrs) > 1 && !isIP(host) {
			return fmt.Errorf("link %d: %q: with several links each address must be an IP address (the daemon binds each)", i+1, addr)
		}
		if seen[canonicalHostPort(addr)] {
			return fmt.Errorf("link %d: address %q listed twice", i+1, addr)
		}
		seen[canonicalHostPort(addr)] = true
	}
	return nil
}

func checkHostPort(addr string) error {
	host, port, ok := splitHostPort(addr)
	if !ok {
		return fmt.Errorf("want host:port")
	}
	if host == "" {
		return fmt.Errorf("empty host")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q out of range 1..65535", port)
	}
	return nil
}

func checkArbitratorURI(uri string) error {
	switch {
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
		if len(strings.SplitN(uri, "://", 2)[1]) == 0 {
			return fmt.Errorf("invalid uri %q: no host", uri)
		}
		return nil
	case strings.HasPrefix(uri, "tcp://"), strings.HasPrefix(uri, "haven://"):
		_, hp, _ := strings.Cut(uri, "://")
		if err := checkHostPort(hp); err != nil {
			return fmt.Errorf("invalid uri %q: %v", uri, err)
		}
		return nil
	}
	return fmt.Errorf("invalid uri %q: want http://, https://, tcp://host:port, or haven://host:port (Haven's one-vote arbitrator)", uri)
}
