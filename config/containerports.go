package config

import (
	"fmt"
	"strconv"
	"strings"
)

// A container's published ports (network = "bridge"): each
// "[IP:]HOSTPORT:CONTAINERPORT[/tcp|/udp]", given to the engine as
// --publish. The engine (podman's netavark) makes the NAT rules in the
// node's network namespace; Haven checks the form, and that no host port
// is published twice by the service.

// PortSpec is one published port.
type PortSpec struct {
	IP        string // "" for every address of the node
	Host      int
	Container int
	Proto     string // tcp or udp
}

// portRef says whether a part of a port holds a reference (checked again
// once expanded).
func portRef(s string) bool { return strings.Contains(s, "{") }

// ParsePort reads a published port; the parts that hold a reference are
// left zero (PortSpec.IP keeps its text). The message names what is
// wrong.
func ParsePort(s string) (PortSpec, error) {
	p := PortSpec{Proto: "tcp"}
	const form = "want [IP:]HOSTPORT:CONTAINERPORT[/tcp|/udp]"
	rest := s
	if i := strings.LastIndex(rest, "/"); i >= 0 {
		p.Proto = rest[i+1:]
		rest = rest[:i]
		if p.Proto != "tcp" && p.Proto != "udp" && !portRef(p.Proto) {
			return p, fmt.Errorf("%q: protocol %q: want tcp or udp", s, p.Proto)
		}
	}
	// the address: IPv6 in brackets, else everything before the last two
	// colons
	var ip string
	switch {
	case strings.HasPrefix(rest, "["):
		end := strings.Index(rest, "]")
		if end < 0 || len(rest) == end+1 || rest[end+1] != ':' {
			return p, fmt.Errorf("%q: %s (an IPv6 address in brackets)", s, form)
		}
		ip, rest = rest[1:end], rest[end+2:]
		if !portRef(ip) && !isIPv6Literal(ip) {
			return p, fmt.Errorf("%q: %q in brackets is not an IPv6 address", s, ip)
		}
	default:
		if n := strings.Count(rest, ":"); n > 2 && !portRef(rest) {
			return p, fmt.Errorf("%q: %s (an IPv6 address goes in brackets: [fd00::5]:8080:80)", s, form)
		}
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			if j := strings.LastIndex(rest[:i], ":"); j >= 0 {
				ip, rest = rest[:j], rest[j+1:]
				if ip == "" {
					return p, fmt.Errorf("%q: an empty address before the host port: leave it out for every address of the node", s)
				}
				if !portRef(ip) && !isIPv4(ip) {
					return p, fmt.Errorf("%q: %q is not an IPv4 address (an IPv6 address goes in brackets)", s, ip)
				}
			}
		}
	}
	p.IP = ip
	hp, cp, ok := strings.Cut(rest, ":")
	if !ok {
		return p, fmt.Errorf("%q: %s (the host port is needed: a port the engine picks could not be reached through the service's address)", s, form)
	}
	for _, x := range []struct {
		txt, name string
		dst       *int
	}{{hp, "host port", &p.Host}, {cp, "container port", &p.Container}} {
		if portRef(x.txt) {
			continue
		}
		n, err := strconv.Atoi(x.txt)
		if err != nil || strings.HasPrefix(x.txt, "+") {
			return p, fmt.Errorf("%q: %s %q is not a number (%s; no ranges)", s, x.name, x.txt, form)
		}
		if n < 1 || n > 65535 {
			return p, fmt.Errorf("%q: %s %d out of range 1..65535", s, x.name, n)
		}
		*x.dst = n
	}
	if ip != "" && !portRef(ip) && !isIPv4(ip) {
		return p, fmt.Errorf("%q: IPv6 is not built: the engine's default bridge network has IPv4 addresses only, and a connection to %s would find no container behind it", s, ip)
	}
	return p, nil
}

func isIPv6Literal(s string) bool {
	a, ok := parseIP(s)
	return ok && a.Is6() && !strings.Contains(s, ".")
}

// checkPorts validates network and ports of a container section.
func checkPorts(r ResourceConfig) *fieldError {
	if r.Network != "host" && r.Network != "bridge" && !portRef(r.Network) {
		return &fieldError{"network", fmt.Sprintf("%q: want \"host\" (the host's network and its ip resources' addresses) or \"bridge\" (the engine's default bridge, with ports published by NAT); other modes are not built", r.Network)}
	}
	if len(r.Ports) > 0 && r.Network != "bridge" && !portRef(r.Network) {
		return &fieldError{"ports", fmt.Sprintf("published ports need network = \"bridge\" (network is %q: the container listens on the host's ports as they are)", r.Network)}
	}
	for _, s := range r.Ports {
		if _, err := ParsePort(s); err != nil {
			return &fieldError{"ports", err.Error()}
		}
	}
	return nil
}

// portsClash finds a host port published twice by the containers of
// resources (same protocol, addresses that may be the same): the second
// one, as an expansion error of its ports key. Ports that still hold a
// reference are skipped (checked again once expanded).
func portsClash(resources []ResourceConfig) *refErr {
	type seen struct {
		p    PortSpec
		rid  string
		text string
	}
	var all []seen
	for _, r := range resources {
		if r.Type != SectionContainer {
			continue
		}
		for _, s := range r.Ports {
			p, err := ParsePort(s)
			if err != nil || p.Host == 0 || portRef(p.IP) || portRef(p.Proto) {
				continue
			}
			for _, o := range all {
				if o.p.Host == p.Host && o.p.Proto == p.Proto && hostsOverlap(o.p.IP, p.IP) {
					where := "twice in " + r.RID
					if o.rid != r.RID {
						where = "by " + o.rid + " too"
					}
					ctx := refCtx{kind: r.Type, name: r.Name}
					return &refErr{kind: r.Type, name: r.Name, kw: "ports", key: ctx.key("ports"),
						msg: fmt.Sprintf("%q: host port %d/%s is published %s (%q): a node can forward it to one container only", s, p.Host, p.Proto, where, o.text)}
				}
			}
			all = append(all, seen{p, r.RID, s})
		}
	}
	return nil
}
