package chaos

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Guide tells a person how to use a running cluster of the bed by hand
// (`chaos bed`): which root and namespace each node has, and the faults
// the suite makes, as commands.
func (c *Cluster) Guide() string {
	var b strings.Builder
	n1, n2 := c.Names[0], c.Names[1]
	bin := c.cfg.Bin
	fmt.Fprintf(&b, "A %d-node Haven cluster in network namespaces (hb.timeout %s, interval %s, ready_period %s), quorum %v.\n", len(c.Names), hbTimeout, hbInterval, readyPeriod, c.quorum)
	fmt.Fprintf(&b, "Work directory: %s (roots, the journal of starts and stops)\n\n", c.Work)
	fmt.Fprintf(&b, "%-6s %-16s %-22s %s\n", "node", "address", "namespace", "root")
	for _, n := range c.Names {
		fmt.Fprintf(&b, "%-6s %-16s %-22s %s\n", n, c.Bed.Addr[n], c.Bed.NS[n], c.Nodes[n].Root)
	}
	fmt.Fprintf(&b, "%-6s %-16s %-22s %s\n\n", "arb", c.Bed.Addr["arb"], c.Bed.NS["arb"], "(an HTTP arbitrator, one vote)")
	var svcs []string
	for _, s := range c.Services {
		svcs = append(svcs, fmt.Sprintf("%s (nodes %s)", s.Name, strings.Join(s.Nodes, ",")))
	}
	if len(svcs) > 0 {
		fmt.Fprintf(&b, "Failover services: %s; their app is a sleep, journaled in %s.\n", strings.Join(svcs, ", "), c.Journal)
	}
	first := "svc1"
	for _, s := range c.example {
		fmt.Fprintf(&b, "Example service %s: %s", s.Name, strings.ReplaceAll(strings.TrimSpace(s.Defaults), "\n", "; "))
		if s.Body == "" {
			fmt.Fprintf(&b, " (its app is a sleep, journaled in %s)\n", c.Journal)
		} else if strings.Contains(s.Body, ExampleVIP) {
			fmt.Fprintf(&b, " (its config: %s.toml in the work directory)\n", s.Name)
			fmt.Fprintf(&b, "  ip netns exec %s busybox wget -qO- http://%s:8080/     ask it at its virtual IP, from the arbitrator's host\n", c.Bed.NS["arb"], ExampleVIP)
		} else {
			fmt.Fprintf(&b, " (its config: %s.toml in the work directory)\n", s.Name)
		}
		if len(c.Services) == 0 && first == "svc1" {
			first = s.Name // the first is a failover service
		}
	}
	for _, s := range c.Flex {
		fmt.Fprintf(&b, "Flex service: %s, flex_target = flex_max = %d on %s, the same app.\n", s.Name, s.Flex, strings.Join(s.Nodes, ","))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Try, in another shell (as root):\n")
	fmt.Fprintf(&b, "  %s --root %s --watch                         the cluster as %s sees it\n", filepath.Join(bin, "svcmon"), c.Nodes[n1].Root, n1)
	fmt.Fprintf(&b, "  %s --root %s -s %s switch --to %s --wait     move a service\n", filepath.Join(bin, "svcmgr"), c.Nodes[n1].Root, first, n2)
	fmt.Fprintf(&b, "  kill -9 $(cat %s)                 crash %s's daemon (its services keep running)\n", filepath.Join(c.Nodes[n1].Root, "run", "daemon.pid"), n1)
	if c.cfg.Podman {
		// ip netns exec would hide the cgroup mounts runc needs
		fmt.Fprintf(&b, "  nsenter --net=/run/netns/%s %s --root %s daemon start   start it again (in its network namespace)\n", c.Bed.NS[n1], filepath.Join(bin, "nodemgr"), c.Nodes[n1].Root)
	} else {
		fmt.Fprintf(&b, "  ip netns exec %s %s --root %s daemon start   start it again (in its namespace)\n", c.Bed.NS[n1], filepath.Join(bin, "nodemgr"), c.Nodes[n1].Root)
	}
	fmt.Fprintf(&b, "  ip netns exec %s iptables -I INPUT -i %s -j DROP   cut %s off (-D instead of -I heals)\n", c.Bed.NS[n1], Dev, n1)
	fmt.Fprintf(&b, "  ip -n %s link set %s down                   pull %s's cable (up again: link set %s up)\n", c.Bed.NS[n1], Dev, n1, Dev)
	fmt.Fprintf(&b, "  %s check-journal %s       did a service ever run twice (a flex one above flex_max)?\n", filepath.Join(bin, "chaos"), c.Journal)
	for _, n := range c.Names {
		if p := c.stores[n]; p != nil {
			fmt.Fprintf(&b, "  env %s podman ps     %s's containers\n", strings.Join(p.Env, " "), n)
		}
	}
	fmt.Fprintf(&b, "\nCtrl-C stops the daemons and the services and removes the namespaces and the work directory.\n")
	return b.String()
}
