package heartbeat

import "time"

// A node that did not run cannot tell that its peers were silent. When its
// process is not scheduled (SIGSTOP, a paused VM, a starved host, a long
// stop of the world), its peers' beats wait in its socket; when it runs
// again the ticker and the receiver wake together, and a tick that ran
// first would find every peer silent for the whole stall and declare them
// all down, live as they are (with cluster.quorum off, a takeover of all
// they run). At the fast failover profile (hb.timeout 1s) a stall of a
// second is enough.
//
// So the silence of a peer is counted only over the time this node ran.
// The ticker never sleeps longer than a beat period (runTicker): a gap
// between two ticks longer than a beat period and a quarter is a stall,
// and all of it, from the previous tick, is left out of every silence it
// falls in (the node may have run for part of it: counting none of it only
// delays a down). A peer's down then comes hb.timeout of counted silence
// after its last frame: never earlier than hb.timeout after it, and later
// by at most the stalls in between. After a stall the counted silence is
// what it was at the tick before it (a beat at most for a live peer), and
// the peers' next beats, timely (fresh.go), come within a beat period.
//
// What is left to the rest: this node's own stall, as its peers see it, is
// their silence of it, declared as any other (and the quorum's stall watch
// makes it vote alone, node/quorum.go); the links' alarms (links.go) count
// silence as before.

// stallSlack is how late a tick may be, beyond a beat period, without
// counting as a stall: the ticker's own lateness on a busy host.
func (s settings) stallSlack() time.Duration { return s.beat / 4 }

// stallSpan is a time this node did not run: from its last tick before
// the stall to its first tick after.
type stallSpan struct{ from, to time.Time }

// stallWatch keeps the stalls that still fall in a silence being counted.
type stallWatch struct {
	ranAt time.Time // the last tick
	spans []stallSpan
	total time.Duration // every stall of this run, for Stats
	count uint64
}

// note records the tick at now: a stall when the previous tick is more
// than a beat period and the slack ago.
func (w *stallWatch) note(now time.Time, s settings) {
	if !w.ranAt.IsZero() && now.Sub(w.ranAt) > s.beat+s.stallSlack() {
		w.spans = append(w.spans, stallSpan{from: w.ranAt, to: now})
		w.total += now.Sub(w.ranAt)
		w.count++
	}
	w.ranAt = now
}

// within is the stalled time after since.
func (w *stallWatch) within(since time.Time) time.Duration {
	var d time.Duration
	for _, sp := range w.spans {
		if from := maxTime(sp.from, since); sp.to.After(from) {
			d += sp.to.Sub(from)
		}
	}
	return d
}

// prune forgets the stalls that ended before oldest (the oldest last
// frame of a peer still up); every stall when no peer is up.
func (w *stallWatch) prune(oldest time.Time, anyUp bool) {
	if !anyUp {
		w.spans = w.spans[:0]
		return
	}
	keep := w.spans[:0]
	for _, sp := range w.spans {
		if sp.to.After(oldest) {
			keep = append(keep, sp)
		}
	}
	w.spans = keep
}

// silentLocked is how long p has been silent at now, counted over the time
// this node ran.
func (c *core) silentLocked(p *peer, now time.Time) time.Duration {
	return now.Sub(p.heard) - c.stall.within(p.heard)
}
