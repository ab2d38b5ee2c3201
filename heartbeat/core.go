package heartbeat

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"haven/dataset"
	"haven/internal/clock"
)

// transport moves opaque frames between members. send must not block: it
// queues the frame (or drops it and counts the drop). The core picks the
// network link (0-based, links.go); which path carries a frame on it
// (datagram or stream) is the transport's choice.
type transport interface {
	send(to string, link int, b []byte)
}

// eventBuffer is the capacity of the Events channel; beyond it events wait
// in the core's backlog (Data events of one node coalesce there). It is
// small: each Data event holds a whole copy of a peer's dataset (sharing
// what did not change with the others: cow.go), and a busy
// loop (a node joining a cluster of 500 services) would otherwise hold up
// to eventBuffer stale copies (16 daemons x 500 services: hundreds of MB
// each) and handle every one of them.
const eventBuffer = 16

// rejectLogEvery rate-limits the log line and the event of a rejection source.
const rejectLogEvery = 10 * time.Second

// incSeq makes incarnations unique within a process even when a fake clock
// stands still between two starts of the same node.
var incSeq atomic.Uint64

// peer is the core's state about one other member.
type peer struct {
	name, addr string
	up         bool
	heard      time.Time
	inc, gen   uint64
	seenInc    uint64        // incarnation of the last frame heard
	tops       []runTop      // the newest message of each recent run (fresh.go)
	data       *dataset.Node // merged full dataset; nil before the first full copy
	needAt     time.Time     // last full-copy request sent to it
	fullAt     time.Time     // last full copy sent to it
	// dig is the digest of data, valid when digOK (reset by every change).
	dig   uint64
	digOK bool
	// sums is the combinable digest of data that v2 beats are checked
	// against, kept by every delta (digestsum.go).
	sums sums
	// suspect: a beat of p's current generation carried another digest;
	// the next full copy of that generation replaces data.
	suspect bool
	// pending are deltas that arrived ahead of their base (memberlist
	// hands datagrams over LIFO under load), applied when the base comes.
	pending []*message
	// A gap: p announced (gapInc, gapGen) that we do not hold, since gapAt
	// (zero when none). A gap still open after gapWait asks for a full
	// copy, so a frame merely reordered costs nothing.
	gapAt          time.Time
	gapInc, gapGen uint64
	// confirm is set when p comes up again: the data held may predate its
	// loss, so the first message showing that it is current (same
	// incarnation, no newer generation) emits it again as a Data event.
	confirm bool
	// unseen are the members p declared down, from its last beat;
	// unseenSaid is set once an Unseen event said them (the first beat
	// heard says them even when empty: a peer that does not list this
	// node heard this run, see node.selfClaimCredited).
	unseen     []string
	unseenSaid bool
	// probedAt is when a probe last went to p (p silent for probeAfter);
	// answeredAt when a probe of p was last answered.
	probedAt, answeredAt time.Time
	// silence is what a Silent event said of p (silence.go).
	silence silence
	// behindAt is when the copy held fell behind what p announced
	// (annInc, annGen), zero when it is not; stale once that lasted
	// Timeout (stale.go).
	behindAt       time.Time
	annInc, annGen uint64
	stale          bool
	// twin: two runs of p are alive at once (twins.go), last said at
	// twinAt.
	twin   bool
	twinAt time.Time
	// claimsTwin is when p's last beat listed this node among the
	// duplicated members (zero: it did not).
	claimsTwin time.Time
	// hold: the data of p's new run is not trusted for a takeover while
	// another run of p was heard within holdAfter (holdLast: newrun.go).
	hold     bool
	holdLast time.Time
	// links are the network links to p, then those added by
	// NoteLinkAlive (links.go); upAt is when p last came up.
	links []*link
	upAt  time.Time
	// hears (bit i: link i) are the links on which p hears us, from its
	// last beat; hearsOK when a beat said them. peerBehind: its last beat
	// said its copy of our data is behind (degraded.go).
	hears      uint64
	hearsOK    bool
	peerBehind bool
	// format is what p's last message said of its versions (message.Fmt,
	// Lvl): its Data events carry it.
	format dataset.Format
	// said is what its current run said of its versions (versions.go).
	said runVersions
	// echo is the newest message of p received, which this node's beats
	// echo (Ack); hecho the newest one counted as heard at its arrival
	// (Heard); ack the newest message of this node that p's beats echoed
	// as heard (echo.go).
	echo, hecho echo
	ack         Ack
	// sendsHeard: p's beats acknowledged messages as heard (message.Heard)
	// once: it is of this release or later.
	sendsHeard bool
	// cow is the copy-on-write of data (cow.go).
	cow cow
}

