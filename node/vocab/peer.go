package vocab

import "haven/dataset"

// PeerKind is the kind of a heartbeat event about a peer.
type PeerKind int

const (
	PeerUp PeerKind = iota + 1
	PeerDown
	PeerData
	// PeerUnseen: the members the peer does not hear changed (Unseen).
	PeerUnseen
)

// PeerEvent is a heartbeat event about a peer: heard, lost, or its data.
type PeerEvent struct {
	Node string
	Kind PeerKind
	Data *dataset.Node // PeerData
	// Changes (PeerData) says what Data changed since the Data of the
	// peer's previous PeerData event (Changes.Base); nil: take Data as a
	// whole. Data, Base and what they hold are read-only: they share
	// what did not change.
	Changes *dataset.Changes
	// Unseen are the members the peer does not hear (PeerUnseen).
	Unseen []string
	// Reason says why (PeerStale, PeerDuplicate, PeerRunHeld).
	Reason string
}

// The kinds of the news of a stale peer (node/stale.go).
const (
	// PeerStale: the peer's data held is stale (Reason says how far).
	PeerStale PeerKind = iota + 100
	// PeerFresh: the peer's data held is current again; its data follows.
	PeerFresh
)

// The kinds of the news of a peer heard twice, or of a new run of it
// (node/duplicate.go).
const (
	// PeerDuplicate: two runs of the peer send at once (Reason says which).
	PeerDuplicate PeerKind = iota + 200
	// PeerDuplicateGone: one run of the peer again.
	PeerDuplicateGone
	// PeerRunHeld: a new run of the peer was confirmed while another run
	// of it was heard lately (a restart, or a cloned host: Reason); its
	// instances are unknown until PeerRunTrusted or its Down.
	PeerRunHeld
	// PeerRunTrusted: no other run of the peer was heard for long enough;
	// its data follows.
	PeerRunTrusted
)
