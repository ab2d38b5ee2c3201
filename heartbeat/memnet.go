package heartbeat

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"haven/dataset"
	"haven/internal/clock"
)

// MemNetwork is an in-memory network of heartbeats sharing one process and
// one clock, for tests and the in-process simulation.
//
// Delivery is deterministic: a frame is queued when sent and delivered, in
// FIFO order and with zero latency, by the next Flush. Every entry point that
// can send (Join, Publish, Close, Tick, Advance) flushes before it returns, so
// an event caused by a Publish is on the receivers' Events channels when
// Publish returns. Timers do not run by themselves: Tick runs the work due at
// the clock's now on every node, and Advance moves a settable (fake) clock
// from one due time to the next, so simulated hours take milliseconds.
//
// Nodes with a different ClusterName or Secret do not understand each other:
// their frames are rejected by the receiver (counted, Rejected event), as
// memberlist rejects a wrong key or label.
type MemNetwork struct {
	clk clock.Clock

	mu      sync.Mutex
	nodes   map[string]*memHB
	queue   []memFrame
	cut     map[[2]string]bool                   // Partition: from -> to is cut
	drop    map[[2]string]bool                   // Drop: from -> to loses everything
	lose    func(from, to string, b []byte) bool // Lose: per-frame loss, nil when none
	crashed map[string]bool
	// onWire: the frames a crashed node sent before it crashed that a
	// delayed link holds still arrive (Kill)
	onWire   map[string]bool
	flushing bool
	// delay holds the frames of a link for a while (SetDelay); held are
	// the frames sent on a delayed link, not yet due, in sending order;
	// lastDue keeps each link FIFO.
	delay   map[[2]string]time.Duration
	held    []memFrame
	lastDue map[[2]string]time.Time
	// withhold picks the frames an on-path attacker holds back on a link
	// (Withhold); withheld are those frames, in sending order.
	withhold map[[2]string]func(b []byte) bool
	withheld []memFrame
	// linkCut: CutLink, the frames from or to the node on the link are lost
	linkCut map[memLink]bool
	// beatsOnly: BeatsOnly, only the beats from or to the node on the
	// link pass
	beatsOnly map[memLink]bool
	// paused: Pause, the node's timers stop and the frames sent to it
	// wait in parked (its socket's buffer), in sending order
	paused map[string]bool
	parked []memFrame
}

// memLink is one network link of one node.
type memLink struct {
	node string
	link int
}

type memFrame struct {
	sender *memHB
	to     string
	link   int
	b      []byte
	due    time.Time // zero: at the next Flush
	wire   bool      // it was held on a delayed link (on the wire)
}

// NewMemNetwork returns an empty network driven by clk. Advance needs a
// clock with a Set method (*clock.Fake); Tick works with any clock.
func NewMemNetwork(clk clock.Clock) *MemNetwork {
	return &MemNetwork{
		clk:     clk,
		nodes:   map[string]*memHB{},
		cut:     map[[2]string]bool{},
		drop:    map[[2]string]bool{},
		crashed: map[string]bool{},
		onWire:  map[string]bool{},
		delay:   map[[2]string]time.Duration{},
		lastDue: map[[2]string]time.Time{},

		withhold:  map[[2]string]func(b []byte) bool{},
		linkCut:   map[memLink]bool{},
		beatsOnly: map[memLink]bool{},
		paused:    map[string]bool{},
	}
}

// Pause(node, true) stops node's timers and keeps every frame sent to it
// for later, as the socket of a process that is not scheduled does
// (SIGSTOP, a paused VM, a starved host). Pause(node, false) resumes it in
// the unlucky order: its tick runs first, at the clock's now, before the
// frames kept for it are delivered (in sending order).
func (n *MemNetwork) Pause(node string, on bool) {
	n.mu.Lock()
	if on {
		n.paused[node] = true
		n.mu.Unlock()
		return
	}
	delete(n.paused, node)
	h := n.nodes[node]
	var mine, keep []memFrame
	for _, f := range n.parked {
		if f.to == node {
			mine = append(mine, f)
		} else {
			keep = append(keep, f)
		}
	}
	n.parked = keep
	n.mu.Unlock()
	if h != nil {
		h.c.tick()
	}
	n.mu.Lock()
	n.queue = append(mine, n.queue...)
	n.mu.Unlock()
	n.Flush()
}

