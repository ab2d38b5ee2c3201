package heartbeat

import (
	"fmt"
	"time"

	"haven/internal/planted"
)

// Liveness from new and timely messages only. Every message carries N,
// from a counter of the process, and T, the time since the sender's run
// started by its monotonic clock, both taken when it is encoded: the
// messages of one run are strictly ordered over both paths (datagrams and
// streams). A peer's liveness is refreshed (heard, up) only by a message
//
//   - newer than every one heard of its run (N above the highest), and
//   - timely: its lag (receive time minus T) is at most lateMax above the
//     least lag seen of its run (the least over the last lagPeriod or two:
//     the clocks' rates drift apart slowly; no need for synchronised clocks).
//
// Anything else is a frame reordered on the way, or held back by someone on
// the path and delivered late: authentic (the envelope refuses anything
// else, and its replay window accepts a frame once), it says nothing about
// the peer being alive now. While the peer is up, such a message still
// counts for its data (a delta, a full copy, an ask overtaken by a beat);
// a beat carries nothing else and is dropped; and nothing of it makes a
// down peer up again: a crashed node stays down whatever was held back of
// it, even its very last frames.
//
// A run whose messages keep coming late for Timeout (its host was
// suspended and its monotonic clock stood still) is measured again from
// there: frames withheld and released at once are not such a run.

// lateMax is how much later than its least lag a message may arrive and
// still refresh liveness; lagPeriod how long a least lag is kept.
func (s settings) lateMax() time.Duration   { return s.Timeout / 3 }
func (s settings) lagPeriod() time.Duration { return 10 * s.Timeout }

// encode encodes m as this run's newest message (c.mu held).
func (c *core) encode(m *message) []byte {
	c.nLast++
	m.N = c.nLast
	m.T = c.s.Clock.Now().Sub(c.epoch)
	c.noteSentLocked(m.N, m.T)
	if c.local != nil && c.local.Format.Max > 0 {
		f := c.local.Format
		// the formats of the cluster feature level, and what this node reads
		m.V, m.Fmt, m.Lvl, m.Rel = wireVersion(f), f.Max, f.Level, f.Release
	}
	return encode(m)
}

// runTop is the newest message heard of one run of a peer, and its lags.
type runTop struct {
	inc, n uint64
	// cur is the least lag of timely messages since the current period
	// started (curOK when any), prev that of the last period that had one.
	cur, prev     time.Duration
	curOK, prevOK bool
	until         time.Time // end of the current period
	// lateFrom is when the messages of the run started to come late
	// (zero: the last one was timely).
	lateFrom time.Time
	// proves: a message of the run carried a proof of its freshness
	// (echo.go); delay is how much older than its arrival the last one
	// was proved to be (its path's delay, both ways).
	proves bool
	delay  time.Duration
}

// timely tells whether a message with lag d, received at now, is timely,
// and records it.
func (r *runTop) timely(s settings, now time.Time, d time.Duration) bool {
	if !now.Before(r.until) {
		if r.curOK {
			r.prev, r.prevOK = r.cur, true
		}
		r.curOK, r.until = false, now.Add(s.lagPeriod())
	}
	base, ok := r.base()
	if ok && d-base > s.lateMax() {
		if r.lateFrom.IsZero() {
			r.lateFrom = now
		}
		if now.Sub(r.lateFrom) < s.Timeout {
			return false
		}
		r.prevOK, r.curOK = false, false // late for Timeout: measured again from here
	}
	r.lateFrom = time.Time{}
	if !r.curOK || d < r.cur {
		r.cur, r.curOK = d, true
	}
	return true
}

// base is the least lag of the run to compare with (ok false: none yet).
func (r *runTop) base() (time.Duration, bool) {
	base, ok := r.prev, r.prevOK
	if r.curOK && (!ok || r.cur < base) {
		base, ok = r.cur, true
	}
	return base, ok
}

