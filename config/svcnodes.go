package config

import (
	"fmt"
	"strings"
)

// CheckServiceNodes refuses a service config whose nodes name a node that
// is not a cluster member (members: [nodes] of cluster.toml, or the local
// node alone without it): every stop or freeze --wait of the service
// would wait for that node forever. The names prev already held (the
// config this one replaces) are let through: a node removed from the
// cluster does not make the edits of its services impossible, nor the
// configs that still name it invalid. The error names the file, the line
// and the key DEFAULT.nodes, and the members.
func CheckServiceNodes(cfg *ServiceConfig, prev []string, members []string) error {
	known := map[string]bool{"*": true}
	for _, m := range members {
		known[m] = true
	}
	for _, n := range prev {
		known[n] = true
	}
	var unknown []string
	for _, n := range cfg.Nodes {
		if !known[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return checkFlexNodes(cfg, members)
	}
	what := "is not a cluster member"
	if len(unknown) > 1 {
		what = "are not cluster members"
	}
	return keyErr(cfg.File, indexLines(string(cfg.Raw)), SectionDefault, "nodes",
		fmt.Sprintf("%s %s (members: %s): a service runs only on members of [nodes] in cluster.toml (add the node there on every node first)",
			strings.Join(unknown, ", "), what, strings.Join(members, ", ")))
}

// checkFlexNodes refuses a flex service whose flex_max (flex_min in the
// global mode) is more than its nodes once "*" is the members: at most one
// instance per node.
func checkFlexNodes(cfg *ServiceConfig, members []string) error {
	if !cfg.IsFlex() {
		return nil
	}
	n := 0
	seen := map[string]bool{}
	for _, x := range cfg.Nodes {
		switch {
		case x == "*":
			for _, m := range members {
				seen[m] = true
			}
		case strings.Contains(x, "{"):
			return nil // per node, not known here
		default:
			seen[x] = true
		}
	}
	n = len(seen)
	if cfg.FlexGlobal() {
		if n == 0 || cfg.FlexMin <= n {
			return nil
		}
		return keyErr(cfg.File, indexLines(string(cfg.Raw)), SectionDefault, "flex_min",
			fmt.Sprintf("%d instances, but the service has %d nodes (%s): at most one instance per node", cfg.FlexMin, n, strings.Join(cfg.Nodes, ", ")))
	}
	if n == 0 || cfg.FlexMax <= n {
		return nil
	}
	return keyErr(cfg.File, indexLines(string(cfg.Raw)), SectionDefault, "flex_max",
		fmt.Sprintf("%d instances, but the service has %d nodes (%s): at most one instance per node", cfg.FlexMax, n, strings.Join(cfg.Nodes, ", ")))
}
