package heartbeat

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
)

// Budgets of inbound streams before they authenticate.
const (
	maxUnauthStreams = 64 // connections reading their open record, in all
	maxUnauthPerIP   = 16 // of which from one address
	resolveEvery     = 30 * time.Second
	challengeEvery   = 100 * time.Millisecond // least time between two challenges to a peer
	answerEvery      = 10 * time.Millisecond  // least time between two answers to a peer
	nonceLife        = 10 * time.Second
)

// secTransport is memberlist's transport: UDP datagrams and TCP streams
// wrapped in the envelope (envelope.go). Nothing reaches memberlist that is
// not authenticated as a member's, fresh (incarnation and sequence number,
// see peerSec) and from that member's configured address.
type secTransport struct {
	s     settings
	node  string
	inc   uint64
	keys  *keyring
	self  cipher.AEAD
	seq   atomic.Uint64
	c     *core
	log   *zap.Logger
	hsTTL time.Duration // read deadline of an inbound open record

	// to is the key of our run's frames to each member, and the flag of
	// their type byte (typePair for a pairwise key; self above is the
	// cluster secret's key of our run); addrName maps each member's
	// addresses to its name, to find the key of a frame sent to an address.
	to       map[string]sendKey
	addrName map[string]string

	// tap, when set (tests), sees every sealed byte sent: conn is nil for
	// a datagram sent to to.
	tap func(conn net.Conn, to string, b []byte)

	udp      *net.UDPConn
	tcp      *net.TCPListener
	dialFrom *net.TCPAddr // source of our streams: hb.addr, nil when a wildcard
	// socks are the sockets of each network link (socks[0] holds udp, tcp
	// and dialFrom); outLink maps a peer's address to the link it is on
	// (links.go): a frame to it leaves from that link's socket.
	socks    []*linkSock
	outLink  map[string]int
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	closing  chan struct{}
	down     atomic.Bool
	wg       sync.WaitGroup

	mu        sync.Mutex
	peers     map[string]*peerSec
	memberIPs map[netip.Addr]bool
	unauth    map[net.Conn]unauthSlot // inbound streams not yet authenticated
	unauthIP  map[netip.Addr]int
	admitted  uint64 // inbound streams admitted so far: their order
}

// sendKey is the key of our frames to one member.
type sendKey struct {
	aead cipher.AEAD
	flag byte
}

// peerSec is what the transport knows of one member's runs. A run
// (incarnation) is accepted only once it proved to be alive: a frame of an
// incarnation above the confirmed one is dropped and answered with a
// challenge that only the live run can answer (or a stream reply bound to
// our own fresh stream). Frames of older incarnations are dropped; within
// the confirmed one, a replay window per path drops duplicates.
type peerSec struct {
	name, addr string
	aps        []netip.AddrPort // addr resolved
	resolvedAt time.Time
	// links are the addresses of its network links (links[0] is addr,
	// aps); lastLink is the link its last frame came by: a challenge, or
	// the answer to one, goes there.
	links    []linkAddr
	lastLink int

	inc           uint64
	dgram, stream window
	nonce         []byte // challenge pending, nil when none
	nonceAt       time.Time
	challAt       time.Time
	challLater    bool // a rate-limited challenge is scheduled
	answerAt      time.Time
	twinState            // the runs seen, to detect two at once (twins.go)
	anchor        anchor // the last answer of its run (anchor.go)
}

func newSecTransport(s settings, c *core, bindAddr string, bindPort int, tap func(net.Conn, string, []byte)) (*secTransport, error) {
	t, err := newSecState(s, c)
	if err != nil {
		return nil, err
	}
	t.tap = tap
	binds := []string{net.JoinHostPort(bindAddr, strconv.Itoa(bindPort))}
	if own := linkAddrs(s.self()); len(own) > 1 {
		// several links: each binds its own address (cluster.toml)
		binds = own
	}
	for _, b := range binds {
		ls, err := listenLink(b)
		if err != nil {
			t.closeSocks()
			return nil, err
		}
		t.socks = append(t.socks, ls)
	}
	t.udp, t.tcp, t.dialFrom = t.socks[0].udp, t.socks[0].tcp, t.socks[0].dialFrom
	for i, ls := range t.socks {
		t.wg.Add(2)
		go t.udpLoop(ls.udp, i)
		go t.tcpLoop(ls.tcp, i)
	}
	return t, nil
}

