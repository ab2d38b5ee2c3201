package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"

	"haven/dataset"
)

// Frames waiting for one peer, per path; beyond it frames are dropped and
// counted (the next beat shows the gap, a full copy repairs).
const (
	dgramDepth  = 256
	streamDepth = 8
)

// mlHB is a Heartbeat over hashicorp/memberlist.
type mlHB struct {
	s   settings
	c   *core
	ml  *memberlist.Memberlist
	tr  *secTransport
	log *zap.Logger

	udpMax int // frames up to this size go as one datagram, larger ones by TCP
	// senders are the queues of each peer, one per network link
	senders map[string][]*peerSender
	// direct is set once memberlist runs: from then on a datagram to a
	// peer addressed by IP, with none queued before it, goes out from the
	// caller (send).
	direct atomic.Bool

	stop      chan struct{}
	loops     sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// peerSender sends the frames of one peer off the caller's path, in order
// per path. Datagrams and streams have their own queue and goroutine so that
// beats never wait behind a slow TCP send (head-of-line blocking would make
// a loaded peer look silent).
type peerSender struct {
	name, addr    string
	dgram, stream chan []byte
	done          sync.WaitGroup
	// literal: addr's host is an IP address, a datagram to it needs no
	// name lookup (which could block the caller); ap is that address
	literal bool
	ap      netip.AddrPort
	lastErr atomic.Int64 // unix nanoseconds of the last "send failed" line
}

// NewMemberlist starts a heartbeat on memberlist: it binds its UDP and TCP
// listeners, then joins the other members in the background and keeps
// re-joining those it does not see, so that start order does not matter and
// partitions heal. It refuses to start without a Secret unless Insecure.
func NewMemberlist(cfg Config) (Heartbeat, error) {
	return newMemberlist(cfg, nil)
}

// newMemberlist is NewMemberlist; tap (tests) sees every sealed byte sent.
func newMemberlist(cfg Config, tap func(conn net.Conn, to string, b []byte)) (Heartbeat, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if s.key == nil && !s.Insecure {
		return nil, errors.New("heartbeat: the cluster has no secret: set one (64 hex characters) to authenticate the heartbeat traffic")
	}
	h := &mlHB{s: s, c: newCore(s), senders: map[string][]*peerSender{}, stop: make(chan struct{})}
	h.c.tr = h
	h.log = s.Logger.With(zap.String("node", s.Node))
	if s.key == nil {
		h.log.Warn("INSECURE: no cluster secret, heartbeat frames are checked against damage only; anyone who can reach the heartbeat port can join, forge and replay traffic (tests only)")
	}
	mc, err := h.memberlistConfig()
	if err != nil {
		return nil, err
	}
	// Datagrams carry our envelope: memberlist fills less, so that a sealed
	// datagram still fits one Ethernet frame.
	mc.UDPBufferSize -= headerLen(s.Node) + tagSize
	h.udpMax = mc.UDPBufferSize - 96
	// The queues exist before the transport listens: it may make the core
	// send (a beat after a challenge) before memberlist runs.
	for _, m := range s.Members {
		if m.Name != s.Node {
			for _, l := range newLinks(s.self(), m) {
				ap, err := netip.ParseAddrPort(l.addr)
				h.senders[m.Name] = append(h.senders[m.Name], &peerSender{name: m.Name, addr: l.addr, literal: err == nil, ap: ap,
					dgram: make(chan []byte, dgramDepth), stream: make(chan []byte, streamDepth)})
			}
		}
	}
	h.tr, err = newSecTransport(s, h.c, mc.BindAddr, mc.BindPort, tap)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: listen on %s:%d: %w", mc.BindAddr, mc.BindPort, err)
	}
	mc.Transport = h.tr
	h.ml, err = memberlist.Create(mc)
	if err != nil {
		h.tr.Shutdown()
		return nil, fmt.Errorf("heartbeat: start memberlist on %s:%d: %w", mc.BindAddr, mc.BindPort, err)
	}
	for _, pss := range h.senders {
		for _, ps := range pss {
			ps.done.Add(2)
			go h.runSender(ps, ps.dgram)
			go h.runSender(ps, ps.stream)
		}
	}
	h.direct.Store(true)
	h.loops.Add(2)
	go h.runTicker()
	go h.runJoiner()
	return h, nil
}

