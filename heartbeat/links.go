package heartbeat

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"haven/config"
)

// Links. A member may list several heartbeat addresses in cluster.toml,
// one per network link (config.Member.Links): link i of this node talks to
// link i of each peer. Beats and probes go out on every link; data (deltas,
// full copies, needs, asks and answers) goes over one live link (dataLink).
// Every frame is authenticated and checked for freshness per peer run,
// whatever the link it came by: the transport's replay window and the
// core's message order (fresh.go) are the peer's, not the link's, so a
// frame replayed on another link is refused as on the same one.
//
// A peer is heard (its liveness, Up and Down) by any fresh message on any
// link: it is down only when every link was silent for Timeout. Each link
// has its own state: heard when a message newer than every one heard on
// that link, and timely, came by it; down (a LinkDown event, never a Down)
// when it was silent for Timeout while the peer is up; up again (LinkUp)
// when heard. Links are named net1, net2... in cluster.toml order.
//
// NoteLinkAlive adds links from outside (the disk heartbeat): "the peer
// made progress on link name just now", which refreshes its liveness as a
// fresh beat does, and is tracked and reported like a network link.

// link is the core's state about one link to a peer.
type link struct {
	name, addr string
	external   bool // from NoteLinkAlive: carries no data
	heard      time.Time
	n          uint64 // newest message order (N) heard on it, this run of the peer
	inc        uint64 // run of the peer n belongs to
	up         bool
	// said: a LinkDown was reported and no LinkUp since.
	said bool
	// dataAt is when the peer's data (a message other than a beat) last
	// came by it; sentDataAt when this node last sent data to the peer
	// over it; degraded: it passes beats but not data, since degradedAt
	// (degraded.go).
	dataAt, sentDataAt time.Time
	degraded           bool
	degradedAt         time.Time
}

// LinkStatus is the heartbeat's view of one link to a peer.
type LinkStatus struct {
	Name string // net1, net2... or the name given to NoteLinkAlive
	Addr string // the peer's address on it (network links)
	Up   bool
	// LastHeard is when the link last carried something fresh of the
	// peer (zero when never).
	LastHeard time.Time
	External  bool // added by NoteLinkAlive (no data goes over it)
	// Degraded: it passes beats but not data (a LinkDegraded event).
	Degraded bool
}

// LinkName is the name of network link i (0-based): net1, net2...
func LinkName(i int) string { return fmt.Sprintf("net%d", i+1) }

// linkAddrs returns the addresses of the network links of m.
func linkAddrs(m config.Member) []string { return m.LinkAddrs() }

// newLinks returns the network links from this node to m: as many as both
// list (cluster.toml makes every member list as many).
func newLinks(self, m config.Member) []*link {
	n := min(len(linkAddrs(self)), len(linkAddrs(m)))
	out := make([]*link, n)
	for i := range out {
		out[i] = &link{name: LinkName(i), addr: linkAddrs(m)[i]}
	}
	return out
}

// netLinks counts the network links of p.
func (p *peer) netLinks() int {
	n := 0
	for _, l := range p.links {
		if !l.external {
			n++
		}
	}
	return n
}

// linkFreshLocked tells whether m, come by network link i of p, is fresh
// for that link: newer than every message heard on it and timely (without
// recording anything of the run: newerLocked does). Called before
// newerLocked.
func (c *core) linkFreshLocked(p *peer, i int, m *message, now time.Time, pr proof) bool {
	if i < 0 || i >= len(p.links) || p.links[i].external {
		return false
	}
	l := p.links[i]
	if m.N == 0 {
		return true
	}
	if l.inc == m.Inc && m.N <= l.n {
		return false
	}
	if pr.ok {
		return !c.s.provedLate(now.Sub(pr.at))
	}
	for j := range p.tops {
		if r := &p.tops[j]; r.inc == m.Inc {
			return r.lagOK(c.s, now, now.Sub(c.epoch)-m.T)
		}
	}
	return true // a run not heard before: newerLocked decides
}

// linkHeardLocked records that link l of p carried something fresh now.
func (c *core) linkHeardLocked(p *peer, l *link, m *message, now time.Time) {
	l.heard = now
	if m != nil {
		l.inc, l.n = m.Inc, m.N
	}
	if p.up && !l.up {
		l.up = true
		if l.said {
			l.said = false
			c.log.Debug("link up", zap.String("peer", p.name), zap.String("link", l.name))
			c.emitLocked(Event{Kind: LinkUp, Node: p.name, Link: l.name, Addr: l.addr})
		}
	}
}

// linksUpLocked sets the links of p that were not reported down up, when
// p comes up: a link reported down stays down until it is heard.
func linksUpLocked(p *peer, now time.Time) {
	p.upAt = now
	for _, l := range p.links {
		if !l.said {
			l.up = true
		}
	}
}

// linksDownLocked marks every link of p down, silently, when p goes down
// (the Down event says it).
func linksDownLocked(p *peer) {
	for _, l := range p.links {
		l.up = false
	}
}