// dialSource is the local address our streams leave from: hb.addr when it
// is a specific address, so that the peers see the stream come from the
// address they know us by (their address check refuses any other), even
// when hb.addr is not the address the kernel would pick (a secondary
// address, an address of another interface). A wildcard leaves the choice
// to the kernel (nil), as for the datagrams, which leave from the bound
// socket.
func dialSource(ip net.IP) *net.TCPAddr {
	if ip == nil || ip.IsUnspecified() {
		return nil
	}
	return &net.TCPAddr{IP: ip}
}

// newSecState is the transport without its sockets.
func newSecState(s settings, c *core) (*secTransport, error) {
	keys, err := newKeyring(s.key, s.ClusterName)
	if err != nil {
		return nil, err
	}
	if err := keys.setNodeKeys(s.Node, s.NodeKey, s.MemberKeys, s.NodeKeysMode); err != nil {
		return nil, err
	}
	t := &secTransport{s: s, node: s.Node, inc: c.inc, keys: keys, c: c,
		log: s.Logger.With(zap.String("node", s.Node)), hsTTL: clampDur(s.Timeout/4, time.Second, 10*time.Second),
		packetCh: make(chan *memberlist.Packet), streamCh: make(chan net.Conn), closing: make(chan struct{}),
		peers: map[string]*peerSec{}, memberIPs: map[netip.Addr]bool{}, unauth: map[net.Conn]unauthSlot{},
		unauthIP: map[netip.Addr]int{}}
	t.self = keys.aead(t.node, t.inc)
	now := s.Clock.Now()
	t.outLink, t.to, t.addrName = map[string]int{}, map[string]sendKey{}, map[string]string{}
	for _, m := range s.Members {
		ps := &peerSec{name: m.Name, addr: m.Addr, resolvedAt: now}
		a, flag := keys.sendKey(t.node, m.Name, t.inc)
		t.to[m.Name] = sendKey{a, flag}
		for i, a := range linkAddrs(m) {
			la := linkAddr{addr: a, aps: resolve(a)}
			for _, ap := range la.aps {
				t.memberIPs[ap.Addr()] = true
				t.outLink[ap.String()] = i
				t.addrName[ap.String()] = m.Name
			}
			t.outLink[a] = i
			t.addrName[a] = m.Name
			ps.links = append(ps.links, la)
		}
		ps.aps = ps.links[0].aps
		t.peers[m.Name] = ps
	}
	return t, nil
}

// resolve turns a configured host:port into addresses (none when it does
// not resolve: its frames are refused until it does).
func resolve(addr string) []netip.AddrPort {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), uint16(port))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, _ := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	var out []netip.AddrPort
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	return out
}

func (t *secTransport) nextSeq() uint64 { return t.seq.Add(1) }

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *secTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		a := net.ParseIP(ip)
		if a == nil {
			return nil, 0, fmt.Errorf("failed to parse advertise address %q", ip)
		}
		if a4 := a.To4(); a4 != nil {
			a = a4
		}
		return a, port, nil
	}
	if ps := t.peers[t.node]; len(ps.aps) > 0 {
		return ps.aps[0].Addr().AsSlice(), int(ps.aps[0].Port()), nil
	}
	la := t.tcp.Addr().(*net.TCPAddr)
	return la.IP, la.Port, nil
}

// WriteTo implements memberlist.Transport.
func (t *secTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *secTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	// The send time is memberlist's (it measures round trips against its
	// own wall clock), not the shell's.
	return time.Now(), t.sendDatagram(typeDatagram, a.Addr, b)
}

func (t *secTransport) sendDatagram(typ byte, addr string, payload []byte) error {
	if t.udp == nil {
		return net.ErrClosed
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		ua, rerr := net.ResolveUDPAddr("udp", addr)
		if rerr != nil {
			return rerr
		}
		ap = ua.AddrPort()
	}
	return t.sendDatagramTo(typ, addr, ap, payload)
}

