package heartbeat

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Windows pushed ahead by a holder of the secret. A member (or anyone
// with the secret) can seal datagrams of another member's current run
// from that member's address; a frame more than maxJump ahead is refused
// and challenged (jumpLocked), but six frames, each 500 numbers ahead,
// moved the replay window 3,000 past the run's own numbers: every real
// frame of the run was then "replayed or duplicate" (below the window)
// until the run's numbers caught up, minutes later; the peer was declared
// down and its services started a second time. Now:
//
//   - A frame of the confirmed run below its window (older than the 1024
//     numbers it keeps) is a replay, or the sign of a window pushed past
//     the run's numbers: the run is challenged (at most every 100 ms).
//   - The answer to a challenge carries the run's own sequence number
//     (sealed under its key, from its address, to our fresh nonce: no
//     one else can answer it). A window more than maxJump above it was
//     pushed by frames the run did not send: it is re-anchored there (the
//     numbers up to the answer's are refused from then on), reported, and
//     the run is "pushed" for pushedFor: its windows may then move at
//     most maxJump a beat period past the last answer (a frame beyond is
//     refused and challenged, as a jump), so that frames sealed by the
//     holder of the secret no longer outrun the run's own. A genuine
//     burst beyond that pace costs a challenge's round trip.

// pushedFor is how long after a pushed window the pace of a run's
// sequence numbers is bounded.
func (s settings) pushedFor() time.Duration { return 20 * s.Timeout }

// anchor is what the last answer of a peer's run said of its numbers.
type anchor struct {
	seq    uint64    // the answer's sequence number
	at     time.Time // when it came
	pushed time.Time // until when the pace is bounded (zero: not pushed)
}

// below tells whether seq is older than the numbers w keeps.
func (w *window) below(seq uint64) bool { return w.top >= windowSize && seq <= w.top-windowSize }

// reanchor moves w down to seq: every number up to seq is refused.
func (w *window) reanchor(seq uint64) {
	w.top = seq
	for i := range w.bits {
		w.bits[i] = ^uint64(0)
	}
}

// anchorLocked takes the sequence number seq of an answer of the
// confirmed run of ps (t.mu held): the windows move up to it, or, pushed
// more than maxJump above it by frames the run did not send, down to it.
func (t *secTransport) anchorLocked(ps *peerSec, seq uint64) {
	now := t.s.Clock.Now()
	pushed := false
	for _, w := range []*window{&ps.dgram, &ps.stream} {
		if w.top > seq+maxJump {
			pushed = true
			w.reanchor(seq)
		} else {
			w.advance(seq)
		}
	}
	ps.anchor.seq, ps.anchor.at = seq, now
	if !pushed {
		return
	}
	if r := ps.run(ps.inc); r != nil && r.w.top > seq+maxJump {
		r.w.reanchor(seq)
	}
	ps.anchor.pushed = now.Add(t.s.pushedFor())
	t.c.unconfirmed.Add(1)
	reason := fmt.Sprintf("frames of %s were accepted above its own sequence number (its answer says %d): sealed by a holder of the secret, not by %s: its windows are re-anchored at its answer, and its numbers may move at most %d a beat period for %s",
		ps.name, seq, ps.name, maxJump, t.s.pushedFor())
	t.log.Warn("heartbeat window pushed ahead of a peer's run", zap.String("peer", ps.name), zap.String("reason", reason))
	t.refuseLocked("pushed:"+ps.name, Event{Kind: Rejected, Node: ps.name, Reason: reason})
}

// paceLocked tells whether seq, of the confirmed run of ps, is further
// ahead than its numbers may move since its last answer while it is
// pushed (t.mu held).
func (t *secTransport) paceLocked(ps *peerSec, seq uint64) bool {
	now := t.s.Clock.Now()
	a := ps.anchor
	if a.pushed.IsZero() || !now.Before(a.pushed) {
		return false
	}
	allowed := maxJump/2 + uint64(maxJump*now.Sub(a.at)/t.s.beat)
	return seq > a.seq && seq-a.seq > allowed
}
