package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ValidNodeName reports whether name may name a node (node.toml's
// node.name, a [nodes] member); names received from peers are checked with
// it before any use.
func ValidNodeName(name string) error {
	if len(name) > MaxNodeName {
		return fmt.Errorf("invalid node name %.40q...: %d characters, at most %d (a host name's limit)", name, len(name), MaxNodeName)
	}
	if !nodeNameRE.MatchString(name) {
		return fmt.Errorf("invalid node name %q: want letters, digits, _ . and -", name)
	}
	return nil
}

// MaxNodeName is the longest node name.
const MaxNodeName = 253

// ListsMembers reports whether cluster.toml lists its members in [nodes]
// (else the local node is the only one, at DefaultMemberAddr).
func (c *ClusterConfig) ListsMembers() bool { return c.explicit }

// Member returns the [nodes] entry of name.
func (c *ClusterConfig) Member(name string) (Member, bool) {
	for _, m := range c.Nodes {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// ErrAt builds the error of key in the single section sec of cluster.toml
// ("cluster", "nodes"), with its line when the file sets it.
func (c *ClusterConfig) ErrAt(sec, key, format string, args ...any) *Error {
	return keyErr(c.File, c.lines, sec, key, fmt.Sprintf(format, args...))
}

// ErrAt builds the error of key in the single section sec of node.toml
// ("node", "hb"), with its line when the file sets it.
func (n *NodeConfig) ErrAt(sec, key, format string, args ...any) *Error {
	return keyErr(n.File, n.lines, sec, key, fmt.Sprintf(format, args...))
}

func keyErr(file string, lines *lineIndex, sec, key, msg string) *Error {
	e := &Error{File: file, Key: sec, Msg: msg}
	if key != "" {
		e.Key += "." + key
	}
	if lines != nil {
		e.Line = lines.find(strings.Split(sec, "."), key) // [arbitrator.a1] is the path arbitrator, a1
	}
	return e
}

func isSet(lines *lineIndex, sec, key string) bool {
	if lines == nil {
		return false
	}
	_, ok := lines.keys[pathKey([]string{sec, key})]
	return ok
}

func fileLine(file string, lines *lineIndex, sec, key string) string {
	if lines != nil {
		if l := lines.find([]string{sec}, key); l > 0 {
			return fmt.Sprintf("%s:%d", file, l)
		}
	}
	return file
}

// CheckMember checks node.toml against cluster.toml when [nodes] lists
// members: the node is one of them, and its [hb] port and address are
// those of its own entry (a wildcard address is fine). Each refusal names
// the node.toml line and key, and the cluster.toml entry.
func CheckMember(n *NodeConfig, c *ClusterConfig) error {
	if err := checkHBDiskCluster(n, c); err != nil {
		return err
	}
	if err := checkGuardCluster(n, c); err != nil {
		return err
	}
	if !c.explicit {
		return nil
	}
	own, ok := c.Member(n.Name)
	if !ok {
		where := fileLine(c.File, c.lines, SectionNodes, "")
		members := strings.Join(c.NodeNames(), ", ")
		if !isSet(n.lines, SectionNode, "name") {
			return c.ErrAt(SectionNodes, "", "this node's name %q (the host name: node.name is not set in %s) is not a member (members: %s)",
				n.Name, n.File, members)
		}
		return n.ErrAt(SectionNode, "name", "%q is not a member of [nodes] in %s (members: %s)", n.Name, where, members)
	}
	entry := fmt.Sprintf("%s (nodes.%s = %q)", fileLine(c.File, c.lines, SectionNodes, own.Name), own.Name, own.Addr)
	host, portStr, ok := splitHostPort(own.Addr)
	if !ok {
		return c.ErrAt(SectionNodes, own.Name, "invalid address %q: want host:port", own.Addr)
	}
	port, _ := strconv.Atoi(portStr)
	if n.HB.Port != port {
		dflt := ""
		if !isSet(n.lines, SectionHB, "port") {
			dflt = " (the default)"
		}
		return n.ErrAt(SectionHB, "port", "%d%s differs from the port of this node's entry in %s: the peers would send to a port nobody listens on",
			n.HB.Port, dflt, entry)
	}
	if !isWildcard(n.HB.Addr) && !sameHost(n.HB.Addr, host) {
		return n.ErrAt(SectionHB, "addr", "%q is not the host of this node's entry in %s: want that address or a wildcard (0.0.0.0, ::)",
			n.HB.Addr, entry)
	}
	return nil
}

func isWildcard(addr string) bool {
	if addr == "" {
		return true
	}
	ip, ok := parseIP(addr)
	return ok && ip.IsUnspecified()
}

func sameHost(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	ia, oka := parseIP(a)
	ib, okb := parseIP(b)
	return oka && okb && ia == ib
}