// Probes: a peer silent for probeAfter (a beat and a half: a beat late by
// half a period, or lost) is asked for a beat every probeEvery until it is
// heard or declared down, and answers at once (at most every
// probeAnswerEvery). The silence is noticed at the first tick after
// probeAfter (tick runs at least once a beat period, for our beats): no
// timer is set for it, since a peer heard meanwhile would leave a timer
// that fires for nothing, once a beat period per peer (2 of the 3
// wake-ups a second of an idle daemon at hb 3s/1s with two peers). So
// the probes begin between probeAfter and probeAfter plus a beat, and
// probeEvery spreads 16 of them over the rest of the window even when
// they begin last. A live peer is then declared down only when its
// regular beats AND every probe round trip of the window are lost: at 20
// % loss into every node, the 2 or 3 beats of a window are all lost with
// a chance of 0.04 at most, and the 16 round trips (or more) with a
// further 0.36^16 (8e-8). Nothing is sent while peers are heard: idle
// traffic is the beats alone.
func (s settings) probeAfter() time.Duration { return s.beat + s.beat/2 }
func (s settings) probeEvery() time.Duration {
	return max(5*time.Millisecond, (s.Timeout-s.probeAfter()-s.beat)/probesPerWindow)
}
func (s settings) probeAnswerEvery() time.Duration { return max(5*time.Millisecond, s.probeEvery()/2) }

// probesPerWindow is the number of probes a silent peer gets before it is
// declared down.
const probesPerWindow = 16

// maxPending bounds the deltas waiting for their base per peer.
const maxPending = 16

// core is the transport-independent heartbeat: the delta/full/liveness logic
// shared by the memberlist and in-memory transports. Every method takes mu;
// none blocks (transports queue, events wait in a backlog).
type core struct {
	s   settings
	log *zap.Logger
	inc uint64
	tr  transport // set once before the first call
	// stall: the times this node did not run, left out of its peers'
	// silences (stall.go)
	stall stallWatch
	// epoch is when this run started: messages carry the time since (fresh.go).
	epoch time.Time
	// nBase is this run's first message number (not used), nLast its
	// last; sent holds when the last sentRing of them were encoded, since
	// epoch (echo.go).
	nBase, nLast uint64
	sent         [sentRing]time.Duration

	dropped, sendErrs atomic.Uint64
	// Refusals of the real transport (see Stats).
	replayed, wrongSrc, refused, unconfirmed atomic.Uint64
	notOwnKey                                atomic.Uint64

	mu       sync.Mutex
	closed   bool
	local    *dataset.Node // nil before the first Publish
	dig      uint64        // digest of local
	sums     sums          // combinable digest of local (v2 beats)
	full     []byte        // encoded full copy of local, nil when stale
	peers    map[string]*peer
	names    []string // peer names, sorted
	nextBeat time.Time
	// wake is the real transport's ticker's sleep, ended by a due time
	// that moved earlier than it sleeps for (a trailing beat, a gap to
	// check). Closed by shutdown.
	wake    clock.Sleeper
	events  chan Event
	backlog []Event
	st      Stats
	rejLast map[string]time.Time
	// Rejected events of the current rate window, and those suppressed.
	rejWindow           time.Time
	rejShown, rejHidden int
	// nextAsk numbers the asks sent (ask.go).
	nextAsk uint64
	// ticks counts the ticks run (the ticker's wake-ups; tests).
	ticks uint64
	// ackNote is AckedNotify's channel (buffer 1)
	ackNote chan struct{}
}

func newCore(s settings) *core {
	now := s.Clock.Now()
	c := &core{
		s:       s,
		log:     s.Logger.With(zap.String("node", s.Node)),
		inc:     s.Incarnation,
		peers:   map[string]*peer{},
		events:  make(chan Event, eventBuffer),
		rejLast: map[string]time.Time{},
		wake:    clock.NewSleeper(s.Clock),
		epoch:   now,
		ackNote: make(chan struct{}, 1),
	}
	if c.inc == 0 {
		c.inc = uint64(now.UnixNano()) + incSeq.Add(1)
	}
	c.nBase = nBase(c.inc)
	c.nLast = c.nBase
	for _, m := range s.Members {
		if m.Name != s.Node {
			c.peers[m.Name] = &peer{name: m.Name, addr: m.Addr, links: newLinks(s.self(), m)}
			c.names = append(c.names, m.Name)
		}
	}
	sort.Strings(c.names)
	// The first tick beats at once so that peers learn of us quickly.
	c.nextBeat = now
	return c
}