// sendDatagramTo is sendDatagram to addr already parsed as ap.
func (t *secTransport) sendDatagramTo(typ byte, addr string, ap netip.AddrPort, payload []byte) error {
	if t.udp == nil {
		return net.ErrClosed
	}
	k := t.keyTo("", addr)
	out := t.keys.seal(k.aead, typ|k.flag, t.node, t.inc, t.nextSeq(), payload)
	if t.tap != nil {
		t.tap(nil, addr, out)
	}
	return t.sockFor(addr).out.sendTo(out, ap)
}

// keyTo is the key of our frames to member name, or when name is "" to
// the member at addr (the cluster secret's key for an address that is no
// member's: the receiver refuses it anyway).
func (t *secTransport) keyTo(name, addr string) sendKey {
	if name == "" {
		name = t.addrName[addr]
	}
	if k, ok := t.to[name]; ok {
		return k
	}
	return sendKey{t.self, 0}
}

// PacketCh implements memberlist.Transport.
func (t *secTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// StreamCh implements memberlist.Transport.
func (t *secTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// DialTimeout implements memberlist.Transport.
func (t *secTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *secTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if from := t.sockFor(a.Addr).dialFrom; from != nil {
		d.LocalAddr = from
	}
	c, err := d.Dial("tcp", a.Addr)
	if err != nil {
		return nil, err
	}
	return t.newDialed(c, a.Name), nil
}

// Shutdown implements memberlist.Transport.
func (t *secTransport) Shutdown() error {
	if t.down.Swap(true) {
		return nil
	}
	close(t.closing)
	t.closeSocks()
	t.mu.Lock()
	for c := range t.unauth {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}

func (t *secTransport) udpLoop(udp *net.UDPConn, sock int) {
	defer t.wg.Done()
	r, err := newUDPReader(udp, maxDgram+1)
	if err != nil {
		t.log.Error("read heartbeat datagrams", zap.Int("link", sock+1), zap.Error(err))
		return
	}
	for {
		b, src, err := r.read()
		ts := time.Now() // memberlist's receive time, compared with its wall clock
		if err != nil {
			if t.down.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Debug("read heartbeat datagram", zap.Int("link", sock+1), zap.Error(err))
			continue
		}
		if p := t.openDatagram(b, src); p != nil {
			select {
			case t.packetCh <- &memberlist.Packet{Buf: p, From: net.UDPAddrFromAddrPort(src), Timestamp: ts}:
			case <-t.closing:
				return
			}
		}
	}
}

// openDatagram returns the payload of a datagram memberlist may see, or
// nil (the frame was counted, and reported when it is suspicious).
func (t *secTransport) openDatagram(b []byte, src netip.AddrPort) []byte {
	h, ct, err := parseHeader(b)
	if err == nil && (len(b) > maxDgram || h.typ > typeResponse || len(ct) < tagSize) {
		err = errNotFrame
	}
	if err != nil {
		t.refuse(src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: src.String(),
			Reason: "datagram: " + err.Error()})
		return nil
	}
	ps := t.peers[h.name]
	if ps == nil {
		t.refuse(src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: src.String(),
			Reason: fmt.Sprintf("datagram from %.64q, not a cluster member", h.name)})
		return nil
	}
	key, err := t.keys.openKey(h, t.node)
	if err != nil {
		t.c.notOwnKey.Add(1)
		t.refuse("key:"+src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: src.String(),
			Reason: fmt.Sprintf("datagram claiming to be %.64q: %v", h.name, err)})
		return nil
	}
	p, err := key.Open(nil, nonceFor(h.seq, 0), ct, adata(t.keys.context(h.raw, nil), 0))
	if err != nil {
		if h.pair {
			t.c.notOwnKey.Add(1)
		}
		t.refuse(src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: src.String(),
			Reason: "datagram: " + authErr(h).Error()})
		return nil
	}
	if h.name == t.node {
		t.ownFrame(h, src)
		return nil
	}
	link, ok := t.fromMemberLink(ps, src, true)
	if !ok {
		return nil
	}
	switch h.typ {
	case typeChallenge:
		t.answer(ps, h, p)
		return nil
	case typeResponse:
		t.confirm(ps, h, p)
		return nil
	}
	// a core message is decoded here: whether it is timely by its run's
	// lag rule decides whether it is evidence of a live run (twins.go)
	var m *message
	var derr error
	msg, user := userDatagram(p)
	if user {
		m, derr = decode(msg)
	}
	if !t.fresh(ps, h, &ps.dgram, "datagram", derr != nil || t.c.frameTimely(h.name, h.inc, m)) {
		return nil
	}
	if user {
		t.c.receiveDecoded(h.name, link, len(msg), m, derr) // bound to its sender (sender.go)
		return nil
	}
	return p
}

