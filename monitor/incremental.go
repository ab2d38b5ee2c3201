package monitor

import (
	"sort"
	"strings"

	"haven/config"
)

// Relations are the links between services through which the decision of
// one reads another: the affinities (hard and soft, affinity and
// anti-affinity: a service decided earlier in the same Step counts with
// its next state), the parents and children (their avail) and the
// requests (every service with requests reads the capacity the others hold
// on the nodes: they are all linked). Build them
// once per set of configs with NewRelations.
type Relations struct {
	adj map[string][]string
}

// NewRelations indexes the links of services, both ways.
func NewRelations(services map[string]*config.ServiceConfig) *Relations {
	r := &Relations{adj: map[string][]string{}}
	link := func(a, b string) {
		if a == b {
			return
		}
		r.adj[a] = append(r.adj[a], b)
		r.adj[b] = append(r.adj[b], a)
	}
	// the services with requests read each other's instances (the
	// capacity they hold on the nodes): one component
	first := ""
	for name, cfg := range services {
		if cfg.HasRequests() {
			if first == "" || name < first {
				first = name
			}
		}
	}
	for name, cfg := range services {
		if cfg == nil {
			continue
		}
		if first != "" && cfg.HasRequests() {
			link(first, name)
		}
		for _, list := range [][]string{cfg.HardAffinity, cfg.HardAntiAffinity, cfg.SoftAffinity, cfg.SoftAntiAffinity} {
			for _, o := range list {
				link(name, o)
			}
		}
		for _, list := range [][]string{cfg.Parents, cfg.Children} {
			for _, o := range list {
				svc, _, _ := strings.Cut(o, "@")
				link(name, svc)
			}
		}
	}
	return r
}

// Closure returns the services of changed and every service linked to one
// of them, directly or through others (their connected component), sorted,
// without duplicates: the set StepOnly decides exactly as Step does.
func (r *Relations) Closure(changed []string) []string {
	seen := make(map[string]bool, len(changed))
	queue := make([]string, 0, len(changed))
	for _, s := range changed {
		if !seen[s] {
			seen[s] = true
			queue = append(queue, s)
		}
	}
	for i := 0; i < len(queue); i++ {
		for _, o := range r.adj[queue[i]] {
			if !seen[o] {
				seen[o] = true
				queue = append(queue, o)
			}
		}
	}
	sort.Strings(queue)
	return queue
}

// StepOnly is Step for the services of only, whose decisions it returns
// (those with a local instance, sorted by name). When only is closed under
// Relations (Relations.Closure), each decision is exactly the one Step(s)
// makes for that service: a service reads no other service outside its
// component. And when the previous pass decided on a snapshot that
// differs from s only by the instances of the services of changed, the
// decisions Step(s) would make for the services outside
// Closure(changed) are the ones that pass made: so a change of a few
// services need not decide every service again (the node core still runs
// a full pass on any other change, and periodically).
func StepOnly(s Snapshot, only []string) []Decision {
	if only == nil {
		only = []string{}
	}
	out, _ := step(s, only, "")
	return out
}