// publish records the local dataset and sends the delta to the live peers.
func (c *core) publish(n dataset.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.local != nil {
		next, was, d := c.nextLocal(n)
		if d == nil {
			return
		}
		b := c.encode(&message{Kind: kindDelta, From: c.s.Node, Inc: c.inc, Base: was.Gen, Gen: next.Gen, Delta: d})
		c.setLocalFrom(was, next, d)
		for _, name := range c.names {
			if c.peers[name].up {
				c.sendLocked(name, b)
				c.st.DeltasSent++
			}
		}
		return
	}
	next := n.Clone()
	next.Name = c.s.Node
	c.setLocalLocked(&next, nil)
	for _, name := range c.names {
		if c.peers[name].up {
			c.sendFullLocked(name)
		}
	}
}

// setLocalLocked records a new local dataset. A beat follows gapWait later
// (unless one is due sooner): a peer that lost the delta sees the new
// generation in it and asks for a full copy, without waiting for the next
// beat period.
func (c *core) setLocalLocked(n *dataset.Node, d *delta) { c.setLocalFrom(c.local, n, d) }

// setLocalFrom is setLocalLocked when the current dataset was prev (of
// which the entries d touches and the head at least).
func (c *core) setLocalFrom(prev, n *dataset.Node, d *delta) {
	c.local, c.full = n, nil
	c.dig = c.localDigest(prev, n, d)
	if t := c.s.Clock.Now().Add(c.s.gapWait); t.Before(c.nextBeat) {
		c.nextBeat = t
		c.kick()
	}
}

// kick wakes the real transport's ticker (never blocks).
func (c *core) kick() { c.wake.Wake() }

// receiveFrom handles one frame from the transport, which authenticated
// it as sender's (sender.go), come by network link (0-based).
func (c *core) receiveFrom(sender string, link int, b []byte) {
	// Decoded before the lock: a message of 16 MB takes a second or more
	// to decode, and the daemon's loop takes the lock (Publish, Peers).
	m, err := decode(b)
	c.receiveDecoded(sender, link, len(b), m, err)
}

// receiveDecoded is receiveFrom of a message already decoded (m, err) from
// size bytes.
func (c *core) receiveDecoded(sender string, link, size int, m *message, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	defer c.drainLocked()
	if err != nil {
		c.rejectLocked(sender, err.Error())
		return
	}
	if c.refuseForeignFromLocked(sender, m) {
		return
	}
	p := c.peers[m.From]
	if p == nil {
		c.rejectLocked(m.From, "sender is not a cluster member (or is this node)")
		return
	}
	if reason := c.versionsLocked(p, m); reason != "" {
		c.rejectLocked(p.name, reason)
		return
	}
	now := c.s.Clock.Now()
	c.st.Received++
	c.st.BytesReceived += uint64(size)
	c.noteDataLinkLocked(p, link, m, now)
	pr := c.proofLocked(p, m, now)
	linkFresh := c.linkFreshLocked(p, link, m, now, pr)
	newer, at := c.newerLocked(p, m, now, pr)
	if !newer && !c.lateUsefulLocked(p, m) {
		if linkFresh && p.up {
			// a copy of a message already heard on another link
			c.linkHeardLocked(p, p.links[link], m, now)
		}
		return
	}
	sentFull := c.heardLocked(p, m, newer, now, at)
	if linkFresh {
		c.linkHeardLocked(p, p.links[link], m, now)
	}
	switch m.Kind {
	case kindFull:
		c.onFullLocked(p, m)
	case kindDelta:
		c.onDeltaLocked(p, m, now)
	case kindBeat:
		c.onBeatLocked(p, m, now)
	case kindAsk, kindAnswer:
		c.receiveAskLocked(p, m)
		c.checkGapLocked(p, now)
		return
	case kindNeed:
		c.onNeedLocked(p, sentFull, now)
	}
	if p.confirm && p.data != nil && m.Kind != kindNeed && m.Inc == p.inc && m.Gen <= p.gen {
		c.emitDataLocked(p)
	}
	c.checkGapLocked(p, now)
}

