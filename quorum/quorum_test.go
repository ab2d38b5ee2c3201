package quorum

import (
	"fmt"
	"testing"
	"time"
)

func arbs(answered ...bool) []Arbitrator {
	out := make([]Arbitrator, len(answered))
	for i, a := range answered {
		out[i] = Arbitrator{Name: fmt.Sprintf("a%d", i+1), Weight: 1, Answered: a}
	}
	return out
}

func live(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

// TestVote is the vote table, in the manner of OpenSVC's split tests:
// cluster sizes 2 to 5, zero to two arbitrators answering or not, frozen
// nodes. Survive iff live + votes > (nodes + weights) / 2; a tie loses.
func TestVote(t *testing.T) {
	cases := []struct {
		name          string
		nodes, live   int
		arbs          []Arbitrator
		frozen        bool
		survive, skip bool
		votes, total  int
	}{
		{"2 nodes, both live", 2, 2, nil, false, true, false, 2, 2},
		{"2 nodes, alone, no arbitrator: tie loses", 2, 1, nil, false, false, false, 1, 2},
		{"2 nodes, alone, arbitrator answers", 2, 1, arbs(true), false, true, false, 2, 3},
		{"2 nodes, alone, arbitrator silent", 2, 1, arbs(false), false, false, false, 1, 3},
		{"2 nodes, alone, 2 arbitrators answer", 2, 1, arbs(true, true), false, true, false, 3, 4},
		{"2 nodes, alone, 1 of 2 arbitrators: tie loses", 2, 1, arbs(true, false), false, false, false, 2, 4},
		{"2 nodes, alone, frozen: no race", 2, 1, nil, true, false, true, 1, 2},
		{"3 nodes, all live", 3, 3, nil, false, true, false, 3, 3},
		{"3 nodes, majority side", 3, 2, nil, false, true, false, 2, 3},
		{"3 nodes, minority side", 3, 1, nil, false, false, false, 1, 3},
		{"3 nodes, majority, arbitrator silent: tie loses", 3, 2, arbs(false), false, false, false, 2, 4},
		{"3 nodes, majority, arbitrator answers", 3, 2, arbs(true), false, true, false, 3, 4},
		{"3 nodes, minority, arbitrator answers: tie loses", 3, 1, arbs(true), false, false, false, 2, 4},
		{"3 nodes, minority, 2 arbitrators answer: the arbitrators carry it", 3, 1, arbs(true, true), false, true, false, 3, 5},
		{"3 nodes, minority, frozen", 3, 1, nil, true, false, true, 1, 3},
		{"4 nodes, 2|2, no arbitrator: tie loses", 4, 2, nil, false, false, false, 2, 4},
		{"4 nodes, 2|2, arbitrator answers", 4, 2, arbs(true), false, true, false, 3, 5},
		{"4 nodes, 2|2, arbitrator silent", 4, 2, arbs(false), false, false, false, 2, 5},
		{"4 nodes, 3|1", 4, 3, nil, false, true, false, 3, 4},
		{"4 nodes, 1|3, arbitrator answers", 4, 1, arbs(true), false, false, false, 2, 5},
		{"4 nodes, 2|2, 2 arbitrators, 1 answers: tie loses", 4, 2, arbs(true, false), false, false, false, 3, 6},
		{"5 nodes, 3|2", 5, 3, nil, false, true, false, 3, 5},
		{"5 nodes, 2|3", 5, 2, nil, false, false, false, 2, 5},
		{"5 nodes, 2|3, arbitrator answers: tie loses", 5, 2, arbs(true), false, false, false, 3, 6},
		{"5 nodes, 2|3, 2 arbitrators answer: the arbitrators carry it", 5, 2, arbs(true, true), false, true, false, 4, 7},
		{"5 nodes, 3|2, frozen majority", 5, 3, nil, true, true, true, 3, 5},
		{"5 nodes, alone", 5, 1, arbs(true, true), false, false, false, 3, 7},
	}
	for _, c := range cases {
		v := Vote(Input{ClusterNodes: c.nodes, Live: live(c.live), Arbitrators: c.arbs, Frozen: c.frozen})
		if v.Survive != c.survive || v.Skipped != c.skip || v.Votes != c.votes || v.Total != c.total {
			t.Errorf("%s: got survive=%v skipped=%v %d/%d, want survive=%v skipped=%v %d/%d (%s)",
				c.name, v.Survive, v.Skipped, v.Votes, v.Total, c.survive, c.skip, c.votes, c.total, v)
		}
		// Decided never contradicts the full count
		if d, s := Decided(c.nodes, c.live, c.arbs); d && s != v.Survive {
			t.Errorf("%s: Decided says survive=%v before the arbitrators, the vote says %v", c.name, s, v.Survive)
		}
	}
}

func TestWeightsAndNames(t *testing.T) {
	v := Vote(Input{ClusterNodes: 2, Live: []string{"n2"}, Arbitrators: []Arbitrator{{Name: "b", Weight: 2, Answered: true}, {Name: "a", Weight: 1}}})
	if !v.Survive || v.Votes != 3 || v.Total != 5 || len(v.Answered) != 1 || v.Answered[0] != "b" {
		t.Fatalf("weighted vote: %+v", v)
	}
	want := "quorum kept: 3 of 5 votes (live n2; arbitrators answering: b; need more than 2)"
	if v.String() != want {
		t.Fatalf("got %q, want %q", v.String(), want)
	}
}

func TestDecided(t *testing.T) {
	if d, s := Decided(3, 2, nil); !d || !s {
		t.Error("3 nodes, 2 live: decided survive without arbitrators")
	}
	if d, _ := Decided(2, 1, arbs(false)); d {
		t.Error("2 nodes + arbitrator, alone: the arbitrator decides")
	}
	if d, s := Decided(5, 1, arbs(false)); !d || s {
		t.Error("5 nodes + 1 arbitrator, alone: lost whatever the arbitrator says")
	}
}

// TestCertainlyLost: a peer declared down by a group may have won its own
// vote when the rest of the members and every arbitrator make a majority.
func TestCertainlyLost(t *testing.T) {
	cases := []struct {
		name         string
		nodes, agree int
		arbs         []Arbitrator
		want         bool
	}{
		{"3 nodes, 2 agree", 3, 2, nil, true},
		{"3 nodes, alone", 3, 1, nil, false},
		{"2 nodes, no arbitrator", 2, 1, nil, true},
		{"2 nodes + arbitrator: the peer may reach it too", 2, 1, arbs(true), false},
		{"3 nodes + arbitrator, 2 agree", 3, 2, arbs(true), true},
		{"4 nodes + arbitrator, 2|2", 4, 2, arbs(true), false},
		{"4 nodes, 3 agree", 4, 3, nil, true},
		{"5 nodes + 2 arbitrators, 3 agree", 5, 3, arbs(true, true), false},
		{"5 nodes + 1 arbitrator, 3 agree", 5, 3, arbs(true), true},
	}
	for _, c := range cases {
		if got := CertainlyLost(c.nodes, c.agree, c.arbs); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDeadline(t *testing.T) {
	tm := Timing{Beat: time.Second, ArbitratorTimeout: 2 * time.Second, StopBudget: 3 * time.Second}
	if tm.EscalateAfter() != 5*time.Second || tm.Deadline() != 7*time.Second {
		t.Fatalf("escalate %s deadline %s, want 5s and 7s", tm.EscalateAfter(), tm.Deadline())
	}
}