// fromMember tells whether src is ps's configured address (IP and port for
// datagrams, which leave from the bound socket; IP only for streams, whose
// port is ephemeral), and reports the frame when not.
func (t *secTransport) fromMember(ps *peerSec, src netip.AddrPort, port bool) bool {
	_, ok := t.fromMemberLink(ps, src, port)
	return ok
}

// fromMemberLink is fromMember that also tells which of ps's links src is
// on (0-based), and records it as the link ps was last heard by.
func (t *secTransport) fromMemberLink(ps *peerSec, src netip.AddrPort, port bool) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	match := func() (int, bool) {
		for i, la := range ps.links {
			for _, ap := range la.aps {
				if ap.Addr() == src.Addr() && (!port || ap.Port() == src.Port()) {
					ps.lastLink = i
					return i, true
				}
			}
		}
		return 0, false
	}
	if i, ok := match(); ok {
		return i, true
	}
	if now := t.s.Clock.Now(); now.Sub(ps.resolvedAt) >= resolveEvery {
		ps.resolvedAt = now
		for i := range ps.links { // a name may have moved
			ps.links[i].aps = resolve(ps.links[i].addr)
			for _, ap := range ps.links[i].aps {
				t.memberIPs[ap.Addr()] = true
			}
		}
		ps.aps = ps.links[0].aps
		if i, ok := match(); ok {
			return i, true
		}
	}
	t.c.wrongSrc.Add(1)
	shown := src.String()
	if !port {
		shown = src.Addr().String()
	}
	t.refuseLocked("addr:"+ps.name+"/"+src.Addr().String(), Event{Kind: Rejected, Node: ps.name, Addr: src.String(),
		Reason: fmt.Sprintf("frame claims to be %s but came from %s (%s is configured at %s)", ps.name, shown, ps.name, ps.linkList())})
	return 0, false
}

// fresh applies the freshness rule to an authenticated frame of ps on path
// w, recording it when fresh. live tells whether the frame may count as
// evidence that its run sends now (noteRunLocked).
func (t *secTransport) fresh(ps *peerSec, h header, w *window, path string, live bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.jumpLocked(ps, h, w, path) {
		return false
	}
	t.noteRunLocked(ps, h, live)
	switch {
	case h.inc < ps.inc:
		t.c.replayed.Add(1)
		t.refuseLocked("stale:"+ps.name, Event{Kind: Rejected, Node: ps.name,
			Reason: fmt.Sprintf("%s of an earlier run of %s (incarnation %d, current %d): replayed or delayed", path, ps.name, h.inc, ps.inc)})
		return false
	case h.inc > ps.inc:
		// A run we did not see alive yet: prove it first.
		t.c.unconfirmed.Add(1)
		t.challengeLocked(ps)
		return false
	case !w.fresh(h.seq):
		if w.below(h.seq) {
			t.challengeLocked(ps) // a replay, or a window pushed past the run's numbers (anchor.go)
		}
		t.c.replayed.Add(1)
		t.refuseLocked("replay:"+ps.name, Event{Kind: Rejected, Node: ps.name,
			Reason: fmt.Sprintf("replayed or duplicate %s of %s (sequence %d, newest %d)", path, ps.name, h.seq, w.top)})
		return false
	}
	w.mark(h.seq)
	return true
}