// heardLocked notes a message m of p that may count for its data: a newer
// one refreshes its liveness (and brings it up), heard at at (its proved
// sending time, or now). It tells whether a full copy went to p.
func (c *core) heardLocked(p *peer, m *message, newer bool, now, at time.Time) bool {
	if !newer {
		return false
	}
	p.heard = maxTime(p.heard, at)
	sentFull := false
	if p.up && p.seenInc != 0 && m.Inc != p.seenInc && c.local != nil {
		// A new run of p (a restart within Timeout: p never went down
		// here) holds nothing of ours: like a join, it gets a full copy.
		c.sendFullLocked(p.name)
		sentFull = true
	}
	p.seenInc = m.Inc
	if f := m.format(); f != p.format {
		// a change of its versions (its feature level moved) is
		// handed over with the copy held, as a peer up is
		p.format, p.confirm = f, true
	}
	if !p.up {
		sentFull = c.peerUpLocked(p, now) || sentFull
	}
	return sentFull
}

// peerUpLocked brings p up (it was heard after it was down or unknown) and
// tells whether a full copy went to it.
func (c *core) peerUpLocked(p *peer, now time.Time) bool {
	p.up = true
	p.confirm = true
	linksUpLocked(p, now)
	c.log.Debug("peer up", zap.String("peer", p.name))
	c.emitLocked(Event{Kind: Up, Node: p.name})
	// Answer at once so that p sees us up without waiting for a beat.
	if c.local != nil {
		c.sendFullLocked(p.name)
		return true
	}
	c.sendBeatLocked(p.name)
	return false
}

// onFullLocked takes a full copy of p's data.
func (c *core) onFullLocked(p *peer, m *message) {
	if m.Inc != p.inc || p.data == nil || m.Gen > p.gen || (m.Gen == p.gen && p.suspect) {
		p.inc, p.gen, p.data = m.Inc, m.Gen, m.Node
		p.digOK, p.suspect, p.sums.ok = false, false, false
		p.cow.full()
		c.st.FullsMerged++
		c.applyPendingLocked(p)
		c.emitDataLocked(p)
	}
}

// onDeltaLocked applies a delta of p on its base, or keeps it until the
// base comes.
func (c *core) onDeltaLocked(p *peer, m *message, now time.Time) {
	switch {
	case m.Inc != p.inc || p.data == nil:
		c.gapLocked(p, m.Inc, m.Gen, now)
	case m.Gen <= p.gen:
		// stale: already covered by a full copy
	case m.Base == p.gen:
		p.applyDelta(m)
		p.gen, p.digOK = m.Gen, false
		c.st.DeltasApplied++
		c.applyPendingLocked(p)
		c.emitDataLocked(p)
	default:
		if len(p.pending) == maxPending {
			p.pending = p.pending[1:]
		}
		p.pending = append(p.pending, m)
		c.gapLocked(p, m.Inc, m.Gen, now)
	}
}

// onBeatLocked answers a probe, and takes what a beat of p says: the twins
// and the unseen members it hears, the links it hears us on, its
// generation and digest.
func (c *core) onBeatLocked(p *peer, m *message, now time.Time) {
	if m.Probe && now.Sub(p.answeredAt) >= c.s.probeAnswerEvery() {
		p.answeredAt = now
		c.st.ProbesAnswered++
		c.sendBeatLocked(p.name)
	}
	c.beatInStepLocked(now)
	c.twinOfSelfLocked(p, m.Twins)
	if !p.unseenSaid || !slices.Equal(p.unseen, m.Unseen) {
		p.unseen, p.unseenSaid = m.Unseen, true
		c.emitLocked(Event{Kind: Unseen, Node: p.name, Unseen: slices.Clone(m.Unseen)})
	}
	p.hears, p.hearsOK = m.Hear, m.Links > 0
	c.onBehindLocked(p, m, now)
	if m.Gen > 0 {
		c.gapLocked(p, m.Inc, m.Gen, now)
		c.checkDigestLocked(p, m, now)
	}
}