// CutLink cuts (on) or restores network link (0-based) of node: every
// frame sent from or to node on that link is lost, both ways (a NIC or a
// switch port down). Heal restores every link.
func (n *MemNetwork) CutLink(node string, link int, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on {
		n.linkCut[memLink{node, link}] = true
	} else {
		delete(n.linkCut, memLink{node, link})
	}
}

// BeatsOnly makes network link (0-based) of node pass only beats, from
// and to node, while on (an MTU fault that passes small frames only, or
// an attacker on that link who passes the beats and drops the rest). Heal
// restores every link.
func (n *MemNetwork) BeatsOnly(node string, link int, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on {
		n.beatsOnly[memLink{node, link}] = true
	} else {
		delete(n.beatsOnly, memLink{node, link})
	}
}

// beatOnlyLost tells whether f is lost on a link that passes only beats.
// Called with n.mu held.
func (n *MemNetwork) beatOnlyLost(f memFrame) bool {
	if !n.beatsOnly[memLink{f.sender.name, f.link}] && !n.beatsOnly[memLink{f.to, f.link}] {
		return false
	}
	m, err := decode(f.b)
	return err != nil || m.Kind != kindBeat
}

// Redeliver delivers b to node to again as sent by from on link (a frame
// replayed by someone on the path, on any link).
func (n *MemNetwork) Redeliver(from, to string, link int, b []byte) {
	n.mu.Lock()
	dst := n.nodes[to]
	live := dst != nil && !dst.closed && !n.crashed[to]
	n.mu.Unlock()
	if live {
		dst.c.receiveFrom(from, link, b)
	}
	n.Flush()
}

// Withhold puts an on-path attacker without the secret on the link from ->
// to: the frames for which pick returns true are held back, the others pass
// (nil stops holding). The held frames stay authentic: ReleaseHeld delivers
// them later, even after their sender crashed.
func (n *MemNetwork) Withhold(from, to string, pick func(b []byte) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if pick == nil {
		delete(n.withhold, [2]string{from, to})
	} else {
		n.withhold[[2]string{from, to}] = pick
	}
}

// ReleaseHeld delivers the frames held back into to, newest first, and
// returns how many. to must be running.
func (n *MemNetwork) ReleaseHeld(to string) int {
	n.mu.Lock()
	var out, keep []memFrame
	for _, f := range n.withheld {
		if f.to == to {
			out = append(out, f)
		} else {
			keep = append(keep, f)
		}
	}
	n.withheld = keep
	dst := n.nodes[to]
	live := dst != nil && !dst.closed && !n.crashed[to]
	n.mu.Unlock()
	for i := len(out) - 1; i >= 0 && live; i-- {
		dst.c.receiveFrom(out[i].sender.name, out[i].link, out[i].b)
	}
	n.Flush()
	return len(out)
}

// SetDelay makes every frame sent from -> to arrive d after it was sent
// (the frames of one link keep their order); 0 removes the delay. Frames
// already held keep their due time. Advance stops at each due time.
func (n *MemNetwork) SetDelay(from, to string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d > 0 {
		n.delay[[2]string{from, to}] = d
	} else {
		delete(n.delay, [2]string{from, to})
	}
}

// heldDue is the earliest due time of the held frames (zero: none). Called
// with n.mu held.
func (n *MemNetwork) heldDue() time.Time {
	var t time.Time
	for _, f := range n.held {
		if t.IsZero() || f.due.Before(t) {
			t = f.due
		}
	}
	return t
}

