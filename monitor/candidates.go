package monitor

import (
	"haven/dataset"
	"haven/placement"
)

// OtherCandidates returns the placement candidates of service svc other
// than the local node, best first, as Step ranks them in s (up, available,
// not frozen, passing the constraints and the hard affinities, not failed
// or excluded): where the service could go if the local node let it go
// (the restart ladder's monitor_action). Nil when none, or when svc is not
// configured.
func OtherCandidates(s Snapshot, svc string) []string {
	var out []string
	for _, n := range candidates(s, svc) {
		if n != s.Local {
			out = append(out, n)
		}
	}
	return out
}

// LeaderWithout returns the placement leader of service svc (its first
// candidate, ranked as OtherCandidates ranks them) in s with node lost
// down: where the service would go if lost were declared down now. ""
// when none, or when svc is not configured. It is a forecast for work
// that may begin early (the duplicate-address probe of the VIPs of a
// silent node), never a decision: the start waits for the down.
func LeaderWithout(s Snapshot, svc, lost string) string {
	if v, ok := s.Nodes[lost]; ok {
		nodes := make(map[string]placement.NodeView, len(s.Nodes))
		for n, x := range s.Nodes {
			nodes[n] = x
		}
		v.Status = dataset.NodeDown
		nodes[lost] = v
		s.Nodes = nodes
	}
	if c := candidates(s, svc); len(c) > 0 {
		return c[0]
	}
	return ""
}

// candidates returns the placement candidates of service svc, best first,
// as Step ranks them in s (OtherCandidates); nil when svc is not
// configured.
func candidates(s Snapshot, svc string) []string {
	cfg := s.Services[svc]
	if cfg == nil {
		return nil
	}
	nodes := effectiveNodes(s.Nodes)
	cOK, found := s.ConstraintOK[svc]
	if !found && cfg.Constraint != nil {
		cOK = placement.EvalConstraints(cfg, nodes)
	}
	var usage *placement.Usage
	if cfg.HasRequests() {
		usage = placement.NewUsage(nodes, s.Services, func(node, svc string) placement.InstanceState {
			return stateOf(nodes[node].Data.Services[svc])
		})
	}
	r := placement.Rank(placement.Input{Service: svc, Config: cfg, ClusterNodes: s.ClusterNodes,
		Views: nodes, ConstraintOK: cOK, Services: s.Services, Usage: usage})
	return r.Candidates
}

// UpElsewhere returns the first alive node other than the local one where
// service svc is up, "" when none.
func UpElsewhere(s Snapshot, svc string) string {
	for _, n := range s.ClusterNodes {
		if n == s.Local {
			continue
		}
		v, ok := s.Nodes[n]
		if !ok || !v.Alive() {
			continue
		}
		if i, ok := v.Data.Services[svc]; ok && EffectiveAvail(i) == dataset.StatusUp {
			return n
		}
	}
	return ""
}
