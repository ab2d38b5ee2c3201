package heartbeat

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Freshness proved by echoes. The lag rule (fresh.go) infers that a
// message is timely from the sender's own clock: a message whose lag is
// at most lateMax above the least lag of its run. An attacker on the path
// who delays a peer's frames a little more every minute moves that least
// lag along (it is kept over 10 to 20 hb.timeout): a delay growing by 1 s
// every 75 s was never late, and after kill -9 of the peer at a 5.4 s lag
// the frames held on the path kept it up for 8.3 s instead of hb.timeout.
//
// So every beat now echoes, for each member it heard, the newest message
// of that member's run it received and how long ago (the message's order
// number N, and the time it was held by the sender's clock). A node knows
// when it encoded each of its recent messages (sentRing); a beat echoing
// one of them, encoded at s and held for h by the peer, was sent at or
// after s + h on this node's clock (allowing a thousandth of h for the
// rates of the two clocks): its age when it arrives is proved, not
// inferred. For a message carrying such a proof, whatever its lag:
//
//   - it refreshes the peer's liveness only if that age is at most twice
//     lateMax (a round trip of the path, the peer's holding time taken
//     out); a longer delay is a cut (an attacker on the path can always
//     cut); a run whose clock stood still (a suspended host) is measured
//     again at once;
//   - the peer counts as heard at its arrival less what the age has
//     beyond lateMax: a dead peer is declared down at most hb.timeout +
//     lateMax after its last beat was sent, however long the path held
//     its frames.
//
// A message of a run that proves its beats but carries no proof itself
// (data) counts as old as the last proved age of its run. A beat without
// a proof (the peer has not heard this run yet, or echoes a message older
// than sentRing remembers: it has not heard this node for a while, a
// one-way loss) is judged by the lag rule alone, as before. A peer of an
// older version sends no echo and is judged by the lag rule; an older
// node ignores the field: nothing waits for the cluster feature level.
// In the in-memory network (no latency) the age is zero: nothing changes.
//
// The echo is also what a lease may anchor on (Heartbeat.Acked): the
// newest message of this node that a peer acknowledged, when it was sent.

// provedLate tells whether a message proved to be delay older than its
// arrival is too late to refresh its sender's liveness: a round trip (the
// peer's holding time taken out) of more than twice lateMax.
func (s settings) provedLate(delay time.Duration) bool { return delay > 2*s.lateMax() }

// provedHeard is when a message received at now, proved to be delay older,
// counts as heard: its arrival, less what the delay has beyond lateMax.
func (s settings) provedHeard(now time.Time, delay time.Duration) time.Time {
	return now.Add(-max(0, delay-s.lateMax()))
}

// sentRing is how many of its last messages a node remembers the sending
// time of (a message's N indexes it).
const sentRing = 4096

// maxSharedBeat is the size above which a round of beats is encoded for
// each peer, each with its own echo only (a 32-node cluster with long
// names), so that beats stay single datagrams.
const maxSharedBeat = 1100

// Ack is the newest message of this node that a peer acknowledged in one
// of its beats.
type Ack struct {
	// N is the message's order number (this run).
	N uint64
	// Sent is when this node encoded it, by its Config.Clock (the
	// monotonic clock with the real one).
	Sent time.Time
	// Heard is when the beat acknowledging it arrived.
	Heard time.Time
}

// echo is the newest message of a peer's run received, for the echo in
// this node's beats.
type echo struct {
	inc, n uint64
	at     time.Time
}

// echoes are the echo of a beat, sorted by name; on the wire an object
// {"n2": [N, held]}.
type echoes []echoOf

// echoOf is the echo of one member's message: its N, and how long ago it
// was received (nanoseconds of the echoing node's clock).
type echoOf struct {
	Name    string
	N, Held uint64
}

// get returns the echo of name.
func (es echoes) get(name string) (echoOf, bool) {
	i, ok := slices.BinarySearchFunc(es, name, func(e echoOf, n string) int { return strings.Compare(e.Name, n) })
	if !ok {
		return echoOf{}, false
	}
	return es[i], true
}

func (es echoes) MarshalJSON() ([]byte, error) {
	if es == nil {
		return []byte("null"), nil
	}
	m := make(map[string][2]uint64, len(es))
	for _, e := range es {
		m[e.Name] = [2]uint64{e.N, e.Held}
	}
	return json.Marshal(m)
}