// Join starts a node on the network. cfg.Clock is replaced by the network's
// clock; the bind and advertise fields are ignored. Joining a name that is
// already on the network replaces that node (a restart after Crash).
func (n *MemNetwork) Join(cfg Config) (Heartbeat, error) {
	cfg.Clock = n.clk
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	h := &memHB{net: n, name: s.Node, cred: s.ClusterName + "\x00" + s.Secret, addr: s.self().Addr}
	h.c = newCore(s)
	h.c.tr = h
	n.mu.Lock()
	if old := n.nodes[s.Node]; old != nil {
		old.closed = true
	}
	n.nodes[s.Node] = h
	delete(n.crashed, s.Node)
	delete(n.onWire, s.Node)
	n.mu.Unlock()
	h.c.tick()
	n.Flush()
	return h, nil
}

// Partition cuts every link between a node of a and a node of b, both ways.
func (n *MemNetwork) Partition(a, b []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			n.cut[[2]string{x, y}] = true
			n.cut[[2]string{y, x}] = true
		}
	}
}

// Heal removes every partition and drop (crashed nodes stay crashed).
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	clear(n.drop)
	clear(n.linkCut)
	clear(n.beatsOnly)
}

// Drop makes the link from -> to lose every frame while on.
func (n *MemNetwork) Drop(from, to string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on {
		n.drop[[2]string{from, to}] = true
	} else {
		delete(n.drop, [2]string{from, to})
	}
}

// Lose makes every frame for which lose returns true lost (nil: none).
// It is called in sending order, with the network's lock held: it must not
// call the network.
func (n *MemNetwork) Lose(lose func(from, to string, b []byte) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lose = lose
}

// Crash stops node: nothing is delivered to or from it any more and its
// timers stop, without a clean leave. Join the same name to restart it.
func (n *MemNetwork) Crash(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.crashed[node] = true
}

// Kill is Crash, except that the frames node sent before, which a delayed
// link (SetDelay) still holds, arrive when due: they are on the wire (an
// attacker on the path delivers what it held back after the sender died).
func (n *MemNetwork) Kill(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.crashed[node] = true
	n.onWire[node] = true
}

// Flush delivers every queued frame, including those sent while delivering.
// A Flush called while another runs returns at once (the running one
// delivers the new frames).
func (n *MemNetwork) Flush() {
	n.mu.Lock()
	if n.flushing {
		n.mu.Unlock()
		return
	}
	n.flushing = true
	if len(n.held) > 0 {
		// the held frames now due go first, in sending order
		now := n.clk.Now()
		var due, keep []memFrame
		for _, f := range n.held {
			if f.due.After(now) {
				keep = append(keep, f)
			} else {
				f.due, f.wire = time.Time{}, true
				due = append(due, f)
			}
		}
		n.held = keep
		n.queue = append(due, n.queue...)
	}
	for len(n.queue) > 0 {
		f := n.queue[0]
		n.queue[0] = memFrame{}
		n.queue = n.queue[1:]
		from := f.sender.name
		dst := n.nodes[f.to]
		ok := dst != nil && !dst.closed && !f.sender.closed && n.nodes[from] == f.sender &&
			(!n.crashed[from] || f.wire && n.onWire[from]) && !n.crashed[f.to] &&
			!n.cut[[2]string{from, f.to}] && !n.drop[[2]string{from, f.to}] &&
			!n.linkCut[memLink{from, f.link}] && !n.linkCut[memLink{f.to, f.link}] && !n.beatOnlyLost(f) &&
			(n.lose == nil || !n.lose(from, f.to, f.b))
		if pick := n.withhold[[2]string{from, f.to}]; ok && pick != nil && pick(f.b) {
			n.withheld = append(n.withheld, f)
			ok = false
		}
		if ok && n.paused[f.to] {
			n.parked = append(n.parked, f)
			ok = false
		}
		n.mu.Unlock()
		switch {
		case !ok:
		case dst.cred != f.sender.cred:
			dst.c.reject(f.sender.addr, "cannot authenticate the frame (wrong cluster secret or name)")
		default:
			dst.c.receiveFrom(from, f.link, f.b)
		}
		n.mu.Lock()
	}
	n.queue = nil
	n.flushing = false
	n.mu.Unlock()
}