// onNeedLocked answers p's request for a full copy. A full copy sent less
// than gapWait ago is on its way (the answer to p coming up): under load,
// answering every request would only add to the load.
func (c *core) onNeedLocked(p *peer, sentFull bool, now time.Time) {
	if c.local != nil && !sentFull && now.Sub(p.fullAt) >= c.s.gapWait {
		c.sendFullLocked(p.name)
	}
}

// applyPendingLocked applies the waiting deltas that now fit, and forgets
// those that no longer can.
func (c *core) applyPendingLocked(p *peer) {
	for progress := true; progress; {
		progress = false
		keep := p.pending[:0]
		for _, m := range p.pending {
			switch {
			case m.Inc != p.inc || m.Gen <= p.gen:
			case m.Base == p.gen:
				p.applyDelta(m)
				p.gen, p.digOK = m.Gen, false
				c.st.DeltasApplied++
				progress = true
			default:
				keep = append(keep, m)
			}
		}
		clear(p.pending[len(keep):])
		p.pending = keep
	}
}

// checkDigestLocked compares the digest of a beat with that of the copy
// held at the same generation; a difference asks for a full copy. The
// digest of the copy is computed once per generation, at the first beat.
func (c *core) checkDigestLocked(p *peer, m *message, now time.Time) {
	if m.Dig == 0 || p.data == nil || m.Inc != p.inc || m.Gen != p.gen {
		return
	}
	if c.copyDigest(p, m.V) == m.Dig {
		return
	}
	if !p.suspect {
		c.st.DigestMismatches++
		c.log.Debug("copy differs from the peer's digest: asking for a full copy",
			zap.String("peer", p.name), zap.Uint64("gen", p.gen))
	}
	p.suspect = true
	c.needLocked(p, now)
}

// gapLocked notes that p announced (inc, gen); a gap opens if we lack it.
func (c *core) gapLocked(p *peer, inc, gen uint64, now time.Time) {
	c.noteBehindLocked(p, inc, gen, now)
	if inc == p.inc && p.data != nil && gen <= p.gen {
		if p.gapInc != inc { // a gap of another run is superseded (noteBehindLocked)
			p.gapInc, p.gapGen = inc, gen
		}
		return
	}
	if p.gapAt.IsZero() {
		p.gapAt = now
		c.kick()
	}
	if inc != p.gapInc || gen > p.gapGen {
		p.gapInc, p.gapGen = inc, gen
	}
}

// checkGapLocked closes a filled gap, or asks for a full copy when the gap
// is gapWait old (and again every gapWait, within needEvery).
func (c *core) checkGapLocked(p *peer, now time.Time) {
	c.checkBehindLocked(p, now)
	switch {
	case p.gapAt.IsZero():
	case p.inc == p.gapInc && p.data != nil && p.gen >= p.gapGen:
		p.gapAt = time.Time{}
	case now.Sub(p.gapAt) >= c.s.gapWait:
		c.needLocked(p, now)
		p.gapAt = now
	}
}

// needLocked asks p for a full copy, at most once per needEvery.
func (c *core) needLocked(p *peer, now time.Time) {
	if !p.needAt.IsZero() && now.Sub(p.needAt) < c.needEvery() {
		return
	}
	p.needAt = now
	c.st.NeedsSent++
	c.sendLocked(p.name, c.encode(&message{Kind: kindNeed, From: c.s.Node, Inc: c.inc}))
}

// tick does the work due at the clock's now: down detection, gaps, beats.
// There is no periodic full copy: a beat carries the generation and digest
// of the data, and a peer that lacks them asks (need). It is cheap to call
// early, and does nothing per service.
func (c *core) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.ticks++
	now := c.s.Clock.Now()
	c.stall.note(now, c.s)
	declared := false
	for _, name := range c.names {
		p := c.peers[name]
		c.checkGapLocked(p, now)
		c.checkTwinLocked(p, now)
		c.checkHoldLocked(p, now)
		if p.up && c.silentLocked(p, now) >= c.s.Timeout {
			p.up, p.hold = false, false // the Down ends a hold (newrun.go)
			linksDownLocked(p)
			p.forgetBehind()
			c.log.Debug("peer down", zap.String("peer", p.name),
				zap.Duration("silent", now.Sub(p.heard)), zap.Duration("stalled", c.stall.within(p.heard)), zap.Time("last_heard", p.heard))
			c.emitLocked(Event{Kind: Down, Node: p.name})
			declared = true
		}
		c.checkSilenceLocked(p, now)
		c.checkLinksLocked(p, now)
		if p.up && now.Sub(p.heard) >= c.s.probeAfter() && now.Sub(p.probedAt) >= c.s.probeEvery() {
			p.probedAt = now
			c.st.ProbesSent++
			c.sendAllLocked(p.name, c.encode(c.beatMessage(true, p)))
		}
	}
	if declared {
		// the others learn at once that this node declared a member
		// down (a beat's unseen): a takeover gate waits until every
		// live member shows the lost node down; the round's time stays
		c.sendRoundLocked()
	}
	if !now.Before(c.nextBeat) {
		if !declared {
			c.sendRoundLocked()
		}
		c.nextBeat = now.Add(c.s.beat)
	}
	c.pruneStallsLocked()
	c.drainLocked()
}

