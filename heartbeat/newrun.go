package heartbeat

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// The data of a new run is not trusted for a takeover while an earlier
// run may still live. The transport confirms a new run of a member once
// it answered a challenge from the member's address; a cloned host (a
// copied VM, a restored spare) holds that address too, so its run is
// confirmed as a restart's would be, and its data (nothing runs there
// yet) replaced the real node's at once: a placement leader saw that
// node's services down and started them elsewhere before the duplicate
// was detected (twins.go: both runs must keep sending for twinAfter).
// So when a new run of a member is confirmed while another run of it was
// heard sending within holdAfter, a RunHeld event says so: the owner
// takes the new run's data but counts its instances as unknown (neither
// up nor down: nothing fails over because of them) until the other runs
// have been silent for holdAfter (RunTrusted, then a Data event with the
// copy held). A restart costs that much unknown time (the old run stopped
// first); a clone's earlier run keeps sending, and the duplicate is
// detected meanwhile. Only the real transport holds runs: the in-memory
// network has one run per name.

// holdAfter is how long the other runs of a member must be silent for
// its new run to be trusted: two beat periods at the defaults (a beat
// missed, the next one late), longer than the duplicate detection of a
// run that keeps beating.
func (s settings) holdAfter() time.Duration { return s.Timeout * 2 / 3 }

// holdRun holds the data of peer name's run inc, just confirmed, when
// another run of it was heard sending at last (the transport's evidence,
// twins.go) within holdAfter.
func (c *core) holdRun(name string, inc uint64, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peers[name]
	now := c.s.Clock.Now()
	if c.closed || p == nil || last.IsZero() || now.Sub(last) >= c.s.holdAfter() {
		return
	}
	p.holdLast = maxTime(p.holdLast, last)
	if !p.hold {
		p.hold = true
		reason := fmt.Sprintf("a new run of %s (incarnation %d) was confirmed while another run of it was heard %s ago: its instances count as unknown until no other run is heard for %s (a restart stopped the old run; a cloned host keeps it sending)",
			name, inc, now.Sub(last).Round(time.Millisecond), c.s.holdAfter())
		c.log.Debug("new run held", zap.String("peer", name), zap.String("reason", reason))
		c.emitLocked(Event{Kind: RunHeld, Node: name, Reason: reason})
		c.drainLocked()
	}
	c.kick()
}

// otherRunHeard notes that a run of peer name other than the confirmed
// one sent a live frame now: a hold lasts.
func (c *core) otherRunHeard(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.peers[name]; !c.closed && p != nil && p.hold {
		p.holdLast = c.s.Clock.Now()
	}
}

// checkHoldLocked ends the hold of p once its other runs were silent for
// holdAfter and p is up (a RunTrusted event, then the copy held). A hold
// taken before p was up here (a node that just started heard the old run
// a moment before the new one was confirmed) waits for p to be up: it was
// dropped silently, and the owner kept the new run's instances unknown for
// good. A Down of p ends the hold (tick: the Down says it).
func (c *core) checkHoldLocked(p *peer, now time.Time) {
	if !p.hold || !p.up {
		return
	}
	if now.Sub(p.holdLast) < c.s.holdAfter() {
		return
	}
	p.hold = false
	c.emitLocked(Event{Kind: RunTrusted, Node: p.name})
	if p.data != nil {
		c.emitDataLocked(p)
	}
}

// holdDue is when the hold of p ends unless another run is heard (zero:
// no hold).
func (c *core) holdDue(p *peer) time.Time {
	if !p.hold || !p.up {
		return time.Time{}
	}
	return p.holdLast.Add(c.s.holdAfter())
}
