// Package peersm is the state of the core's peers: what the node knows
// of the other members as a whole (View) and of each (Peer: its judged
// view, package node/view, and what the rules keep of it). The rules that
// read and change it are package node's (node/peers.go,
// node/peerdata.go, node/duplicate.go, node/stale.go, ...).
package peersm

import (
	"time"

	"haven/dataset"
	"haven/node/view"
)

// View is what the node knows of the other members, as a whole.
type View struct {
	Peers  map[string]*Peer
	Pnames []string // sorted
	Compat bool     // every live member announces our compat
	// ConfDiffers says how members' configuration differs (node/clusterconf.go)
	ConfDiffers string
	// ViewChanged is set when a peer's data or Status changed since the
	// last decision pass.
	ViewChanged bool
	// EraBumps counts the changes of the state after which the peers'
	// data merges as a whole again (node/peerdata.go).
	EraBumps int
}

// Peer is what this node knows of another member, judged by the rules of
// package view.
type Peer struct {
	view.Peer
	// Status is the conclusion last said (view.Status), to notice the
	// changes that come with events and with time alone.
	Status dataset.NodeStatus
	// Unseen are the members the peer does not hear, from its beats
	// (PeerUnseen): listing this node, it declared it down.
	Unseen []string
	// FirstHeard is when the peer was first heard in this run; HeardUs
	// is set once one of its beats did not list this node: from then on
	// a claim that it does not hear this node is about this run
	// (node/quorum.go: selfClaimCredited).
	FirstHeard time.Time
	HeardUs    bool
	// Behind: the heartbeat said its data is stale (node/stale.go).
	Behind bool
	// Twin: two runs of its name are heard at once; DownHeld: a Down
	// came meanwhile; RunHeld: its new run is not trusted yet; Trusting:
	// its new run was trusted, the copy the transport held is not taken
	// yet (the Data event that follows RunTrusted)
	// (node/duplicate.go).
	Twin, DownHeld, RunHeld, Trusting bool
	// Merged is the merge era of the last merge of its whole data
	// (node/peerdata.go).
	Merged MergeEra
}

// HeldRunOnly reports whether the peer's instances are unknown only
// because its new run is held, or was just trusted and the copy the
// transport held comes next: it is alive and its data current (it counts
// as a live member for the quorum; between the trust and that copy it
// was counted lost, and a vote began at every restart of a peer).
func (p *Peer) HeldRunOnly() bool { return (p.RunHeld || p.Trusting) && !p.Twin && !p.Behind }

// MergeEra tells when an entry of a peer's data that did not change may
// merge otherwise than when it came: after this node's state went back or
// lost an entry (a write rolled back, a config write failed, a service
// removed: Bumps), or gained a service (its targets, clears and fencing
// tokens heard before were skipped).
type MergeEra struct{ Bumps, Services int }
