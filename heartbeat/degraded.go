package heartbeat

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Links that pass beats but not data. Data goes over one link to a peer
// (dataLinkLocked); an MTU fault, or an attacker on one link who passes
// only the small beats, left the peer heard on every link while its data
// went over the one that lost it: the peer stayed stale (its instances
// unknown: a dead service never failed over) although another link was
// healthy. So, with several network links:
//
//   - A node whose copy of a peer's data has stayed behind what the peer
//     announces for a beat period says so in its beats to that peer
//     (message.Behind), with the links on which the peer's data reached
//     it within hb.timeout (message.DHear); it sends its own data and
//     requests to that peer over every link meanwhile.
//   - A node told that a peer is behind on its data sends it a full copy
//     over every link at once, and all its data over every link while
//     the peer says so. A link it sent data over within hb.timeout that
//     the peer does not list as carrying its data is degraded: a
//     LinkDegraded event (an alarm, the peer stays up), and data no
//     longer goes over it alone: over the other links, and over it too
//     (to learn when it works again).
//   - A degraded link the peer lists again as carrying data, once the
//     list can no longer hold what came before the degradation (hb.timeout
//     and lateMax later), is repaired: LinkRepaired.
//
// So a peer whose data is lost on one link catches up over the others
// within about two beat periods (before it would be declared stale), and
// the link that lost it is named.

// behindLinks is how long a copy must stay behind what its peer announces
// for this node to say so in its beats: a beat period (a delta lost is
// repaired within two gapWait).
func (s settings) behindLinks() time.Duration { return s.beat }

// behindSaysLocked tells whether this node's beats to p say that its copy
// of p's data is behind (several links only).
func (c *core) behindSaysLocked(p *peer, now time.Time) bool {
	return p.netLinks() >= 2 && !p.behindAt.IsZero() && now.Sub(p.behindAt) >= c.s.behindLinks()
}

// dataMaskLocked is the set of network links on which p's data reached
// this node within hb.timeout (bit i: link i).
func (c *core) dataMaskLocked(p *peer, now time.Time) uint64 {
	var mask uint64
	for i, l := range p.links {
		if !l.external && i < 64 && !l.dataAt.IsZero() && now.Sub(l.dataAt) < c.s.Timeout {
			mask |= 1 << uint(i)
		}
	}
	return mask
}

// noteDataLinkLocked records that a message of p other than a beat came by
// network link i.
func (c *core) noteDataLinkLocked(p *peer, i int, m *message, now time.Time) {
	if m.Kind != kindBeat && i >= 0 && i < len(p.links) && !p.links[i].external {
		p.links[i].dataAt = now
	}
}

// allLinksLocked tells whether data to p goes over every network link: p
// says it is behind on this node's data, this node is behind on p's, or a
// link to p is degraded.
func (c *core) allLinksLocked(p *peer, now time.Time) bool {
	if p.netLinks() < 2 {
		return false
	}
	if p.peerBehind || c.behindSaysLocked(p, now) {
		return true
	}
	for _, l := range p.links {
		if l.degraded {
			return true
		}
	}
	return false
}

// onBehindLocked takes what a beat of p says of this node's data: behind
// (and the links on which p got it lately).
func (c *core) onBehindLocked(p *peer, m *message, now time.Time) {
	if p.netLinks() < 2 || m.Links == 0 {
		return
	}
	was := p.peerBehind
	p.peerBehind = m.Behind
	for i, l := range p.links {
		if l.external || i >= 64 {
			continue
		}
		got := m.DHear&(1<<uint(i)) != 0
		switch {
		case m.Behind && !got && !l.degraded && !l.sentDataAt.IsZero() && now.Sub(l.sentDataAt) < c.s.Timeout:
			l.degraded, l.degradedAt = true, now
			name := l.name
			if l.addr != "" {
				name += " (" + l.addr + ")"
			}
			reason := fmt.Sprintf("%s says its copy of this node's data is behind, and this node's data sent over %s within %s did not reach it there, while its beats pass: the link passes beats but not data (an MTU fault, or a filter on the path?); data goes over the other links",
				p.name, name, c.s.Timeout)
			c.log.Debug("link degraded", zap.String("peer", p.name), zap.String("link", l.name), zap.String("reason", reason))
			c.emitLocked(Event{Kind: LinkDegraded, Node: p.name, Link: l.name, Addr: l.addr, Reason: reason})
		case got && l.degraded && now.Sub(l.degradedAt) >= c.s.Timeout+c.s.lateMax():
			l.degraded = false
			c.log.Debug("link repaired", zap.String("peer", p.name), zap.String("link", l.name))
			c.emitLocked(Event{Kind: LinkRepaired, Node: p.name, Link: l.name, Addr: l.addr})
		}
	}
	if m.Behind && !was && c.local != nil {
		c.sendFullLocked(p.name) // over every link (allLinksLocked)
	}
}
