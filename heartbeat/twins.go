package heartbeat

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Two live runs of one member name: a cloned host (a VM copied, a spare
// restored from backup) runs a daemon with a member's name and address.
// Both runs send authentic frames (they hold the secret); the peers confirm
// one run (the one that answered a challenge) and drop the other's frames
// as "of an earlier run" or "not proved alive". Left alone, the run shut out
// is declared down by the peers, which then start its services a second
// time, while the other run may do the same with theirs.
//
// The transport detects it: it tracks the fresh sequence numbers of each
// run of a member it has reason to believe alive, the confirmed run, those
// confirmed before it, newer runs, and older runs that answered a challenge
// (an older run it never confirmed is a replay until it proves otherwise).
// Two such runs that keep sending fresh frames twinAfter after the later of
// them first appeared (each at two times twinSpacing apart at least: not a
// burst of withheld frames released at once), both within Timeout, are two
// live daemons: the core
// is told (core.noteTwin: a Duplicate event, the name in its beats, so that
// the twins themselves learn it), as long as it lasts. A restart is not a
// duplicate: the old run stops before the new one starts (frames in flight
// are late by far less than twinAfter).
//
// The run shut out is not shut out for good: once the confirmed run has
// been silent for Timeout/2 while an older run keeps sending, the older run
// is challenged, and accepted again when it answers (a fresh nonce: no
// replay can answer), before the peers' Timeout declares the member down.

// maxRuns bounds the runs tracked per member.
const maxRuns = 4

// runSeen is what the transport tracks of one run of a member.
type runSeen struct {
	inc         uint64
	w           window    // its fresh sequence numbers
	first, last time.Time // its first and last fresh frames
	// prev is the last fresh frame at least twinSpacing before last: a
	// run counts as sending at a time when two of its fresh frames came
	// after it, apart (a burst of datagrams withheld by an attacker and
	// released at once is not a live run).
	prev time.Time
	// confirmed: it was the confirmed run; proved: it answered a
	// challenge while older than the confirmed run.
	confirmed, proved bool
}

// twinState is the per-member part of peerSec.
type twinState struct {
	runs []*runSeen
}

// twinAfter is how long two runs must both keep sending to be two daemons:
// two beat periods, at most a third of Timeout (a clone is told as soon as
// with 6 beats a timeout: the beat period went from Timeout/6 to Timeout/3).
func (t *secTransport) twinAfter() time.Duration { return min(2*t.s.beat, t.s.Timeout/3) }

// twinSpacing is how far apart two fresh frames of a run must be for it to
// count as sending (runSeen.prev): a quarter of twinAfter.
func (t *secTransport) twinSpacing() time.Duration { return t.twinAfter() / 4 }

func (ts *twinState) run(inc uint64) *runSeen {
	for _, r := range ts.runs {
		if r.inc == inc {
			return r
		}
	}
	return nil
}

// noteRunLocked records an authenticated frame of ps (t.mu held), before
// the freshness rule of the confirmed run applies. Only a live frame
// counts as its run sending now: a datagram whose message is timely by
// its run's own lag rule (core.frameTimely), or that says nothing of when
// it was sent.
func (t *secTransport) noteRunLocked(ps *peerSec, h header, live bool) {
	now := t.s.Clock.Now()
	r := ps.run(h.inc)
	if r == nil {
		if h.inc < ps.inc {
			return // an earlier run never confirmed here: a replay until it proves alive
		}
		r = &runSeen{inc: h.inc, first: now}
		if len(ps.runs) >= maxRuns {
			t.evictRunLocked(ps)
		}
		ps.runs = append(ps.runs, r)
	}
	if h.inc == ps.inc {
		r.confirmed = true
	}
	if !r.w.fresh(h.seq) {
		return
	}
	r.w.mark(h.seq)
	if !live {
		return
	}
	if now.Sub(r.last) >= t.twinSpacing() {
		r.prev = r.last
	}
	r.last = now
	if h.inc != ps.inc && t.countsLocked(ps, r) {
		t.c.otherRunHeard(ps.name) // a new run's data stays held (newrun.go)
	}
	if h.inc < ps.inc {
		// an older run still sends: prove it alive (twin evidence), or
		// take it back when the confirmed run went silent
		cur := ps.run(ps.inc)
		if !r.confirmed && !r.proved || cur == nil || now.Sub(cur.last) >= t.s.Timeout/2 {
			t.challengeLocked(ps)
		}
	}
	t.checkTwinLocked(ps, now)
}

// evictRunLocked forgets the run of ps heard least recently, never the
// confirmed one.
func (t *secTransport) evictRunLocked(ps *peerSec) {
	i := -1
	for j, r := range ps.runs {
		if r.inc != ps.inc && (i < 0 || r.last.Before(ps.runs[i].last)) {
			i = j
		}
	}
	if i >= 0 {
		ps.runs = append(ps.runs[:i], ps.runs[i+1:]...)
	}
}

// olderAnsweredLocked handles the answer to our challenge from a run older
// than the confirmed one (t.mu held): proof that it is alive now. It takes
// the run back when the confirmed run has been silent for Timeout/2.
// It reports whether the answer was one.
func (t *secTransport) olderAnsweredLocked(ps *peerSec, h header, nonce []byte) bool {
	r := ps.run(h.inc)
	if r == nil || ps.nonce == nil || string(nonce) != string(ps.nonce) {
		return false
	}
	ps.nonce = nil
	now := t.s.Clock.Now()
	r.proved, r.last = true, now
	if cur := ps.run(ps.inc); cur == nil || now.Sub(cur.last) >= t.s.Timeout/2 {
		t.log.Warn("an earlier run of a peer is alive and its later run silent: the earlier run is accepted again",
			zap.String("peer", ps.name), zap.Uint64("incarnation", h.inc), zap.Uint64("silent_incarnation", ps.inc))
		t.holdLocked(ps, h.inc)
		ps.inc = h.inc
		ps.dgram, ps.stream, ps.anchor = r.w, r.w, anchor{}
		r.confirmed = true
		t.c.beatTo(ps.name)
	}
	t.checkTwinLocked(ps, now)
	return true
}

// countsLocked tells whether the frames of run r of ps are evidence of a
// live run: an earlier run never confirmed here and that did not answer a
// challenge is a replay until it does.
func (t *secTransport) countsLocked(ps *peerSec, r *runSeen) bool {
	return r.inc >= ps.inc || r.confirmed || r.proved
}

// holdLocked holds the data of run inc of ps, about to be confirmed, when
// another run of ps that counts was heard sending lately (newrun.go).
func (t *secTransport) holdLocked(ps *peerSec, inc uint64) {
	var last time.Time
	for _, r := range ps.runs {
		if r.inc != inc && t.countsLocked(ps, r) && r.last.After(last) {
			last = r.last
		}
	}
	t.c.holdRun(ps.name, inc, last)
}

// checkTwinLocked tells the core while two runs of ps are alive at once.
func (t *secTransport) checkTwinLocked(ps *peerSec, now time.Time) {
	var a, b *runSeen // the two most recently heard runs that count
	for _, r := range ps.runs {
		if !t.countsLocked(ps, r) || now.Sub(r.last) >= t.s.Timeout {
			continue
		}
		switch {
		case a == nil || r.last.After(a.last):
			a, b = r, a
		case b == nil || r.last.After(b.last):
			b = r
		}
	}
	if a == nil || b == nil {
		return
	}
	since := maxTime(a.first, b.first).Add(t.twinAfter())
	if a.prev.Before(since) || b.prev.Before(since) {
		return
	}
	older, newer := a, b
	if older.inc > newer.inc {
		older, newer = newer, older
	}
	t.c.noteTwin(ps.name, fmt.Sprintf("two runs of %s send at once from %s (incarnations %d and %d, the later first heard %s ago): two daemons run as %s (a cloned host, a restored spare?)",
		ps.name, ps.addr, older.inc, newer.inc, now.Sub(maxTime(a.first, b.first)).Round(time.Millisecond), ps.name))
}

// noteTwin records that two runs of peer name are alive (the transport
// calls it on every frame while it lasts): a Duplicate event the first
// time, and the name in this node's beats until it has not been said for
// Timeout.
func (c *core) noteTwin(name, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peers[name]
	if c.closed || p == nil {
		return
	}
	p.twinAt = c.s.Clock.Now()
	if !p.twin {
		p.twin = true
		c.emitLocked(Event{Kind: Duplicate, Node: name, Reason: reason})
		c.kick()
	}
	c.drainLocked()
}

// checkTwinLocked ends the duplicate state of p once not said for Timeout.
func (c *core) checkTwinLocked(p *peer, now time.Time) {
	if p.twin && now.Sub(p.twinAt) >= c.s.Timeout {
		p.twin = false
		c.emitLocked(Event{Kind: DuplicateGone, Node: p.name})
		if p.up && p.data != nil {
			// the owner held the copy as unknown: the copy of the run
			// heard now, again
			c.emitDataLocked(p)
		}
	}
}

// twinDue is when the duplicate state of p ends unless said again.
func (c *core) twinDue(p *peer) time.Time {
	if !p.twin {
		return time.Time{}
	}
	return p.twinAt.Add(c.s.Timeout)
}

// twinsLocked are the members with two live runs, for the beat.
func (c *core) twinsLocked() []string {
	var out []string
	for _, name := range c.names {
		if c.peers[name].twin {
			out = append(out, name)
		}
	}
	return out
}

// twinOfSelfLocked takes a peer's beat listing this node's name among
// the duplicated members (twins) or not: another daemon may run with this
// node's name. A claim about this node does not act on it on one
// member's word while another could confirm it: the Impostor event (which
// freezes the node) comes once two members say it within Timeout, or the
// one peer this node hears lately does (its word is all there is: the
// only peer of a 2-node cluster, or the peers other than the one the
// network now sends to the clone, which this node no longer hears). A
// lone claim is reported (Rejected), not acted on: a holder of the secret
// listing n2 in its beats froze n2. Both events are rate-limited like the
// transport's.
func (c *core) twinOfSelfLocked(p *peer, twins []string) {
	now := c.s.Clock.Now()
	p.claimsTwin = time.Time{}
	if !slices.Contains(twins, c.s.Node) {
		return
	}
	p.claimsTwin = now
	var who []string
	heard := 0
	for _, name := range c.names {
		q := c.peers[name]
		if at := q.claimsTwin; !at.IsZero() && now.Sub(at) < c.s.Timeout {
			who = append(who, name)
		}
		if q.up && now.Sub(q.heard) < c.s.probeAfter() {
			heard++
		}
	}
	if len(who) < min(2, max(1, heard)) {
		c.refuseLocked("twinclaim:"+p.name, Event{Kind: Rejected, Node: p.name, Addr: p.addr,
			Reason: fmt.Sprintf("%s says it hears two runs of %s (this node) at once: not acted on until another member says it too (one member's word about another is no evidence)", p.name, c.s.Node)})
		return
	}
	verb := "hears"
	if len(who) > 1 {
		verb = "hear"
	}
	c.refuseLocked("twin", Event{Kind: Impostor, Node: c.s.Node, Addr: p.addr,
		Reason: fmt.Sprintf("%s %s two runs of %s at once: another daemon runs with this node's name (a cloned host, a restored spare?)", strings.Join(who, " and "), verb, c.s.Node)})
}
