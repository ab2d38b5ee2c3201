package heartbeat

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Stale data: a peer's beats announce the generation (and incarnation) of
// its data; when the copy held stays behind that announcement for Timeout
// (the data lost on the way while the beats pass: an on-path attacker
// forwarding the beats and dropping the rest, a broken stream path), the
// peer is stale: a Stale event says so, and Peer.Stale shows it, until the
// copy catches up (Fresh, then a Data event with the current copy) or the
// peer goes down. Being heard is not enough to trust its data: the owner
// treats the instances of a stale peer as unknown, neither up nor down.

// noteBehindLocked records that p announced (inc, gen), which the copy held
// lacks: the start of the time the copy is behind, unless already behind.
func (c *core) noteBehindLocked(p *peer, inc, gen uint64, now time.Time) {
	if inc == p.inc && p.data != nil && gen <= p.gen {
		// The copy held is current for the run that speaks now: an
		// announcement of another run (one that ended: the transport
		// drops the frames of an older run once a newer one is heard) is
		// superseded. Kept, it was never caught up with, and the peer
		// stayed stale for good.
		if p.annInc != inc {
			p.annInc, p.annGen = inc, gen
		}
		return
	}
	if p.behindAt.IsZero() {
		p.behindAt = now
	}
	if inc != p.annInc || gen > p.annGen {
		p.annInc, p.annGen = inc, gen
	}
}

// caughtUp tells whether the copy held is at least what p announced.
func (p *peer) caughtUp() bool {
	return p.data != nil && p.inc == p.annInc && p.gen >= p.annGen
}

// checkBehindLocked ends a behind period when the copy caught up (Fresh and
// the current copy again when p was stale) and declares p stale when the
// copy has been behind for Timeout.
func (c *core) checkBehindLocked(p *peer, now time.Time) {
	switch {
	case p.behindAt.IsZero():
	case p.caughtUp():
		p.behindAt = time.Time{}
		if p.stale {
			p.stale = false
			c.log.Debug("peer data current again", zap.String("peer", p.name))
			c.emitLocked(Event{Kind: Fresh, Node: p.name})
			// the node took the copy held as unknown: say it again
			c.emitDataLocked(p)
		}
	case !p.stale && p.up && now.Sub(p.behindAt) >= c.s.Timeout:
		p.stale = true
		c.emitLocked(Event{Kind: Stale, Node: p.name, Reason: p.behindReason(now)})
	}
}

// behindReason says how far behind the copy of p is.
func (p *peer) behindReason(now time.Time) string {
	held := fmt.Sprintf("generation %d", p.gen)
	if p.data == nil {
		held = "no copy"
	} else if p.inc != p.annInc {
		held += " of an earlier run"
	}
	return fmt.Sprintf("its beats announce generation %d, the copy held is at %s, for %s: its data does not reach this node (lost on the way, or not sent: it may not hear this node)",
		p.annGen, held, now.Sub(p.behindAt).Round(time.Millisecond))
}

// forgetBehind ends a behind period without an event: p went down
// (its data is judged by that).
func (p *peer) forgetBehind() {
	p.behindAt, p.stale = time.Time{}, false
}

// behindDue is when p becomes stale, zero when it is not on its way.
func (c *core) behindDue(p *peer) time.Time {
	if p.behindAt.IsZero() || p.stale || !p.up {
		return time.Time{}
	}
	return p.behindAt.Add(c.s.Timeout)
}