// pruneStallsLocked forgets the stalls older than every silence counted.
func (c *core) pruneStallsLocked() {
	if len(c.stall.spans) == 0 {
		return
	}
	var oldest time.Time
	anyUp := false
	for _, p := range c.peers {
		if p.up && (!anyUp || p.heard.Before(oldest)) {
			oldest, anyUp = p.heard, true
		}
	}
	c.stall.prune(oldest, anyUp)
}

// Beats in step. A node that hears a peer's beat when its own is due
// within half a beat period sends its own round at once instead of at its
// due time. The nodes' rounds then fall together, within a few network
// latencies and timer delays of each other (one round is enough with two
// nodes, two with any number: a node half a period or less from any other
// round joins it), and stay so: a node is woken about once a period, for
// its own round and its peers' beats together, where it was woken at its
// own phase and at each peer's (3 times a second on a 3-node cluster at
// hb 3s/1s; an idle daemon's CPU went down by a third). Beats only come
// earlier, never later, so nothing that counts on the period changes (the
// timeout is three of them, probes begin after a beat and a half of
// silence), and a node sends at most one round per half period (its next
// round is due a whole period after the last). The ticker, asleep until
// the due time the early round replaced, is woken to sleep again until the
// new one (kick): left asleep, it woke a few milliseconds after the round,
// once the process had gone back to wait, to find nothing due (a context
// switch a period; docs/benchmarks.md, "Idle with the quorum on").
func (c *core) beatInStepLocked(now time.Time) {
	if c.nextBeat.Sub(now) > c.s.beat/2 {
		return
	}
	c.sendRoundLocked()
	c.nextBeat = now.Add(c.s.beat)
	c.st.BeatsInStep++
	c.kick()
}

// next returns when tick has work to do next.
func (c *core) next() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.s.Clock.Now()
	t := c.nextBeat
	for _, p := range c.peers {
		if d := p.heard.Add(c.s.Timeout + c.stall.within(p.heard)); p.up && d.Before(t) {
			t = d
		}
		if p.up && now.Sub(p.heard) >= c.s.probeAfter() {
			// silent: the next probe (a silence is noticed at a tick,
			// never by a timer of its own: see probeAfter)
			if d := maxTime(now, p.probedAt.Add(c.s.probeEvery())); d.Before(t) {
				t = d
			}
		}
		if d := p.gapAt.Add(c.s.gapWait); !p.gapAt.IsZero() && d.Before(t) {
			t = d
		}
		if d := c.behindDue(p); !d.IsZero() && d.Before(t) {
			t = d
		}
		if d := c.twinDue(p); !d.IsZero() && d.Before(t) {
			t = d
		}
		if d := c.holdDue(p); !d.IsZero() && d.Before(t) {
			t = d
		}
		if d := c.linksDue(p); !d.IsZero() && d.Before(t) {
			t = d
		}
	}
	return t
}

// beatTo sends a beat to one peer now.
func (c *core) beatTo(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.tr != nil && c.peers[name] != nil {
		c.sendBeatLocked(name)
	}
}

// sendRoundLocked sends a beat to every peer. The peers reached by one
// network link get the same beat, encoded once (their beat says nothing of
// links); a peer of several links gets its own (the links it is heard on).
func (c *core) sendRoundLocked() {
	var shared []byte
	for _, name := range c.names {
		p := c.peers[name]
		if p.netLinks() >= 2 {
			c.sendBeatLocked(name)
			continue
		}
		if shared == nil {
			shared = c.encode(c.beatMessage(false, nil))
		}
		if len(shared) > maxSharedBeat {
			c.sendBeatLocked(name) // with its own echo only (echo.go)
			continue
		}
		c.sendAllLocked(name, shared)
	}
}

