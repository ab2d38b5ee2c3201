package render

import (
	"strings"
	"testing"

	"haven/api"
	"haven/dataset"
	"haven/monitor"
)

// svcmon says "quorum on" only when the votes are there.
func TestSvcmonQuorumHeader(t *testing.T) {
	st := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "c", Compat: true, Quorum: true}}
	if h := svcmonHeader(st, false); strings.Contains(h, "quorum") {
		t.Fatalf("no quorum state, got %q", h)
	}
	st.Cluster.QuorumState = &dataset.QuorumInfo{SplitAction: "stop", Votes: 2, Total: 3,
		Arbitrators: []dataset.ArbitratorState{{Name: "a", Weight: 1, Answered: false}},
		LastVote:    "quorum kept: 2 of 3 votes (live n2,n3; arbitrators answering: none; need more than 1)",
		Gates:       []dataset.GateState{{Node: "n1", Blocked: "waiting for n1's self-stop deadline at 10:00:07.000"}}}
	h := svcmonHeader(st, false)
	for _, want := range []string{"quorum on: 2/3 votes", "arbitrators: a (weight 1) silent", "last vote", "takeover of n1 blocked: waiting for n1's self-stop deadline"} {
		if !strings.Contains(h, want) {
			t.Errorf("header %q lacks %q", h, want)
		}
	}
	st.Cluster.QuorumState = &dataset.QuorumInfo{SplitAction: "stop", Votes: 1, Total: 3, Lost: true}
	if h := svcmonHeader(st, false); !strings.Contains(h, "quorum LOST, split_action stop") || strings.Contains(h, "quorum on") {
		t.Fatalf("lost: got %q", h)
	}
	st.Cluster.QuorumState = &dataset.QuorumInfo{SplitAction: "stop", Votes: 1, Total: 2}
	if h := svcmonHeader(st, false); !strings.Contains(h, "quorum short: 1/2 votes") {
		t.Fatalf("short: got %q", h)
	}
}

// The takeover gate's timing, as the node core computes it, is shown in
// svcmon's header and in svcmgr explain: the deadline, its terms, the
// service whose stop makes the budget, the one-vote and fence variants.
func TestSelfStopShown(t *testing.T) {
	ss := &dataset.SelfStopInfo{DeadlineMs: 18000, StopBudgetMs: 15000, StopBudgetOf: "web",
		Terms: "beat 1s + arbitrator timeout 1s + stop budget 15s + beat 1s", OneVote: true, OneVoteMs: 16000, Fenced: []string{"n3"}}
	want := "takeover gate: a lost node's services start here 18s after it is declared down, then ready_period (its self-stop deadline: " +
		"beat 1s + arbitrator timeout 1s + stop budget 15s (web's stop) + beat 1s); or 16s after the one-vote arbitrator grants this side alone; n3: only after a fence"
	st := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "c", Compat: true, Quorum: true,
		QuorumState: &dataset.QuorumInfo{SplitAction: "stop", Votes: 3, Total: 3, SelfStop: ss}}}
	if h := svcmonHeader(st, false); !strings.Contains(h, " "+want+"\n") {
		t.Errorf("svcmon's header lacks the gate:\n%s\nwant %q", h, want)
	}
	e := &api.Explanation{Service: "web", Local: "n1", Orchestrate: "ha", Policy: "nodes order", SelfStop: ss}
	if out := Explain(e); !strings.Contains(out, "\n"+want+"\n") {
		t.Errorf("explain lacks the gate:\n%s", out)
	}
}

// explain says how long an exclusion lasts by its kind: a resource that
// cannot run here is out while that lasts (back by itself), a
// monitor_action switch until a clear or the service up elsewhere.
func TestExplainExclusionLasts(t *testing.T) {
	for _, c := range []struct{ excluded, want, not string }{
		{dataset.FaultExclusion("ocf#vip", "cannot run here: agent ocf:heartbeat:IPaddr2 is not installed on this node"),
			"excluded: ocf#vip cannot run here: agent ocf:heartbeat:IPaddr2 is not installed on this node (while it lasts: back by itself", "svcmgr clear"},
		{"app#web down, 0 restarts spent: monitor_action switch (next candidate n2)", "(until svcmgr clear, or the service is up on another node)", "back by itself"},
	} {
		e := &api.Explanation{Service: "web", Local: "n1", Orchestrate: "ha", Monitor: &monitor.LocalMonitor{State: dataset.Idle, Excluded: c.excluded}}
		out := Explain(e)
		if !strings.Contains(out, c.want) || strings.Contains(out, c.not) {
			t.Errorf("excluded %q:\n%s\nwant %q, not %q", c.excluded, out, c.want, c.not)
		}
	}
}
