package node

import (
	"fmt"
	"strings"

	"haven/quorum"
)

// QuorumVote: this node lost sight of members (Lost) and voted; said once
// per vote with its inputs.
type QuorumVote struct {
	Verdict     quorum.Verdict `json:"verdict"`
	Lost        []string       `json:"lost"`
	SplitAction string         `json:"split_action"`
	// Again says why the vote was taken again without a new loss (a
	// lease that ended, the votes of a side that lost come back).
	Again string `json:"again,omitempty"`
}

func (QuorumVote) Kind() string    { return "quorum_vote" }
func (QuorumVote) Service() string { return "" }
func (e QuorumVote) Level() Level {
	if e.Verdict.Survive {
		return Warn
	}
	return Error
}
func (e QuorumVote) String() string {
	s := "lost contact with " + strings.Join(e.Lost, ",") + ": " + e.Verdict.String()
	if len(e.Lost) == 0 {
		why := e.Again
		if why == "" {
			why = "a one-vote arbitrator's lease ended unrenewed"
		}
		s = "vote again, " + why + ": " + e.Verdict.String()
	}
	switch {
	case e.Verdict.Skipped:
	case !e.Verdict.Survive && e.SplitAction == SplitDisabled:
		s += "; split_action disabled: nothing done"
	case !e.Verdict.Survive:
		s += "; split_action " + e.SplitAction
	}
	return s
}

// QuorumStall: this daemon did not run for longer than hb.timeout (paused,
// a VM frozen): it votes as if alone.
type QuorumStall struct {
	Gap string `json:"gap"`
}

func (QuorumStall) Kind() string    { return "quorum_stall" }
func (QuorumStall) Service() string { return "" }
func (QuorumStall) Level() Level    { return Error }
func (e QuorumStall) String() string {
	return "daemon stalled for " + e.Gap + " (more than hb.timeout): the peers may have declared this node down; voting as if alone"
}

// ArbitratorStatus: an arbitrator's answer changed.
type ArbitratorStatus struct {
	Name   string `json:"arbitrator"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Refused: a one-vote arbitrator answered but gave its vote to
	// another partition (or none yet).
	Refused bool `json:"refused,omitempty"`
}

func (ArbitratorStatus) Kind() string    { return "arbitrator" }
func (ArbitratorStatus) Service() string { return "" }
func (e ArbitratorStatus) Level() Level {
	if e.OK {
		return Info
	}
	return Warn
}
func (e ArbitratorStatus) String() string {
	w := "answers"
	switch {
	case e.Refused:
		w = "refuses its vote"
	case !e.OK:
		w = "does not answer"
	}
	return fmt.Sprintf("arbitrator %s %s (%s)", e.Name, w, e.Detail)
}

// TakeoverGate: the takeover gate of a lost peer changed: blocked (Reason)
// or cleared.
type TakeoverGate struct {
	Node    string `json:"node"`
	Cleared bool   `json:"cleared"`
	Reason  string `json:"reason"`
	// Closed: the peer is heard again, no takeover of its services.
	Closed bool `json:"closed,omitempty"`
}

func (TakeoverGate) Kind() string    { return "takeover_gate" }
func (TakeoverGate) Service() string { return "" }
func (TakeoverGate) Level() Level    { return Warn }
func (e TakeoverGate) String() string {
	if e.Closed {
		return e.Node + " heard again: no takeover of its services"
	}
	if e.Cleared {
		return "takeover of " + e.Node + "'s services allowed: " + e.Reason
	}
	return "takeover of " + e.Node + "'s services blocked: " + e.Reason
}

// Fenced: the fence of a lost peer is done: its fence command succeeded,
// or How says how (a fence through the disk).
type Fenced struct {
	Node string `json:"node"`
	How  string `json:"how,omitempty"`
}

func (Fenced) Kind() string    { return "fenced" }
func (Fenced) Service() string { return "" }
func (Fenced) Level() Level    { return Warn }
func (e Fenced) String() string {
	if e.How != "" {
		return "fenced " + e.Node + ": " + e.How
	}
	return "fenced " + e.Node + ": its fence command succeeded"
}

// FenceFailed: the fence command of a lost peer failed; the takeover stays
// blocked and the command is run again after Retry.
type FenceFailed struct {
	Node    string `json:"node"`
	Err     string `json:"error"`
	Attempt int    `json:"attempt"`
	Retry   string `json:"retry"`
}

func (FenceFailed) Kind() string    { return "fence_failed" }
func (FenceFailed) Service() string { return "" }
func (FenceFailed) Level() Level    { return Error }
func (e FenceFailed) String() string {
	return fmt.Sprintf("fence of %s failed (attempt %d): %s; takeover blocked, next try in %s", e.Node, e.Attempt, e.Err, e.Retry)
}

// splitNodeAction orders a crash or reboot of the node (the node actions
// shared with monitor_action: node.crash_command, node.reboot_command).
func (c *Core) splitNodeAction(kind, reason string) {
	c.nodeAction(kind, reason)
}
