package affinity

import (
	"sort"

	"haven/config"
)

// Presence is what a service has on a node, as the affinity rules see it.
type Presence uint8

// Presences, weakest first.
const (
	// Absent: no instance there that runs or is about to.
	Absent Presence = iota
	// Claimed: an instance there is in ready or starting (the node's
	// intention to start it) and its avail is not yet up or warn.
	Claimed
	// Running: an instance there has avail up or warn.
	Running
)

// PresenceFunc reports the presence of service svc on node.
type PresenceFunc func(node, svc string) Presence

// ConfigFunc returns the installed config of service svc, nil when unknown.
type ConfigFunc func(svc string) *config.ServiceConfig

// Env is what the rules read about the other services.
type Env struct {
	// Presence is required by every rule.
	Presence PresenceFunc
	// Config gives the other services' configs for the claim tie-break
	// (Yields). Nil: every other config is unknown.
	Config ConfigFunc
}

// running reports whether other runs on node: the affinity (co-location)
// rules need it running, a claim does not satisfy them (hence the startup
// serialization of hard_affinity and soft_affinity).
func (e Env) running(node, other string) bool {
	return e.Presence(node, other) == Running
}

// unknown reports whether other is no service of the cluster: known only
// when the environment gives configs.
func (e Env) unknown(other string) bool {
	return e.Config != nil && e.Config(other) == nil
}

// occupied reports whether other holds node against cfg's anti-affinity
// rules: it runs there, or it claims the node and cfg yields to it.
func (e Env) occupied(cfg *config.ServiceConfig, node, other string) (held bool, p Presence) {
	switch p = e.Presence(node, other); p {
	case Running:
		return true, p
	case Claimed:
		var oc *config.ServiceConfig
		if e.Config != nil {
			oc = e.Config(other)
		}
		return Yields(cfg, other, oc), p
	}
	return false, p
}

// Yields reports whether cfg's service yields to a claim (ready or starting,
// not yet up) of service other, whose config is ocfg (nil when unknown), on
// a node where cfg has an anti-affinity rule (hard or soft) against other:
// when it yields, the claim counts as occupying the node.
//
// When other has no anti-affinity rule against cfg (or its config is
// unknown), cfg always yields: other will not move. When both have one
// (the mutual case), exactly one yields, the same on every node: the one
// that does not take precedence, where precedence goes, in order, to
//
//  1. the service whose rule against the other is soft only (the one with a
//     hard rule yields, so that a hard rule is never broken for a soft one);
//  2. the lower DEFAULT.priority value;
//  3. the lower service name.
func Yields(cfg *config.ServiceConfig, other string, ocfg *config.ServiceConfig) bool {
	if ocfg == nil {
		return true
	}
	theirs := against(ocfg, cfg.Name)
	if theirs == 0 {
		return true
	}
	mine := against(cfg, other)
	if mine != theirs {
		return mine > theirs // the hard holder yields to the soft-only one
	}
	if cfg.Priority != ocfg.Priority {
		return cfg.Priority > ocfg.Priority
	}
	return cfg.Name > other
}

// against is the strength of cfg's anti-affinity rule against svc:
// 0 none, 1 soft only, 2 hard.
func against(cfg *config.ServiceConfig, svc string) int {
	for _, s := range cfg.HardAntiAffinity {
		if s == svc {
			return 2
		}
	}
	for _, s := range cfg.SoftAntiAffinity {
		if s == svc {
			return 1
		}
	}
	return 0
}

// Hard reports whether node satisfies the hard affinity and hard
// anti-affinity of cfg. When it does not, reason says which rule and which
// service ("hard affinity: svc1 not running", "hard anti-affinity: svc1
// running", "hard anti-affinity: svc1 claimed"): the first one CheckHard
// reports.
func Hard(cfg *config.ServiceConfig, node string, env Env) (ok bool, reason string) {
	CheckHard(cfg, node, env, func(r string) bool {
		reason = r
		return false
	})
	return reason == "", reason
}

// CheckHard calls fail with the reason of each hard rule of cfg that node
// breaks (every hard_affinity service not running there, then every
// hard_anti_affinity service occupying it), in that order, until fail
// returns false. Hard is its first reason; placement's verdicts list them
// all.
func CheckHard(cfg *config.ServiceConfig, node string, env Env, fail func(reason string) (more bool)) {
	for _, other := range cfg.HardAffinity {
		if other == cfg.Name {
			continue
		}
		if !env.running(node, other) {
			why := "hard affinity: " + other + " not running"
			if env.unknown(other) {
				why = "hard affinity: " + other + ": no such service (a typo? it waits until one is created)"
			}
			if !fail(why) {
				return
			}
		}
	}
	for _, other := range cfg.HardAntiAffinity {
		if other == cfg.Name {
			continue
		}
		if held, p := env.occupied(cfg, node, other); held {
			why := "hard anti-affinity: " + other + " running"
			if p == Claimed {
				why = "hard anti-affinity: " + other + " claimed"
			}
			if !fail(why) {
				return
			}
		}
	}
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
// soft_anti_affinity service occupies it (runs there, or claims it and cfg
// yields) (or the list is empty). 2 is best.
func SoftScore(cfg *config.ServiceConfig, node string, env Env) int {
	return CheckSoft(cfg, node, env, nil)
}

// CheckSoft is SoftScore; when note is non-nil it is called with each soft
// rule node breaks ("soft affinity: svc1 not running", "soft anti-affinity:
// svc1 running", "soft anti-affinity: svc1 claimed"), every one of them
// rather than the first of each list.
func CheckSoft(cfg *config.ServiceConfig, node string, env Env, note func(reason string)) int {
	score := 2
	lost := false
	for _, other := range cfg.SoftAffinity {
		if other != cfg.Name && !env.running(node, other) {
			if !lost {
				score--
				lost = true
			}
			if note == nil {
				break
			}
			note("soft affinity: " + other + " not running")
		}
	}
	lost = false
	for _, other := range cfg.SoftAntiAffinity {
		if other == cfg.Name {
			continue
		}
		if held, p := env.occupied(cfg, node, other); held {
			if !lost {
				score--
				lost = true
			}
			if note == nil {
				break
			}
			if p == Claimed {
				note("soft anti-affinity: " + other + " claimed")
			} else {
				note("soft anti-affinity: " + other + " running")
			}
		}
	}
	return score
}

// SortSoft reorders nodes in place: the nodes with a higher SoftScore move
// ahead; among equal scores the given order is kept (stable). With no soft
// rule the slice is left untouched.
func SortSoft(cfg *config.ServiceConfig, nodes []string, env Env) {
	if !HasSoft(cfg) || len(nodes) < 2 {
		return
	}
	scores := make(map[string]int, len(nodes))
	for _, n := range nodes {
		scores[n] = SoftScore(cfg, n, env)
	}
	sort.SliceStable(nodes, func(i, j int) bool { return scores[nodes[i]] > scores[nodes[j]] })
}