func (c *core) sendBeatLocked(to string) {
	// Every beat is encoded anew: its N must be newer than every message
	// sent before it, or it would not refresh our liveness (fresh.go).
	c.sendAllLocked(to, c.encode(c.beatMessage(false, c.peers[to])))
}

// beatMessage is this node's beat to p (nil: any); probe asks the
// receiver for one at once.
func (c *core) beatMessage(probe bool, to *peer) *message {
	var gen uint64
	if c.local != nil {
		gen = c.local.Gen
	}
	// the members heard, then declared down, and those never heard in a
	// whole Timeout since this run started (silent as long as a member
	// declared down): a member not heard yet right after a start is not
	// declared down, or every start would look like a split to the peers'
	// votes; one never heard for good would look heard for good, and the
	// takeover gate of its services would wait for this node for ever
	startedLongAgo := c.s.Clock.Now().Sub(c.epoch) >= c.s.Timeout
	var unseen []string
	for _, name := range c.names {
		if p := c.peers[name]; !p.up && (!p.heard.IsZero() || startedLongAgo) {
			unseen = append(unseen, name)
		}
	}
	m := &message{Kind: kindBeat, From: c.s.Node, Inc: c.inc, Gen: gen, Dig: c.dig, Unseen: unseen, Probe: probe, Twins: c.twinsLocked(),
		Ack: c.acksLocked(to), Heard: c.heardAcksLocked(to)}
	if to != nil {
		m.Hear, m.Links = c.hearMaskLocked(to)
		if m.Links > 0 {
			now := c.s.Clock.Now()
			m.Behind, m.DHear = c.behindSaysLocked(to, now), c.dataMaskLocked(to, now)
		}
	}
	return m
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// needEvery is the least time between two requests for a full copy to one
// peer: long enough for a full copy to arrive on a loaded host, short
// enough to repair soon when a request or its answer was lost.
func (c *core) needEvery() time.Duration {
	return max(4*c.s.gapWait, min(c.s.beat/2, time.Second))
}

func (c *core) sendFullLocked(to string) {
	c.peers[to].fullAt = c.s.Clock.Now()
	if c.full == nil {
		c.full = c.encode(&message{Kind: kindFull, From: c.s.Node, Inc: c.inc, Gen: c.local.Gen, Node: c.local})
	}
	c.st.FullsSent++
	c.sendLocked(to, c.full)
}

// sendLocked sends b to one live link of to (dataLinkLocked), or to every
// network link when one passes beats but not data (degraded.go).
func (c *core) sendLocked(to string, b []byte) {
	if c.s.Mute != nil && c.s.Mute() {
		return
	}
	p := c.peers[to]
	now := c.s.Clock.Now()
	if c.allLinksLocked(p, now) {
		for i, l := range p.links {
			if !l.external {
				l.sentDataAt = now
				c.st.Sent++
				c.st.BytesSent += uint64(len(b))
				c.tr.send(to, i, b)
			}
		}
		return
	}
	c.st.Sent++
	c.st.BytesSent += uint64(len(b))
	i := c.dataLinkLocked(p)
	if i < len(p.links) {
		p.links[i].sentDataAt = now
	}
	c.tr.send(to, i, b)
}

// reject counts traffic refused by decode. src is a member name or a
// remote address; reason never holds the secret.
func (c *core) reject(src, reason string) {
	c.refuse(src, Event{Kind: Rejected, Node: src, Reason: reason})
}

// refuse counts a frame refused by the transport and reports ev (Rejected
// or Impostor), at most once per rejectLogEvery per key.
func (c *core) refuse(key string, ev Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.refuseLocked(key, ev)
		c.drainLocked()
	}
}

func (c *core) rejectLocked(src, reason string) {
	c.refuseLocked(src, Event{Kind: Rejected, Node: src, Reason: reason})
}

// maxRejectEvents bounds the events of refusals per rejectLogEvery over all
// keys: spoofed source addresses cannot flood the log either.
const maxRejectEvents = 20

