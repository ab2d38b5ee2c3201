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
	cfg := s.Services[svc]
	if cfg == nil {
		return nil
	}
	nodes := effectiveNodes(s.Nodes)
	cOK, found := s.ConstraintOK[svc]
	if !found && cfg.Constraint != nil {
		cOK = placement.EvalConstraints(cfg, nodes)
	}
	r := placement.Rank(placement.Input{Service: svc, Config: cfg, ClusterNodes: s.ClusterNodes,
		Views: nodes, ConstraintOK: cOK, Services: s.Services})
	var out []string
	for _, n := range r.Candidates {
		if n != s.Local {
			out = append(out, n)
		}
	}
	return out
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
