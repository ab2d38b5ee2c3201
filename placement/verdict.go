package placement

import (
	"fmt"

	"haven/affinity"
)

// Verdict says why one node of a service stands where it does in a
// Ranking. Rank fills Ranking.Verdicts with Input.Explain, from the same
// filters and sort it uses for the ranking itself.
type Verdict struct {
	Node string `json:"node"`
	// Candidate: the node passes every filter; it may start the service.
	Candidate bool `json:"candidate"`
	// Placeable: the node passes the node filters (availability, node
	// frozen, constraints, hard affinities).
	Placeable bool `json:"placeable"`
	// Reasons are every filter the node fails, node filters first then
	// instance filters, in the order of the package doc; empty for a
	// candidate. A constraint that could not be evaluated reads
	// "constraints error: ..." rather than "constraints violation".
	Reasons []string `json:"reasons,omitempty"`
	// Position is the node's place in the resulting order: the candidates
	// best first, then the other nodes in the policy order (the order of
	// Ranking.Position), from 0.
	Position int `json:"position"`
	// Natural is the node's place in the policy order (Ranking.Natural).
	Natural int `json:"natural"`
	// Key is the policy's sort key, as text: "nodes order #2",
	// "load15 0.30", "spread 0x…", "score 93.3".
	Key string `json:"key"`
	// Index is the node's place in DEFAULT.nodes ("*" expanded); Load15
	// (NoData: the node announced nothing), Spread and Score the other
	// policies' keys, whatever the policy.
	Index  int     `json:"index"`
	Load15 float64 `json:"load15"`
	NoData bool    `json:"no_data,omitempty"`
	Spread uint64  `json:"spread"`
	Score  float64 `json:"score"`
	// Soft is the soft-affinity score of a placeable node (2 best), -1
	// when the service has no soft rule or the node is not placeable;
	// SoftNotes the soft rules it breaks; SoftEffect "ahead" or "behind"
	// when the soft affinities moved it ahead of or behind its policy
	// place among the placeable nodes.
	Soft       int      `json:"soft"`
	SoftNotes  []string `json:"soft_notes,omitempty"`
	SoftEffect string   `json:"soft_effect,omitempty"`
}

// Soft-affinity effects of Verdict.SoftEffect.
const (
	SoftAhead  = "ahead"
	SoftBehind = "behind"
)

// verdicts builds Ranking.Verdicts from Rank's sorted records; pidx are
// the placeable records in their final order.
func verdicts(in Input, r *Ranking, recs []record, pidx []int) []Verdict {
	soft := affinity.HasSoft(in.Config)
	out := make([]Verdict, len(recs))
	for i := range recs {
		rec := &recs[i]
		v := Verdict{
			Node: rec.name, Reasons: rec.x.reasons, Natural: i, Index: rec.index,
			Load15: rec.load, Spread: rec.spread, Score: rec.score, Soft: -1,
		}
		if in.Config.Placement != PolicySpread {
			v.Spread = SpreadKey(in.Service, rec.name) // not computed by the ordering
		}
		if rec.load == noData {
			v.Load15, v.NoData = 0, true
		}
		v.Key = sortKey(in.Config.Placement, &v)
		v.Placeable = rec.nodeReason == ""
		v.Candidate = v.Placeable && rec.instReason == ""
		out[i] = v
	}
	for k, i := range pidx {
		v := &out[i]
		if !soft {
			continue
		}
		v.Soft, v.SoftNotes = recs[i].soft, recs[i].x.softNotes
		switch {
		case k < recs[i].x.placeIdx:
			v.SoftEffect = SoftAhead
		case k > recs[i].x.placeIdx:
			v.SoftEffect = SoftBehind
		}
	}
	for i := range out {
		out[i].Position = r.Position(out[i].Node)
	}
	// order by Ranking.Position: an insertion sort, the lists are short
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Position < out[j-1].Position; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	for i := range out {
		out[i].Position = i
	}
	return out
}

// sortKey is the policy's key of v as text.
func sortKey(policy string, v *Verdict) string {
	switch policy {
	case PolicyLoadAvg:
		if v.NoData {
			return "load15 unknown (no data)"
		}
		return fmt.Sprintf("load15 %.2f", v.Load15)
	case PolicyScore:
		return fmt.Sprintf("score %.1f", v.Score)
	case PolicySpread:
		return fmt.Sprintf("spread %#016x", v.Spread)
	}
	return fmt.Sprintf("nodes order #%d", v.Index+1)
}