// memberlistConfig tunes memberlist for our liveness rule (see doc.go).
func (h *mlHB) memberlistConfig() (*memberlist.Config, error) {
	s := h.s
	mc := memberlist.DefaultLANConfig()
	mc.Name = s.Node
	self := s.self()
	host, port, err := splitHostPort(self.Addr)
	if err != nil && (s.BindPort == 0 || s.AdvertiseAddr == "") {
		return nil, fmt.Errorf("heartbeat: member %s address %q: %w", s.Node, self.Addr, err)
	}
	mc.BindAddr, mc.BindPort = s.BindAddr, s.BindPort
	if mc.BindAddr == "" {
		mc.BindAddr = "0.0.0.0"
	}
	if mc.BindPort == 0 {
		mc.BindPort = port
	}
	mc.AdvertiseAddr, mc.AdvertisePort = s.AdvertiseAddr, s.AdvertisePort
	if mc.AdvertiseAddr == "" && net.ParseIP(host) != nil {
		mc.AdvertiseAddr = host
	}
	if mc.AdvertisePort == 0 {
		mc.AdvertisePort = port
	}
	// Our transport authenticates every byte (envelope.go): memberlist's
	// own encryption does not authenticate its version byte (a flipped
	// byte made it panic), and neither it nor its label stops replays.
	mc.Label, mc.SecretKey = "", nil
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = false, false
	mc.Delegate = mlDelegate{h.c}
	mc.Logger = log.New(&mlLogWriter{log: h.log.Named("memberlist")}, "", 0)

	// Memberlist is only our framing (datagrams, TCP user messages, the
	// push/pull of a join): liveness is the core's rule, on our beats, and
	// every send goes to the address in cluster.toml whatever memberlist
	// believes. So none of its periodic work runs: no probes (its failure
	// detector), no gossip of membership, no periodic push/pull of the full
	// state over TCP. Each cost CPU and bytes on every idle node for nothing
	// we use (docs/benchmarks-archive.md, "Idle cost").
	mc.ProbeInterval = 0
	mc.GossipInterval = 0
	mc.PushPullInterval = 0
	mc.AwarenessMaxMultiplier = 1
	mc.DeadNodeReclaimTime = s.Timeout // a restarted node may come back from a new address
	mc.TCPTimeout = clampDur(s.Timeout/4, time.Second, 10*time.Second)
	mc.EnableCompression = false
	return mc, nil
}

func (h *mlHB) send(to string, link int, b []byte) {
	pss := h.senders[to]
	if len(pss) == 0 {
		return
	}
	ps := pss[min(max(link, 0), len(pss)-1)]
	q := ps.dgram
	if len(b) > h.udpMax {
		q = ps.stream
	} else if ps.literal && len(q) == 0 && h.direct.Load() {
		// A datagram goes out at once from the caller (a UDP write does
		// not wait for the peer): handing each beat to the sender
		// goroutine cost a scheduler wake-up per beat and peer, most of
		// an idle node's CPU (docs/benchmarks-archive.md, "Idle cost").
		h.sendFrame(ps, b)
		return
	}
	select {
	case q <- b:
	default:
		h.c.dropped.Add(1)
	}
}

// runSender sends small frames as datagrams (cheapest, no handshake) and
// larger ones over TCP. Addresses come from cluster.toml, not from
// memberlist's member list, so that a peer memberlist believes dead still
// gets our beats and can come back up.
func (h *mlHB) runSender(ps *peerSender, q <-chan []byte) {
	defer ps.done.Done()
	for b := range q {
		h.sendFrame(ps, b)
	}
}

// sendFrame sends one frame to ps: a datagram, or over TCP when larger
// than udpMax.
func (h *mlHB) sendFrame(ps *peerSender, b []byte) {
	var err error
	switch {
	case len(b) <= h.udpMax && ps.literal:
		// memberlist's user message as SendToAddress frames it (its type
		// byte, no CRC: memberlist adds one only for a member it knows by
		// the IP address as name), handed to the transport at once: no
		// lock, address parsing or metrics of memberlist's per datagram
		frame := make([]byte, 1+len(b))
		frame[0] = mlUserMsg
		copy(frame[1:], b)
		err = h.tr.sendDatagramTo(typeDatagram, ps.addr, ps.ap, frame)
	case len(b) <= h.udpMax:
		err = h.ml.SendToAddress(memberlist.Address{Addr: ps.addr, Name: ps.name}, b)
	default:
		var a *net.TCPAddr
		if a, err = net.ResolveTCPAddr("tcp", ps.addr); err == nil {
			err = h.ml.SendReliable(&memberlist.Node{Name: ps.name, Addr: a.IP, Port: uint16(a.Port)}, b)
		}
	}
	if err != nil {
		h.c.sendErrs.Add(1)
		now := h.s.Clock.Now()
		if last := ps.lastErr.Load(); now.UnixNano()-last > int64(rejectLogEvery) && ps.lastErr.CompareAndSwap(last, now.UnixNano()) {
			h.log.Debug("send failed", zap.String("peer", ps.name), zap.Error(err))
		}
	}
}

// runTicker runs the core's due work, waking at its next due time.
func (h *mlHB) runTicker() {
	defer h.loops.Done()
	clk := h.s.Clock
	for {
		// next is at most a beat period away; a due time that moves
		// earlier meanwhile (a trailing beat, a gap) wakes us (kick), as
		// does the stop.
		h.c.wake.Sleep(clampDur(h.c.next().Sub(clk.Now()), time.Millisecond, h.s.beat))
		select {
		case <-h.stop:
			return
		default:
		}
		h.c.tick()
	}
}

