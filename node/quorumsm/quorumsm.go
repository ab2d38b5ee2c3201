// Package quorumsm is the state of the quorum sub-machine of the core:
// the vote (Live members, the arbitrators' answers, a vote Pending), the
// takeover gate of each Lost peer, what a node that lost a vote does
// (SplitStop), its standing with the one-vote arbitrators (OneVoteBook),
// and the Split decision of a node that Lost its fencing disk
// (DiskSplit). The rules that read and change it are package node's
// (node/quorum.go, node/onevote.go, node/disksplit.go, node/fencerace.go).
package quorumsm

import (
	"time"

	"haven/quorum"
)

// ArbResult is an arbitrator's last answer.
type ArbResult struct {
	Ok     bool
	Detail string
	Sent   time.Time
}

// Gate is the takeover gate of a lost peer: its services are not started
// here until it is fenced or its self-stop deadline has passed.
type Gate struct {
	Since, Deadline time.Time
	Fencing         bool // a fence run is in flight
	Fenced          bool
	FenceErr        string
	Attempts        int
	NextTry         time.Time
	Blocked         string // the reason said last ("" cleared)
	Said            bool
	// RaceChecked: the fence delay of a possible double survivor was
	// decided (RaceDelay: this node waits before it fences).
	RaceChecked, RaceDelay bool
	RaceWhy                string
	// OneVoteAt is when a one-vote arbitrator first granted this side
	// alone after the peer was lost (zero: not yet): the peer's lease had
	// ended by then, its stop budget runs from there.
	OneVoteAt time.Time
	OneVoteBy string
	// Restart: the gate was held by a reason that may have kept the peer
	// in the race (this node lost the quorum, or a live member still
	// heard the peer): once that reason is gone, the gate starts again
	// from then (node/quorum.go: restartGate).
	Restart bool
	// LostAt is when the peer was lost (Since, until a Restart); From
	// says why the gate started again at Since ("": it did not).
	LostAt time.Time
	From   string
	// LiveAt are the live members when the gate started (Since): for a
	// peer whose lease is anchored, a member live since then starts it
	// again (its declaration of the peer down may be later than Since).
	LiveAt map[string]bool
}

// State is the quorum's state in the core.
type State struct {
	// Live are the members counted live at the last update (peers only).
	Live map[string]bool
	// Pending is the vote waiting for arbitrator answers (zero: none).
	Pending     time.Time
	PendingLive []string
	PendingLost []string
	Last        *quorum.Verdict
	LastAt      time.Time
	Arbs        map[string]ArbResult
	NextProbe   time.Time
	LastTick    time.Time
	// Slept is how long the host was suspended since LastTick (the input
	// Resumed): now - LastTick does not count it.
	Slept time.Duration
	// Rejoined is set once this run left the rejoin: it votes from then on.
	Rejoined bool
	// Again says why the pending vote was taken again without a new
	// loss (QuorumVote.Again).
	Again string
	// StallAt is when this daemon last found it had stalled: for
	// hb.timeout after it, what it sees of its peers may predate their
	// view of it, and its lost vote is not taken again.
	StallAt time.Time

	// Split is what this node does once it lost a vote.
	Split SplitStop

	Gates map[string]*Gate

	// OneVote is this node's standing with the one-vote arbitrators
	// (node/onevote.go).
	OneVote OneVoteBook
}

// SplitStop is what a node that lost a vote does: its split_action.
type SplitStop struct {
	// Lost is set once this node lost a vote; SplitSvcs are the instances
	// its split_action stop stops; EscalateAt is when it crashes if one
	// still runs.
	Lost       bool
	SplitSvcs  []string
	EscalateAt time.Time
	Escalated  bool
}

// OneVoteBook is this node's standing with each one-vote arbitrator.
type OneVoteBook struct {
	// Leases are by arbitrator; NextReport is when the next reports are
	// due.
	Leases     map[string]*Lease
	NextReport time.Time
}

// Lease is this node's standing with one one-vote arbitrator.
type Lease struct {
	Until    time.Time // this node counts the vote until then
	LastSent time.Time // the send time of the newest report answered
	Granted  bool      // the newest answer granted
	Silent   bool      // the newest report got no answer
	Reason   string    // what the newest answer said, or why none came
	Winner   []string
	// ExclusiveSent is the send time of the newest report granted
	// exclusively, ExclusiveAt when that grant came back.
	ExclusiveSent, ExclusiveAt time.Time
}

// DiskSplit is the state of the rule of node/disksplit.go: the disk's
// last state, whether the split_action was applied for this loss,
// whether its stop escalated.
type DiskSplit struct {
	Lost, Split, Escalated bool
}

// Guard is what the core knows of the node guard (node/guard.go): whether
// it holds a lease (Armed; Maint: the lease of a clean stop), why it did
// not answer (Err).
type Guard struct {
	Armed, Maint bool
	Err          string
	// Fired is the id of the last record taken in.
	Fired string
	// NotRenewed: GuardReported.NotRenewed; held the service it holds
	// back (said once).
	NotRenewed, Held string
}
