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
		return nil
	}
	what := "is not a cluster member"
	if len(unknown) > 1 {
		what = "are not cluster members"
	}
	return keyErr(cfg.File, indexLines(string(cfg.Raw)), SectionDefault, "nodes",
		fmt.Sprintf("%s %s (members: %s): a service runs only on members of [nodes] in cluster.toml (add the node there on every node first)",
			strings.Join(unknown, ", "), what, strings.Join(members, ", ")))
}