// checkLinksLocked reports the links of a live peer silent for Timeout.
// A lone link is not reported: its loss is the peer's Down.
func (c *core) checkLinksLocked(p *peer, now time.Time) {
	if !p.up || len(p.links) < 2 {
		return
	}
	for _, l := range p.links {
		last := maxTime(l.heard, p.upAt)
		if l.up && now.Sub(last) >= c.s.Timeout {
			l.up, l.said = false, true
			name := l.name
			if l.addr != "" {
				name += " (" + l.addr + ")"
			}
			reason := fmt.Sprintf("nothing heard of %s on link %s for %s; %d/%d links up", p.name, name, now.Sub(last).Round(time.Millisecond), p.linksUp(), len(p.links))
			if l.heard.IsZero() {
				reason = fmt.Sprintf("%s never heard on link %s in %s; %d/%d links up", p.name, name, now.Sub(last).Round(time.Millisecond), p.linksUp(), len(p.links))
			}
			c.log.Debug("link down", zap.String("peer", p.name), zap.String("link", l.name), zap.String("reason", reason))
			c.emitLocked(Event{Kind: LinkDown, Node: p.name, Link: l.name, Addr: l.addr, Reason: reason})
		}
	}
}

// linksDue is when a link of p is next due to be declared down (zero:
// none).
func (c *core) linksDue(p *peer) time.Time {
	var t time.Time
	if !p.up || len(p.links) < 2 {
		return t
	}
	for _, l := range p.links {
		if !l.up {
			continue
		}
		if d := maxTime(l.heard, p.upAt).Add(c.s.Timeout); t.IsZero() || d.Before(t) {
			t = d
		}
	}
	return t
}

func (p *peer) linksUp() int {
	n := 0
	for _, l := range p.links {
		if l.up {
			n++
		}
	}
	return n
}

// dataLinkLocked is the network link data goes over to p: the first one
// that works both ways (we heard p on it within a beat and a half, and p's
// last beat said it hears us on it), else the first one heard lately,
// else the first one up, else the first one. A link that fails stops
// carrying data within a beat and a half, long before it is declared down.
func (c *core) dataLinkLocked(p *peer) int {
	now := c.s.Clock.Now()
	heard, up := -1, -1
	for i, l := range p.links {
		if l.external || !l.up || l.degraded && c.otherLinkOKLocked(p, i) {
			continue
		}
		if up < 0 {
			up = i
		}
		if !c.heardLately(l, now) {
			continue
		}
		if !p.hearsOK || p.hears&(1<<uint(i)) != 0 {
			return i
		}
		if heard < 0 {
			heard = i
		}
	}
	if heard >= 0 {
		return heard
	}
	return max(up, 0)
}

// otherLinkOKLocked tells whether p has an up network link other than i
// that is not degraded.
func (c *core) otherLinkOKLocked(p *peer, i int) bool {
	for j, l := range p.links {
		if j != i && !l.external && l.up && !l.degraded {
			return true
		}
	}
	return false
}

// heardLately tells whether l carried something of its peer within a
// beat and a half (probeAfter: no beat lost).
func (c *core) heardLately(l *link, now time.Time) bool {
	return !l.heard.IsZero() && now.Sub(l.heard) < c.s.probeAfter()
}

// hearMaskLocked is the set of network links on which p was heard lately,
// for our beats (bit i: link i), and the number of network links; 0, 0
// with a single link (the beat stays as before).
func (c *core) hearMaskLocked(p *peer) (uint64, int) {
	n := p.netLinks()
	if n < 2 {
		return 0, 0
	}
	now := c.s.Clock.Now()
	var mask uint64
	for i, l := range p.links {
		if !l.external && l.up && i < 64 && c.heardLately(l, now) {
			mask |= 1 << uint(i)
		}
	}
	return mask, n
}

// noteLinkAlive: see Heartbeat.NoteLinkAlive.
func (c *core) noteLinkAlive(peerName, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	defer c.drainLocked()
	p := c.peers[peerName]
	if p == nil || name == "" {
		return
	}
	var l *link
	for _, x := range p.links {
		if x.name == name {
			l = x
		}
	}
	if l == nil {
		if len(p.links) >= maxLinks {
			return
		}
		l = &link{name: name, external: true}
		p.links = append(p.links, l)
	}
	if !l.external {
		return // a network link is heard by its frames only
	}
	now := c.s.Clock.Now()
	p.heard = now
	if !p.up {
		c.peerUpLocked(p, now)
	}
	c.linkHeardLocked(p, l, nil, now)
}

// maxLinks bounds the links of a peer (network and external).
const maxLinks = config.MaxLinks + 8

// sendAllLocked sends b to p on every network link (beats, probes).
func (c *core) sendAllLocked(to string, b []byte) {
	if c.s.Mute != nil && c.s.Mute() {
		return
	}
	p := c.peers[to]
	n := max(1, p.netLinks())
	for i := 0; i < n; i++ {
		c.st.Sent++
		c.st.BytesSent += uint64(len(b))
		c.tr.send(to, i, b)
	}
}

func (c *core) linkStatus(p *peer) []LinkStatus {
	if len(p.links) == 0 {
		return nil
	}
	out := make([]LinkStatus, 0, len(p.links))
	for _, l := range p.links {
		out = append(out, LinkStatus{Name: l.name, Addr: l.addr, Up: l.up, LastHeard: l.heard, External: l.external, Degraded: l.degraded})
	}
	return out
}