// runJoiner joins, at once and then every rejoin period, the members that
// memberlist does not list. Without memberlist's probes nobody leaves its
// list once joined: when every member is listed it looks again only every
// 30s (the join only adds memberlist's push/pull of a full copy, which our
// core also sends when a peer comes up).
func (h *mlHB) runJoiner() {
	defer h.loops.Done()
	retry := clampDur(h.s.Interval, time.Second, 10*time.Second)
	for try := 0; ; try++ {
		every := 30 * time.Second
		seen := map[string]bool{}
		for _, n := range h.ml.Members() {
			seen[n.Name] = true
		}
		var addrs []string
		for _, m := range h.s.Members {
			if !seen[m.Name] && m.Name != h.s.Node {
				// each try on the next link: one of them may be down
				la := linkAddrs(m)
				addrs = append(addrs, m.Name+"/"+la[try%len(la)])
			}
		}
		if len(addrs) > 0 {
			every = retry
			if n, err := h.ml.Join(addrs); err != nil && n == 0 {
				h.log.Debug("join failed", zap.Strings("members", addrs), zap.Error(err))
			}
		}
		select {
		case <-h.stop:
			return
		case <-h.s.Clock.After(every):
		}
	}
}

func (h *mlHB) Publish(n dataset.Node) { h.c.publish(n) }
func (h *mlHB) Events() <-chan Event   { return h.c.events }
func (h *mlHB) NoteLinkAlive(peer, link string) {
	h.c.noteLinkAlive(peer, link)
}
func (h *mlHB) Peers() []Peer                 { return h.c.peerList() }
func (h *mlHB) Acked(peer string) (Ack, bool) { return h.c.acked(peer) }
func (h *mlHB) AckedNotify() <-chan struct{}  { return h.c.ackNote }
func (h *mlHB) Stats() Stats                  { return h.c.stats() }
func (h *mlHB) Ask(to, op string, body json.RawMessage) (uint64, error) {
	return h.c.ask(to, op, body)
}
func (h *mlHB) Answer(to string, id uint64, body json.RawMessage, errText string) {
	h.c.answer(to, id, body, errText)
}

// Close stops the timers, lets the peer queues drain (so the last Publish
// reaches the live peers) and shuts memberlist down.
func (h *mlHB) Close() error {
	h.closeOnce.Do(func() { h.closeErr = h.shut(true) })
	return h.closeErr
}

// shut stops everything; graceful=false simulates a crash (tests): nothing
// queued is flushed and no leave is announced.
func (h *mlHB) shut(graceful bool) error {
	close(h.stop)
	h.c.wake.Wake() // the ticker sees the stop
	h.loops.Wait()
	if graceful {
		h.c.farewell()
	}
	h.c.shutdown() // from now on nothing is queued
	var errs []error
	if graceful {
		flushed := make(chan struct{})
		go func() {
			for _, pss := range h.senders {
				for _, ps := range pss {
					close(ps.dgram)
					close(ps.stream)
					ps.done.Wait()
				}
			}
			close(flushed)
		}()
		select {
		case <-flushed:
		case <-h.s.Clock.After(min(2*time.Second, h.s.Timeout)):
		}
		// No memberlist Leave: without its gossip the leave would never go
		// out (Leave would wait its whole timeout), and our peers follow
		// their own rule: down after Timeout of silence.
	}
	if err := h.ml.Shutdown(); err != nil {
		errs = append(errs, fmt.Errorf("heartbeat: shutdown: %w", err))
	}
	return errors.Join(errs...)
}

// mlDelegate hands memberlist's user traffic to the core. Push/pull (on
// join) carries a full copy too.
type mlDelegate struct{ c *core }

func (d mlDelegate) NodeMeta(limit int) []byte         { return []byte{protoVersion} }
func (d mlDelegate) NotifyMsg(b []byte)                { d.c.unbound() }
func (d mlDelegate) GetBroadcasts(_, _ int) [][]byte   { return nil }
func (d mlDelegate) LocalState(join bool) []byte       { return d.c.localState() }
func (d mlDelegate) MergeRemoteState(b []byte, _ bool) {} // unbound (sender.go)

// mlLogWriter routes memberlist's log lines to zap. Foreign traffic never
// reaches memberlist: the transport reports it.
type mlLogWriter struct {
	log *zap.Logger
}

func (w *mlLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level, msg := "", line
	if strings.HasPrefix(line, "[") {
		if i := strings.IndexByte(line, ']'); i > 0 {
			level, msg = line[1:i], strings.TrimSpace(line[i+1:])
		}
	}
	msg = strings.TrimPrefix(msg, "memberlist: ")
	switch level {
	case "DEBUG":
		w.log.Debug(msg)
	case "INFO":
		w.log.Info(msg)
	default: // WARN, ERR: mostly transient network errors; our Down events are the signal
		w.log.Warn(msg)
	}
	return len(p), nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	a, err := net.LookupPort("tcp", p)
	return host, a, err
}

func clampDur(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(hi, d))
}