// challengeLocked asks ps to prove its current run is alive: the answer is
// a response sealed under its incarnation, carrying our nonce.
func (t *secTransport) challengeLocked(ps *peerSec) {
	now := t.s.Clock.Now()
	if wait := challengeEvery - now.Sub(ps.challAt); wait > 0 {
		// Rate-limited: challenge when the limit allows, rather than
		// leave the new run unconfirmed until its next frame (a beat
		// period away). One deferred challenge per peer at a time; it
		// ends with the transport.
		if !ps.challLater {
			ps.challLater = true
			go func() {
				select {
				case <-t.s.Clock.After(wait):
				case <-t.closing:
				}
				t.mu.Lock()
				defer t.mu.Unlock()
				ps.challLater = false
				if !t.down.Load() {
					t.challengeLocked(ps)
				}
			}()
		}
		return
	}
	if ps.nonce == nil || now.Sub(ps.nonceAt) >= nonceLife {
		ps.nonce = make([]byte, challenge)
		rand.Read(ps.nonce)
		ps.nonceAt = now
	}
	ps.challAt = now
	nonce, addr := ps.nonce, ps.lastAddr()
	go func() {
		if err := t.sendDatagram(typeChallenge, addr, nonce); err != nil {
			t.c.sendErrs.Add(1)
		}
	}()
}

// answer answers a challenge of ps, to its configured address.
func (t *secTransport) answer(ps *peerSec, h header, nonce []byte) {
	t.mu.Lock()
	now := t.s.Clock.Now()
	ok := len(nonce) == challenge && h.inc >= ps.inc && now.Sub(ps.answerAt) >= answerEvery
	if ok {
		ps.answerAt = now
	}
	if h.inc < ps.inc {
		t.c.replayed.Add(1) // a challenge of an earlier run of ps
	}
	t.mu.Unlock()
	if ok {
		if err := t.sendDatagram(typeResponse, ps.lastAddr(), nonce); err != nil {
			t.c.sendErrs.Add(1)
		}
		// ps challenged us because it dropped a frame of our run: a beat
		// right behind the answer (same socket, so after it) is accepted,
		// instead of waiting for the next beat period.
		t.c.beatTo(ps.name)
	}
}

// confirm accepts the run of ps that answered our pending challenge.
func (t *secTransport) confirm(ps *peerSec, h header, nonce []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.inc < ps.inc {
		if !t.olderAnsweredLocked(ps, h, nonce) {
			t.c.replayed.Add(1) // a response of an earlier run of ps
		}
		return
	}
	if ps.nonce == nil || string(nonce) != string(ps.nonce) {
		return // a late or replayed answer: harmless
	}
	ps.nonce = nil
	t.confirmLocked(ps, h)
}

func (t *secTransport) confirmLocked(ps *peerSec, h header) {
	if h.inc > ps.inc {
		t.log.Debug("peer run confirmed", zap.String("peer", ps.name), zap.Uint64("incarnation", h.inc))
		t.holdLocked(ps, h.inc)
		ps.inc = h.inc
		ps.dgram, ps.stream, ps.anchor = window{}, window{}, anchor{}
		// ps may not have confirmed our run yet either: a beat now makes
		// it challenge us at once rather than at our next beat period.
		t.c.beatTo(ps.name)
	}
	if h.inc == ps.inc {
		// h is the run's own (it answered our nonce, or our fresh
		// stream): its sequence number anchors the windows.
		t.anchorLocked(ps, h.seq)
	}
}

