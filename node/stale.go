package node

import "haven/node/peersm"

// A stale peer (PeerStale): heard, but the copy of its data held stayed
// behind the generation its beats announce for hb.timeout (its data is
// lost on the way). Its data says nothing of what runs there now: it is
// treated like a peer that came back and was not confirmed yet
// (view.Unconfirmed): its instances are unknown, neither up nor down. An
// unknown instance on a live node counts as possibly running, so nothing
// fails over because of it: the peer may still run the service, and only
// its declaration down (silence for hb.timeout, with the quorum and
// fencing rules) lets a service move. It stays so until the copy catches
// up (PeerFresh, then its data) or the peer goes down.

// PeerDataStale: a live peer's data held is behind what it announces for
// hb.timeout: its instances are unknown until its data is heard again.
type PeerDataStale struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

func (PeerDataStale) Kind() string    { return "peer_stale" }
func (PeerDataStale) Service() string { return "" }
func (PeerDataStale) Level() Level    { return Warn }
func (e PeerDataStale) String() string {
	return "data of " + e.Node + " is stale: " + e.Reason + "; its instances count as unknown (no failover because of them)"
}

// PeerDataFresh: the data of a stale peer is current again.
type PeerDataFresh struct {
	Node string `json:"node"`
}

func (PeerDataFresh) Kind() string    { return "peer_fresh" }
func (PeerDataFresh) Service() string { return "" }
func (PeerDataFresh) Level() Level    { return Info }
func (e PeerDataFresh) String() string {
	return "data of " + e.Node + " is current again"
}

// noteStale applies PeerStale, PeerFresh and the staleness a Data or Down
// event leaves: while behind, the peer's data is never taken as current.
func (c *Core) noteStale(p *peersm.Peer, ev PeerEvent) {
	switch ev.Kind {
	case PeerStale:
		if !p.Behind {
			p.Behind = true
			c.emit(PeerDataStale{Node: ev.Node, Reason: ev.Reason})
		}
	case PeerFresh:
		if p.Behind {
			p.Behind = false
			c.emit(PeerDataFresh{Node: ev.Node})
		}
	case PeerDown:
		p.Behind = false
	}
	if p.Behind && p.Up && p.Data != nil {
		p.Stale = true
	}
}

// peerBehind reports whether the peer's data is stale (PeerStale).
func (c *Core) peerBehind(name string) bool {
	p := c.pv.Peers[name]
	return p != nil && p.Behind
}
