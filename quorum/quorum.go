package quorum

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"haven/internal/planted"
)

// Arbitrator is one [arbitrator.NAME] and the answer of its last probe.
type Arbitrator struct {
	Name   string `json:"name"`
	Weight int    `json:"weight"`
	// Answered is set when the probe sent for this vote got a 2xx (http)
	// or a connection (tcp) within the arbitrator's timeout; for a
	// one-vote arbitrator, when this node's lease runs.
	Answered bool `json:"answered"`
	// OneVote is a Haven arbitrator (haven://): it gives its vote to one
	// partition at a time, as a lease (lease.go).
	OneVote bool `json:"one_vote,omitempty"`
}

// Input is what a node counts when it loses sight of peers.
type Input struct {
	// ClusterNodes is the number of cluster members, this node included.
	ClusterNodes int
	// Live are the members this node hears and that hear it (it declared
	// none of them down, and none of them declared it down), itself
	// included.
	Live []string
	// Arbitrators are every configured arbitrator with its answer.
	Arbitrators []Arbitrator
	// Frozen is set when the node is frozen: it does not run the race.
	Frozen bool
}

// Verdict is the outcome of a vote.
type Verdict struct {
	// Survive: live + votes > total / 2 (a tie loses).
	Survive bool `json:"survive"`
	// Skipped is set when the node is frozen: no race, no split_action.
	Skipped bool `json:"skipped,omitempty"`
	// Votes are the live members plus the weights of the arbitrators that
	// answered; Total the members plus every arbitrator's weight.
	Votes int `json:"votes"`
	Total int `json:"total"`
	// Live are the live members counted; Answered the arbitrators that
	// answered, by name.
	Live     []string `json:"live"`
	Answered []string `json:"answered,omitempty"`
}

// Vote counts: the node survives if and only if the live members plus the
// weights of the arbitrators that answered are more than half of the
// members plus every arbitrator's weight. A tie loses. A frozen node does
// not run the race (Skipped; Survive is what the count says, for the log).
func Vote(in Input) Verdict {
	v := Verdict{Live: sortedCopy(in.Live), Skipped: in.Frozen}
	v.Total = in.ClusterNodes
	v.Votes = len(in.Live)
	for _, a := range in.Arbitrators {
		w := max(a.Weight, 0)
		v.Total += w
		if a.Answered {
			v.Votes += w
			v.Answered = append(v.Answered, a.Name)
		}
	}
	sort.Strings(v.Answered)
	v.Survive = 2*v.Votes > v.Total || planted.On(planted.TieWins) && 2*v.Votes == v.Total
	return v
}

// Decided reports whether the vote's outcome is known before the
// arbitrators answer: the live members alone win, or lose even with every
// arbitrator's weight.
func Decided(clusterNodes, live int, arbs []Arbitrator) (decided, survive bool) {
	total, all := clusterNodes, 0
	for _, a := range arbs {
		total += max(a.Weight, 0)
		all += max(a.Weight, 0)
	}
	switch {
	case 2*live > total:
		return true, true
	case 2*(live+all) <= total:
		return true, false
	}
	return false, false
}

// CertainlyLost reports whether a peer outside a group of agree members
// (this node and the live members that all declared the peer down) can
// not have won its own vote: even counting every other member and every
// arbitrator's weight, its side has no more than half of the votes. When
// false (a 2-node cluster with an arbitrator both sides may reach, or a
// 2|2 split with an arbitrator), the peer may have survived and kept its
// services running: only fencing proves it stopped.
func CertainlyLost(clusterNodes, agree int, arbs []Arbitrator) bool {
	total, all := clusterNodes, 0
	for _, a := range arbs {
		total += max(a.Weight, 0)
		all += max(a.Weight, 0)
	}
	return 2*(clusterNodes-agree+all) <= total
}

// CertainlyLostExcept is CertainlyLost when the arbitrators that ours
// names cannot count for the peer: a one-vote arbitrator that granted this
// side its vote exclusively after the peer was lost (every lease of the
// peer's side had ended at the arbitrator then).
func CertainlyLostExcept(clusterNodes, agree int, arbs []Arbitrator, ours func(name string) bool) bool {
	total, theirs := clusterNodes, 0
	for _, a := range arbs {
		total += max(a.Weight, 0)
		if !ours(a.Name) {
			theirs += max(a.Weight, 0)
		}
	}
	return 2*(clusterNodes-agree+theirs) <= total
}

// Timing is what the self-stop deadline is made of.
type Timing struct {
	// Beat is the heartbeat's beat period: a lost peer detects the loss
	// at most one beat after its peers declared it down.
	Beat time.Duration
	// ArbitratorTimeout is the longest arbitrator timeout: the vote waits
	// for the answers at most that long.
	ArbitratorTimeout time.Duration
	// StopBudget is the longest stop of an instance: the largest sum of
	// the resources' timeouts of a service (they stop one after the
	// other, each bounded by its timeout).
	StopBudget time.Duration
}

// EscalateAfter is how long after the start of its vote a node that lost
// the quorum waits for its split_action stop to end before it crashes
// (the way SBD's watchdog resets a node that did not stop in time).
func (t Timing) EscalateAfter() time.Duration { return t.ArbitratorTimeout + t.StopBudget }

// Deadline is how long after declaring a peer down the survivors wait
// before they count its self-stop as done: the peer's own detection (one
// beat later at most), its vote, its stop (or its crash at EscalateAfter),
// and one more beat for the crash to take the node down.
func (t Timing) Deadline() time.Duration {
	return t.Beat + t.EscalateAfter() + t.Beat
}

// Terms says what Deadline is made of, term by term, for the people
// who read it ("beat 1s + arbitrator timeout 1s + stop budget 10s + beat
// 1s"): written next to Deadline, so that a term added there is told.
func (t Timing) Terms() string {
	return fmt.Sprintf("beat %s + arbitrator timeout %s + stop budget %s + beat %s", t.Beat, t.ArbitratorTimeout, t.StopBudget, t.Beat)
}

// String says the vote and its inputs in one line.
func (v Verdict) String() string {
	word := "kept"
	if !v.Survive {
		word = "lost"
	}
	arb := "none"
	if len(v.Answered) > 0 {
		arb = strings.Join(v.Answered, ",")
	}
	s := fmt.Sprintf("quorum %s: %d of %d votes (live %s; arbitrators answering: %s; need more than %d)",
		word, v.Votes, v.Total, strings.Join(v.Live, ","), arb, v.Total/2)
	if v.Skipped {
		s += "; node frozen: it does not run the race"
	}
	return s
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
