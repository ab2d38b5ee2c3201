package config

import (
	"fmt"
	"slices"
	"strings"
)

// CheckServiceRefs refuses a service config whose references to other
// services the cluster's configs prove wrong: a hard affinity or a parent
// naming no service of the cluster (the service would wait for it
// forever: no node is ever a candidate, or its parents are never up), or
// parents that lead back to the service itself (each waits for the
// other: none ever starts). others are the parents of every other service
// of the cluster, by name (a service without parents is there with none).
// prev is the config this one replaces (nil for a create): a name it
// already held is let through (a service deleted since does not make the
// edits of this one impossible). The error names the file, the line and
// the key.
//
// With force (svcmgr create --force, set --force: configs installed in
// any order by a configuration-management tool), a name of no service is
// let through and returned in warnings instead, one per key, with the
// same file, line and key: the service waits until that service exists.
// A cycle of parents is refused all the same: no later create ends it.
func CheckServiceRefs(cfg, prev *ServiceConfig, others map[string][]string, force bool) (warnings []*Error, err error) {
	x := indexLines(string(cfg.Raw))
	for _, l := range []struct {
		key        string
		list       []string
		held       []string
		what, wait string
	}{
		{"hard_affinity", cfg.HardAffinity, prevList(prev, func(p *ServiceConfig) []string { return p.HardAffinity }),
			"no node would ever be a candidate: it runs only next to that service",
			"no node is a candidate until it runs (no such service)"},
		{"parents", cfg.Parents, prevList(prev, func(p *ServiceConfig) []string { return p.Parents }),
			"it would wait for that parent forever",
			"the service waits for that parent until it is created and up"},
	} {
		var missing []string
		for _, e := range l.list {
			svc, _, _ := strings.Cut(e, "@")
			if _, ok := others[svc]; !ok && svc != cfg.Name && !slices.Contains(l.held, e) && !slices.Contains(missing, svc) {
				missing = append(missing, svc)
			}
		}
		switch {
		case len(missing) == 0:
		case force:
			warnings = append(warnings, keyErr(cfg.File, x, SectionDefault, l.key, fmt.Sprintf("no service %s in the cluster yet: installed anyway (--force): %s",
				strings.Join(missing, ", "), l.wait)))
		default:
			return nil, keyErr(cfg.File, x, SectionDefault, l.key, fmt.Sprintf("no service %s in the cluster: %s (create it first, install it anyway with --force, or fix the name)",
				strings.Join(missing, ", "), l.what))
		}
	}
	if cycle := parentCycle(cfg, others); cycle != nil {
		return nil, keyErr(cfg.File, x, SectionDefault, "parents", fmt.Sprintf("a cycle of parents: %s: each waits for the next to be up, and none would ever start",
			strings.Join(cycle, " -> ")))
	}
	return warnings, nil
}

func prevList(prev *ServiceConfig, f func(*ServiceConfig) []string) []string {
	if prev == nil {
		return nil
	}
	return f(prev)
}

// parentCycle returns a path of parents from cfg back to it (cfg first
// and last), nil when none: cfg's own parents, then the others'.
func parentCycle(cfg *ServiceConfig, others map[string][]string) []string {
	parentsOf := func(svc string) []string {
		if svc == cfg.Name {
			return cfg.Parents
		}
		return others[svc]
	}
	seen := map[string]bool{}
	var walk func(svc string, path []string) []string
	walk = func(svc string, path []string) []string {
		for _, e := range parentsOf(svc) {
			p, _, _ := strings.Cut(e, "@")
			if p == cfg.Name {
				return append(path, p)
			}
			if seen[p] {
				continue
			}
			seen[p] = true
			if c := walk(p, append(path, p)); c != nil {
				return c
			}
		}
		return nil
	}
	return walk(cfg.Name, []string{cfg.Name})
}