// Tick runs the work due at the clock's now on every live node, then flushes.
func (n *MemNetwork) Tick() {
	for _, h := range n.live() {
		h.c.tick()
	}
	n.Flush()
}

// Advance moves the network's clock forward by d, stopping at every time a
// node has work due (beats, gaps, timeouts) to Tick. The clock must
// have a Set method, as *clock.Fake does.
func (n *MemNetwork) Advance(d time.Duration) {
	setter, ok := n.clk.(interface{ Set(time.Time) })
	if !ok {
		panic(fmt.Sprintf("heartbeat: MemNetwork.Advance needs a settable clock, not %T", n.clk))
	}
	end := n.clk.Now().Add(d)
	stuck := 0
	for {
		now := n.clk.Now()
		next := end
		for _, h := range n.live() {
			if t := h.c.next(); t.Before(next) {
				next = t
			}
		}
		n.mu.Lock()
		if t := n.heldDue(); !t.IsZero() && t.Before(next) {
			next = t
		}
		n.mu.Unlock()
		if next.After(now) {
			stuck = 0
		} else if stuck++; stuck > 1 {
			// A tick always moves a node's next due time past now; this
			// only guards against looping forever on a bug.
			if next = now.Add(time.Millisecond); next.After(end) {
				next = end
			}
		}
		setter.Set(next)
		n.Tick()
		if !n.clk.Now().Before(end) {
			return
		}
	}
}

// live returns the running nodes sorted by name.
func (n *MemNetwork) live() []*memHB {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*memHB
	for name, h := range n.nodes {
		if !h.closed && !n.crashed[name] && !n.paused[name] {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// memHB is one node of a MemNetwork.
type memHB struct {
	net  *MemNetwork
	c    *core
	name string
	cred string // cluster name and secret: frames of another cred are refused
	addr string

	closed bool // guarded by net.mu
}

func (h *memHB) send(to string, link int, b []byte) {
	n := h.net
	n.mu.Lock()
	pair := [2]string{h.name, to}
	if d := n.delay[pair]; d > 0 || n.lastDue[pair].After(n.clk.Now()) {
		due := n.clk.Now().Add(d)
		if last := n.lastDue[pair]; last.After(due) {
			due = last
		}
		n.lastDue[pair] = due
		n.held = append(n.held, memFrame{sender: h, to: to, link: link, b: b, due: due})
	} else {
		n.queue = append(n.queue, memFrame{sender: h, to: to, link: link, b: b})
	}
	n.mu.Unlock()
}

func (h *memHB) Publish(d dataset.Node) {
	h.c.publish(d)
	h.net.Flush()
}

func (h *memHB) Events() <-chan Event { return h.c.events }
func (h *memHB) NoteLinkAlive(peer, link string) {
	h.c.noteLinkAlive(peer, link)
	h.net.Flush()
}
func (h *memHB) Peers() []Peer                 { return h.c.peerList() }
func (h *memHB) Acked(peer string) (Ack, bool) { return h.c.acked(peer) }
func (h *memHB) AckedNotify() <-chan struct{}  { return h.c.ackNote }
func (h *memHB) Stats() Stats                  { return h.c.stats() }
func (h *memHB) Ask(to, op string, body json.RawMessage) (uint64, error) {
	return h.c.ask(to, op, body)
}
func (h *memHB) Answer(to string, id uint64, body json.RawMessage, errText string) {
	h.c.answer(to, id, body, errText)
}

// Close delivers what the node sent last, then stops it.
func (h *memHB) Close() error {
	h.c.farewell()
	h.net.Flush()
	h.net.mu.Lock()
	h.closed = true
	h.net.mu.Unlock()
	h.c.shutdown()
	return nil
}