// frameTimely tells whether m, a message of run inc of peer name, is
// timely by that run's own lag rule, without recording anything and
// without the measure again of a run late for Timeout (a suspended host):
// frames held back on the path and released later are late by it, and no
// evidence that their run still sends (twins.go). A message that says
// nothing of when it was sent (nil, an older sender), or of a run whose
// lag is not known yet, cannot be judged: true.
func (c *core) frameTimely(name string, inc uint64, m *message) bool {
	if m == nil || m.N == 0 || m.T == 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peers[name]
	if p == nil {
		return true
	}
	for i := range p.tops {
		if r := &p.tops[i]; r.inc == inc {
			base, ok := r.base()
			now := c.s.Clock.Now()
			return !ok || now.Sub(c.epoch)-m.T-base <= c.s.lateMax()
		}
	}
	return true
}

// lagOK tells whether a message with lag d, received at now, would be
// timely, without recording it (a copy of a message come by another link).
func (r *runTop) lagOK(s settings, now time.Time, d time.Duration) bool {
	base, ok := r.base()
	return !ok || d-base <= s.lateMax() || !r.lateFrom.IsZero() && now.Sub(r.lateFrom) >= s.Timeout
}

// newerLocked tells whether m is newer than every message heard of its run
// and timely (a run not heard before is new; a message of an older sender,
// without N, is taken as before), records it, and returns when it counts
// as heard. pr is what m's echo proves (echo.go): a proof decides instead
// of the lag rule.
func (c *core) newerLocked(p *peer, m *message, now time.Time, pr proof) (bool, time.Time) {
	if m.N == 0 {
		return true, now
	}
	var r *runTop
	for i := range p.tops {
		if p.tops[i].inc == m.Inc {
			r = &p.tops[i]
		}
	}
	if r == nil {
		// A run not heard before: the transport decides which runs are
		// admitted (twins.go); remember the last maxRuns.
		if len(p.tops) == maxRuns {
			low := 0
			for i, t := range p.tops {
				if t.inc < p.tops[low].inc {
					low = i
				}
			}
			p.tops = append(p.tops[:low], p.tops[low+1:]...)
		}
		p.tops = append(p.tops, runTop{inc: m.Inc})
		r = &p.tops[len(p.tops)-1]
	}
	if m.N <= r.n {
		return false, now
	}
	r.n = m.N
	c.echoOfLocked(p, m, now)
	ok, at := c.judgeLocked(r, m, now, pr)
	if ok && !at.Before(now) {
		// heard at its arrival: echoed as heard too, so that a member
		// that acknowledges it as heard heard its sender after it was
		// sent (the guard lease's anchor, echo.go); one dated back or
		// late is echoed for the delay proofs only
		c.heardOfLocked(p, m, now)
	}
	return ok, at
}

// judgeLocked is newerLocked's judgement of m, a message newer than every
// one heard of its run r.
func (c *core) judgeLocked(r *runTop, m *message, now time.Time, pr proof) (bool, time.Time) {
	d := now.Sub(c.epoch) - m.T
	if planted.On(planted.LateAlive) {
		return true, now
	}
	if pr.ok {
		r.proves, r.delay = true, now.Sub(pr.at)
		if c.s.provedLate(r.delay) {
			return false, now
		}
		if !r.timely(c.s, now, d) {
			// proved timely: the run's clock moved (a suspended host),
			// its lag is measured again from here
			r.prevOK, r.lateFrom = false, time.Time{}
			r.cur, r.curOK, r.until = d, true, now.Add(c.s.lagPeriod())
		}
		return true, c.s.provedHeard(now, r.delay)
	}
	if !r.timely(c.s, now, d) {
		return false, now
	}
	if !r.proves {
		return true, now
	}
	// a message of a run that proves its beats, without a proof of its
	// own (data): as old as its path's last proved delay (echo.go)
	return !c.s.provedLate(r.delay), c.s.provedHeard(now, r.delay)
}

// lateUsefulLocked tells whether m, older than the newest message of its
// run or late, may still count for its data; one of a peer that is down is
// reported.
func (c *core) lateUsefulLocked(p *peer, m *message) bool {
	if p.up {
		return m.Kind != kindBeat
	}
	c.replayed.Add(1)
	c.refuseLocked("late:"+p.name, Event{Kind: Rejected, Node: p.name, Reason: fmt.Sprintf("late %s of %s (older than the newest heard of its run, or sent long ago) while %s is down: held back on the way and delivered late? It does not bring %s up", m.Kind, p.name, p.name, p.name)})
	return false
}