func (es *echoes) UnmarshalJSON(b []byte) error {
	var m map[string][2]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		*es = nil
		return nil
	}
	out := make(echoes, 0, len(m))
	for k, v := range m {
		out = append(out, echoOf{Name: k, N: v[0], Held: v[1]})
	}
	slices.SortFunc(out, func(a, b echoOf) int { return strings.Compare(a.Name, b.Name) })
	*es = out
	return nil
}

// proof is what a message's echo proves: it was sent at or after at.
type proof struct {
	at time.Time
	ok bool
}

// nBase is the first order number of run inc: the runs of a node number
// their messages from different places (a peer's echo of an earlier run
// matches nothing this run sent).
func nBase(inc uint64) uint64 {
	z := inc + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return 1 + z&(1<<40-1)
}

// noteSentLocked remembers that message n was encoded at t (since epoch).
func (c *core) noteSentLocked(n uint64, t time.Duration) {
	c.sent[n%sentRing] = t
}

// sentAtLocked is when this run encoded message n (false: not one of its
// last sentRing messages).
func (c *core) sentAtLocked(n uint64) (time.Time, bool) {
	if n <= c.nBase || n > c.nLast || c.nLast-n >= sentRing {
		return time.Time{}, false
	}
	return c.epoch.Add(c.sent[n%sentRing]), true
}

// echoOfLocked notes that message m of p, newer than every one heard of
// its run, was received now: this node's beats echo the newest of p's
// newest run.
func (c *core) echoOfLocked(p *peer, m *message, now time.Time) {
	if m.Inc >= p.echo.inc {
		p.echo = echo{inc: m.Inc, n: m.N, at: now}
	}
}

// heardOfLocked notes that message m of p, newer than every one heard of
// its run, was counted as heard at its arrival, now.
func (c *core) heardOfLocked(p *peer, m *message, now time.Time) {
	if m.Inc >= p.hecho.inc {
		p.hecho = echo{inc: m.Inc, n: m.N, at: now}
	}
}

// acksLocked is the echo of this node's beat to p (nil: to every peer),
// sorted by name.
func (c *core) acksLocked(to *peer) echoes {
	return c.echoesLocked(to, func(p *peer) echo { return p.echo })
}

// heardAcksLocked is the echo of the messages counted as heard at their
// arrival (message.Heard) of this node's beat to p (nil: to every peer).
func (c *core) heardAcksLocked(to *peer) echoes {
	return c.echoesLocked(to, func(p *peer) echo { return p.hecho })
}

// echoesLocked is acksLocked of the echo of.
func (c *core) echoesLocked(to *peer, of func(*peer) echo) echoes {
	now := c.s.Clock.Now()
	var out echoes
	add := func(p *peer) {
		e := of(p)
		if e.n == 0 {
			return
		}
		if out == nil {
			out = make(echoes, 0, len(c.names))
		}
		out = append(out, echoOf{Name: p.name, N: e.n, Held: uint64(max(0, now.Sub(e.at)))})
	}
	if to != nil {
		add(to)
		return out
	}
	for _, name := range c.names {
		add(c.peers[name])
	}
	return out
}

// proofLocked is what m's echo of this node proves, and records the
// acknowledgement (Acked).
func (c *core) proofLocked(p *peer, m *message, now time.Time) proof {
	e, ok := m.Ack.get(c.s.Node)
	if !ok {
		return proof{}
	}
	sent, ok := c.sentAtLocked(e.N)
	if !ok {
		return proof{}
	}
	held := time.Duration(min(e.Held, 1<<62))
	at := sent.Add(held + held/1000)
	if at.After(now) {
		if at.Sub(now) > c.s.lateMax() {
			return proof{} // held longer than since it was sent: not this node's message
		}
		at = now
	}
	if len(m.Heard) > 0 {
		p.sendsHeard = true
	}
	h, ok := m.Heard.get(c.s.Node)
	if !ok && !p.sendsHeard {
		// a member of an earlier release acknowledges no message as
		// heard: its plain echo stands in (it echoes a late message
		// too: docs/behaviour.md 3.1)
		h, ok = e, true
	}
	if ok && h.N > p.ack.N {
		// acknowledged as heard at its arrival (Acked): only such an
		// echo anchors the guard's lease
		if hs, ok := c.sentAtLocked(h.N); ok {
			p.ack = Ack{N: h.N, Sent: hs, Heard: now}
			select {
			case c.ackNote <- struct{}{}:
			default: // one is waiting already
			}
		}
	}
	return proof{at: at, ok: true}
}

// acked: see Heartbeat.Acked.
func (c *core) acked(name string) (Ack, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peers[name]
	if p == nil || p.ack.N == 0 {
		return Ack{}, false
	}
	return p.ack, true
}