// jumpLocked refuses a frame of the confirmed run of ps whose sequence
// number is more than maxJump ahead of the highest seen on its path, and
// challenges the run: the answer, sealed by the run from its address,
// carries its real sequence number and moves the windows there, so a
// genuine jump (frames to us lost while the peer sent to others) costs
// one round trip, and a forged one ends nobody's reception.
func (t *secTransport) jumpLocked(ps *peerSec, h header, w *window, path string) bool {
	if h.inc != ps.inc {
		return false
	}
	switch {
	case w.jumps(h.seq):
		t.refuseLocked("jump:"+ps.name, Event{Kind: Rejected, Node: ps.name,
			Reason: fmt.Sprintf("%s of %s jumps from sequence %d to %d (more than %d ahead): refused, %s challenged", path, ps.name, w.top, h.seq, maxJump, ps.name)})
	case t.paceLocked(ps, h.seq):
		t.refuseLocked("jump:"+ps.name, Event{Kind: Rejected, Node: ps.name,
			Reason: fmt.Sprintf("%s of %s at sequence %d, faster than its numbers may move since its answer at %d (its window was pushed ahead by frames it did not send): refused, %s challenged", path, ps.name, h.seq, ps.anchor.seq, ps.name)})
	default:
		return false
	}
	t.c.unconfirmed.Add(1)
	t.challengeLocked(ps)
	return true
}

// ownFrame handles an authenticated frame bearing our own name: a later
// run than ours is another daemon using our name; anything else is our own
// traffic reflected or an earlier run of ours replayed.
func (t *secTransport) ownFrame(h header, src netip.AddrPort) {
	if h.inc > t.inc {
		t.refuse("impostor:"+src.Addr().String(), Event{Kind: Impostor, Node: t.node, Addr: src.String(),
			Reason: fmt.Sprintf("another daemon runs as %s from %s (its incarnation %d, ours %d)", t.node, src, h.inc, t.inc)})
		return
	}
	t.c.replayed.Add(1)
	t.refuse("own:"+src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: src.String(),
		Reason: fmt.Sprintf("frame under this node's own name %s (reflected, or an earlier run replayed)", t.node)})
}

func (t *secTransport) refuse(key string, ev Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refuseLocked(key, ev)
}

// refuseLocked counts and reports (rate-limited by key) a refused frame.
// t.mu is held; the core's lock nests inside it.
func (t *secTransport) refuseLocked(key string, ev Event) {
	t.c.refuse(key, ev)
}

// linkAddr is one network link address of a member, resolved.
type linkAddr struct {
	addr string
	aps  []netip.AddrPort
}

// linkSock is the sockets of one network link of this node.
type linkSock struct {
	udp      *net.UDPConn
	out      *sendSock // the datagrams leave by it (sendsock.go)
	tcp      *net.TCPListener
	dialFrom *net.TCPAddr // source of our streams: the bound address, nil when a wildcard
}

// listenLink binds the TCP and UDP sockets of one link at host:port.
func listenLink(hostport string) (*linkSock, error) {
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host)
	ls := &linkSock{dialFrom: dialSource(ip)}
	if ls.tcp, err = net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: port}); err != nil {
		return nil, err
	}
	if ls.udp, err = listenUDPShared(ip, port); err != nil {
		ls.tcp.Close()
		return nil, err
	}
	if ls.out, err = openSendSock(ls.udp); err != nil {
		ls.udp.Close()
		ls.tcp.Close()
		return nil, err
	}
	for size := 2 << 20; size > 0 && ls.udp.SetReadBuffer(size) != nil; size /= 2 {
	}
	return ls, nil
}

func (t *secTransport) closeSocks() {
	for _, ls := range t.socks {
		ls.tcp.Close()
		ls.udp.Close()
		ls.out.close()
	}
}

// sockFor returns the sockets of the link a peer's address addr is on
// (the first link's when unknown).
func (t *secTransport) sockFor(addr string) *linkSock {
	if i, ok := t.outLink[addr]; ok && i < len(t.socks) {
		return t.socks[i]
	}
	return t.socks[0]
}

// lastAddr is the address of the link ps was last heard by. t.mu is held
// or ps is not shared yet.
func (ps *peerSec) lastAddr() string {
	if ps.lastLink < len(ps.links) {
		return ps.links[ps.lastLink].addr
	}
	return ps.addr
}

// linkList is the configured address(es) of ps, for messages.
func (ps *peerSec) linkList() string {
	if len(ps.links) < 2 {
		return ps.addr
	}
	var out []string
	for _, la := range ps.links {
		out = append(out, la.addr)
	}
	return strings.Join(out, ", ")
}
