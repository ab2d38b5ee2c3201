package affinity

import (
	"sort"

	"haven/config"
)

// RunningFunc reports whether service svc has a running instance on node.
type RunningFunc func(node, svc string) bool

// Hard reports whether node satisfies the hard affinity and hard
// anti-affinity of cfg. When it does not, reason says which rule and which
// service ("hard affinity: svc1 not running", "hard anti-affinity: svc1
// running").
func Hard(cfg *config.ServiceConfig, node string, running RunningFunc) (ok bool, reason string) {
	for _, other := range cfg.HardAffinity {
		if other == cfg.Name {
			continue
		}
		if !running(node, other) {
			return false, "hard affinity: " + other + " not running"
		}
	}
	for _, other := range cfg.HardAntiAffinity {
		if other == cfg.Name {
			continue
		}
		if running(node, other) {
			return false, "hard anti-affinity: " + other + " running"
		}
	}
	return true, ""
}

// HasHard reports whether cfg declares any hard affinity rule.
func HasHard(cfg *config.ServiceConfig) bool {
	return len(cfg.HardAffinity) > 0 || len(cfg.HardAntiAffinity) > 0
}

// HasSoft reports whether cfg declares any soft affinity rule.
func HasSoft(cfg *config.ServiceConfig) bool {
	return len(cfg.SoftAffinity) > 0 || len(cfg.SoftAntiAffinity) > 0
}

// SoftScore is the number of soft rules node satisfies: one point when every
// soft_affinity service runs there (or the list is empty), one point when no
// soft_anti_affinity service runs there (or the list is empty). 2 is best.
func SoftScore(cfg *config.ServiceConfig, node string, running RunningFunc) int {
	score := 2
	for _, other := range cfg.SoftAffinity {
		if other != cfg.Name && !running(node, other) {
			score--
			break
		}
	}
	for _, other := range cfg.SoftAntiAffinity {
		if other != cfg.Name && running(node, other) {
			score--
			break
		}
	}
	return score
}

// SortSoft reorders nodes in place: the nodes with a higher SoftScore move
// ahead; among equal scores the given order is kept (stable). With no soft
// rule the slice is left untouched.
func SortSoft(cfg *config.ServiceConfig, nodes []string, running RunningFunc) {
	if !HasSoft(cfg) || len(nodes) < 2 {
		return
	}
	scores := make(map[string]int, len(nodes))
	for _, n := range nodes {
		scores[n] = SoftScore(cfg, n, running)
	}
	sort.SliceStable(nodes, func(i, j int) bool { return scores[nodes[i]] > scores[nodes[j]] })
}
