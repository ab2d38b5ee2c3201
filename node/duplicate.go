package node

import (
	"haven/node/view"

	"haven/node/peersm"
)

// A duplicated member (PeerDuplicate): the heartbeat hears two runs of the
// peer's name at once, two daemons with one name and address (a cloned
// host, a spare restored from backup). Which run's data reaches this node
// is the network's choice, and the other run may run services too: the
// peer is treated as a node whose state is unknown, not as down. Its
// instances count as unknown (as a stale peer's: nothing fails over
// because of them), and a Down of the heartbeat while it lasts (the run
// this node confirmed went silent, the other one still sends) is applied
// only once the duplicate is over: no node takes over anything because
// of a duplicated member. The twins themselves learn it from the beats
// (an Impostor event there freezes the node: nothing more starts there).
//
// Before the duplicate is detected, a new run of a member confirmed while
// another run of it was heard lately (PeerRunHeld: a restart, or a clone
// that took the member's address) is treated the same way: its data is
// taken, its instances count as unknown, until the other run has been
// silent for long enough (PeerRunTrusted, then its data) or the peer is
// declared down: a clone's data (nothing runs there yet) never makes a
// service look down on that node.

// PeerRunHeldEvent: a new run of a peer while another may still live: its
// data is taken, its instances count as unknown for a while.
type PeerRunHeldEvent struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

func (PeerRunHeldEvent) Kind() string    { return "peer_run_held" }
func (PeerRunHeldEvent) Service() string { return "" }
func (PeerRunHeldEvent) Level() Level    { return Info }
func (e PeerRunHeldEvent) String() string {
	return e.Reason + " (nothing fails over because of " + e.Node + " meanwhile)"
}

// PeerRunTrustedEvent: the new run of a held peer is trusted.
type PeerRunTrustedEvent struct {
	Node string `json:"node"`
}

func (PeerRunTrustedEvent) Kind() string    { return "peer_run_trusted" }
func (PeerRunTrustedEvent) Service() string { return "" }
func (PeerRunTrustedEvent) Level() Level    { return Info }
func (e PeerRunTrustedEvent) String() string {
	return "no other run of " + e.Node + " heard: its new run is trusted, its data counts again"
}

// DuplicateMember: two daemons run with a peer's name at once.
type DuplicateMember struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

func (DuplicateMember) Kind() string    { return "duplicate_member" }
func (DuplicateMember) Service() string { return "" }
func (DuplicateMember) Level() Level    { return Error }
func (e DuplicateMember) String() string {
	return "duplicate member " + e.Node + ": " + e.Reason + "; " + e.Node +
		" is treated as unknown, not down (nothing fails over because of it) until only one daemon runs as " + e.Node +
		" (stop the other one: docs/operations.md)"
}

// DuplicateMemberGone: one daemon runs with the peer's name again.
type DuplicateMemberGone struct {
	Node string `json:"node"`
}

func (DuplicateMemberGone) Kind() string    { return "duplicate_member_gone" }
func (DuplicateMemberGone) Service() string { return "" }
func (DuplicateMemberGone) Level() Level    { return Warn }
func (e DuplicateMemberGone) String() string {
	return "one daemon runs as " + e.Node + " again (no two runs heard for hb.timeout)"
}

// heldUpAsTwin reports whether a Down of p is held back: p is duplicated
// (it is applied when the duplicate is over).
func (c *Core) heldUpAsTwin(p *peersm.Peer) bool {
	if p.Twin {
		p.DownHeld = true
	}
	return p.Twin
}

// noteDuplicate applies PeerDuplicate, PeerDuplicateGone and what a
// duplicate leaves on the peer's other events.
func (c *Core) noteDuplicate(p *peersm.Peer, ev PeerEvent) {
	switch ev.Kind {
	case PeerDuplicate:
		if !p.Twin {
			p.Twin = true
			c.emit(DuplicateMember{Node: ev.Node, Reason: ev.Reason})
		}
	case PeerDuplicateGone:
		if p.Twin {
			p.Twin = false
			c.emit(DuplicateMemberGone{Node: ev.Node})
			if p.DownHeld && p.Up {
				p.Peer = view.NoteDown(p.Peer)
			}
			p.DownHeld = false
		}
	case PeerUp:
		p.DownHeld = false
	case PeerData:
		p.DownHeld, p.Trusting = false, false
	case PeerRunHeld:
		if !p.RunHeld {
			p.RunHeld, p.Trusting = true, false
			c.emit(PeerRunHeldEvent{Node: ev.Node, Reason: ev.Reason})
		}
	case PeerRunTrusted:
		if p.RunHeld {
			p.RunHeld, p.Trusting = false, true
			c.emit(PeerRunTrustedEvent{Node: ev.Node})
		}
	case PeerDown:
		p.RunHeld, p.Trusting = false, false
	}
	if (p.Twin || p.RunHeld) && p.Data != nil {
		p.Stale = true
	}
}

// peerDuplicated reports whether two runs of the peer are heard at once.
func (c *Core) peerDuplicated(name string) bool {
	p := c.pv.Peers[name]
	return p != nil && p.Twin
}
