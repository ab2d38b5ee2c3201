package heartbeat

import "time"

// silence is the state of a Silent event of a peer: said when the peer,
// up, was silent for probeAfter (a beat and a half: the tick that sends it
// its first probe), with heard, the time of the last message heard then.
// A message heard since (p.heard moved) ends it with a Heard event; a
// Down ends it without one (the peer was lost: the Up that follows its
// return says it is back).
type silence struct {
	said  bool
	heard time.Time
}

// checkSilenceLocked says the start and the end of a silence of p (tick).
// The end is said at the first tick after p was heard again (within a beat
// period): nothing waits for it, it only ends what the Silent began. A peer
// heard again and already silent again at that tick gets Heard, then a new
// Silent.
func (c *core) checkSilenceLocked(p *peer, now time.Time) {
	switch {
	case !p.up:
		p.silence = silence{}
		return
	case p.silence.said && !p.heard.Equal(p.silence.heard):
		p.silence = silence{}
		c.emitLocked(Event{Kind: Heard, Node: p.name})
	}
	if !p.silence.said && now.Sub(p.heard) >= c.s.probeAfter() {
		p.silence = silence{said: true, heard: p.heard}
		c.emitLocked(Event{Kind: Silent, Node: p.name})
	}
}