func (c *core) refuseLocked(key string, ev Event) {
	if ev.Kind == Rejected {
		c.st.Rejected++
	}
	now := c.s.Clock.Now()
	if last, ok := c.rejLast[key]; ok && now.Sub(last) < rejectLogEvery {
		return
	}
	if now.Sub(c.rejWindow) >= rejectLogEvery {
		if c.rejHidden > 0 {
			ev.Reason += fmt.Sprintf(" (and %d more refusals from other sources not reported)", c.rejHidden)
		}
		c.rejWindow, c.rejShown, c.rejHidden = now, 0, 0
	}
	if c.rejShown >= maxRejectEvents {
		c.rejHidden++
		return
	}
	c.rejShown++
	if len(c.rejLast) > 1024 {
		for k, t := range c.rejLast {
			if now.Sub(t) >= rejectLogEvery {
				delete(c.rejLast, k)
			}
		}
	}
	c.rejLast[key] = now
	c.log.Debug("rejected heartbeat traffic", zap.String("kind", ev.Kind.String()), zap.String("from", ev.Node),
		zap.String("addr", ev.Addr), zap.String("reason", ev.Reason))
	c.emitLocked(ev)
}

func (c *core) emitDataLocked(p *peer) {
	p.confirm = false
	d, ch := p.emitCopy()
	c.emitLocked(Event{Kind: Data, Node: p.name, Data: d, Changes: ch})
}

// emitLocked queues ev. A Data event replaces a pending Data event of the
// same node when nothing about that node was queued after it (its changes
// then add up: the replaced event's Base is the last one handed over).
func (c *core) emitLocked(ev Event) {
	if ev.Kind == Data {
		for i := len(c.backlog) - 1; i >= 0; i-- {
			if c.backlog[i].Node == ev.Node {
				if c.backlog[i].Kind == Data {
					ev.Changes = c.backlog[i].Changes.Then(ev.Changes)
					c.backlog[i] = ev
					return
				}
				break
			}
		}
	}
	c.backlog = append(c.backlog, ev)
}

// drainLocked moves the backlog into the channel without blocking.
func (c *core) drainLocked() {
	i := 0
	for ; i < len(c.backlog); i++ {
		select {
		case c.events <- c.backlog[i]:
		default:
			c.backlog = append(c.backlog[:0], c.backlog[i:]...)
			return
		}
	}
	c.backlog = c.backlog[:0]
}

func (c *core) peerList() []Peer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Peer, 0, len(c.names))
	for _, name := range c.names {
		p := c.peers[name]
		out = append(out, Peer{Name: p.name, Addr: p.addr, Up: p.up, LastHeard: p.heard, Gen: p.gen, Run: p.seenInc,
			Stale: p.stale, AnnouncedGen: p.annGen, BehindSince: p.behindAt, Duplicate: p.twin, Links: c.linkStatus(p)})
	}
	return out
}

func (c *core) stats() Stats {
	c.mu.Lock()
	st := c.st
	st.Stalls, st.Stalled = c.stall.count, c.stall.total
	c.mu.Unlock()
	st.Dropped = c.dropped.Load()
	st.SendErrors = c.sendErrs.Load()
	st.Replayed, st.WrongSource = c.replayed.Load(), c.wrongSrc.Load()
	st.NotOwnKey = c.notOwnKey.Load()
	st.StreamsRefused, st.Unconfirmed = c.refused.Load(), c.unconfirmed.Load()
	return st
}

// farewell sends every live peer a full copy of the local dataset, at a
// graceful close, after the last Publish: that Publish went out as a
// delta, which a peer that lost the delta before it (or has not taken
// the full copy of this run yet) holds as a gap, and the full copy it
// would ask for would come from a node that has closed. The last data
// of a stopping node says what it leaves behind (shutting, maintenance):
// peers must not miss it. One full copy per peer, once per run.
func (c *core) farewell() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.local == nil {
		return
	}
	for _, name := range c.names {
		if c.peers[name].up {
			c.sendFullLocked(name)
		}
	}
}

// shutdown stops the core and closes the Events channel.
func (c *core) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.events)
		c.wake.Close()
	}
}

// localState is the frame memberlist's push/pull carries: a full copy, or a
// beat before the first Publish.
func (c *core) localState() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.local == nil {
		return c.encode(&message{Kind: kindBeat, From: c.s.Node, Inc: c.inc})
	}
	if c.full == nil {
		c.full = c.encode(&message{Kind: kindFull, From: c.s.Node, Inc: c.inc, Gen: c.local.Gen, Node: c.local})
	}
	return c.full
}
