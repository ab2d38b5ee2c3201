package heartbeat

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"go.uber.org/zap"
)

// secConn is one authenticated stream: every Write is sealed into records
// of at most recordMax bytes, every Read returns only authenticated bytes.
// The dialer's first record follows an open header (sender, incarnation,
// fresh sequence number); the listener's first record follows an accept
// header and is bound to that open header, so neither direction can be
// replayed into another stream.
type secConn struct {
	net.Conn
	t *secTransport

	wmu   sync.Mutex
	whdr  []byte // our header, sent before our first record
	wctx  []byte
	wkey  cipher.AEAD
	wseq  uint64
	widx  uint32
	wsent bool

	rmu   sync.Mutex
	open  []byte // the open header of this stream (the dialer's)
	want  string // dialer: the name of the member dialed ("" any member)
	acc   header // dialer: the accept header, checked before its record
	rctx  []byte // nil until the peer's header is read (dialer side)
	rkey  cipher.AEAD
	rseq  uint64
	ridx  uint32
	rbuf  []byte // authenticated bytes not yet read
	total int    // authenticated bytes received
	rerr  error
	link  int // accepted: the sender's network link it came by (links.go)
}

var errStreamBudget = fmt.Errorf("stream exceeds %d bytes", streamMax)

// newDialed wraps a connection we dialed to the member named want.
func (t *secTransport) newDialed(c net.Conn, want string) *secConn {
	seq := t.nextSeq()
	k := t.keyTo(want, remoteString(c))
	hdr := appendHeader(nil, typeOpen|k.flag, t.node, t.inc, seq)
	return &secConn{Conn: c, t: t, whdr: hdr, wctx: t.keys.context(hdr, nil), wkey: k.aead,
		wseq: seq, open: hdr, want: want}
}

// remoteString is the remote address of c, "" when it has none.
func remoteString(c net.Conn) string {
	if c == nil || c.RemoteAddr() == nil {
		return ""
	}
	return c.RemoteAddr().String()
}

// newAccepted wraps an inbound connection whose open record was
// authenticated (h), holding its first plaintext.
func (t *secTransport) newAccepted(c net.Conn, h header, key cipher.AEAD, first []byte) *secConn {
	seq := t.nextSeq()
	k := t.keyTo(h.name, "")
	hdr := appendHeader(nil, typeAccept|k.flag, t.node, t.inc, seq)
	return &secConn{Conn: c, t: t, whdr: hdr, wctx: t.keys.context(hdr, h.raw), wkey: k.aead, wseq: seq,
		open: h.raw, rctx: t.keys.context(h.raw, nil), rkey: key, rseq: h.seq, ridx: 1, rbuf: first,
		total: len(first)}
}

func (c *secConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var out []byte
	if !c.wsent {
		out = append(out, c.whdr...)
	}
	n := 0
	for first := true; first || n < len(p); first = false {
		chunk := p[n:min(len(p), n+recordMax)]
		if c.widx == math.MaxUint32 {
			return n, errors.New("heartbeat: stream too long")
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(chunk)+tagSize))
		out = c.wkey.Seal(out, nonceFor(c.wseq, c.widx), chunk, adata(c.wctx, c.widx))
		c.widx++
		n += len(chunk)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	c.wsent = true
	if tap := c.t.tap; tap != nil {
		tap(c, "", out)
	}
	return len(p), nil
}

func (c *secConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.rbuf) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		if err := c.readRecord(); err != nil {
			c.rerr = err
			if err != io.EOF {
				c.t.streamError(c.Conn.RemoteAddr(), err)
			}
		}
	}
	n := copy(p, c.rbuf)
	c.rbuf = c.rbuf[n:]
	return n, nil
}

// readRecord reads and authenticates the next record (after the accept
// header on the dialer's side).
func (c *secConn) readRecord() error {
	if c.rctx == nil {
		h, err := readHeader(c.Conn)
		if err != nil {
			return err
		}
		if h.typ != typeAccept {
			return errNotFrame
		}
		key, err := c.t.checkAccept(h, c.want, c.Conn.RemoteAddr())
		if err != nil {
			return err
		}
		c.acc = h
		c.rctx, c.rkey, c.rseq = c.t.keys.context(h.raw, c.open), key, h.seq
	}
	ct, err := readSealed(c.Conn)
	if err != nil {
		return err
	}
	if c.total += len(ct) - tagSize; c.total > streamMax {
		return errStreamBudget
	}
	pt, err := c.rkey.Open(ct[:0], nonceFor(c.rseq, c.ridx), ct, adata(c.rctx, c.ridx))
	if err != nil {
		return errAuth
	}
	if c.ridx == 0 {
		if err := c.t.accepted(c.acc); err != nil {
			return err
		}
	}
	c.ridx++
	c.rbuf = pt
	return nil
}

// readHeader reads a header from r, never more than its announced size.
func readHeader(r io.Reader) (header, error) {
	var fixed [4]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return header{}, err
	}
	if fixed[0] != envMagic || !envVersionOK(fixed[1]) || fixed[3] == 0 {
		return header{}, errNotFrame
	}
	b := make([]byte, hdrFixed+int(fixed[3]))
	copy(b, fixed[:])
	if _, err := io.ReadFull(r, b[4:]); err != nil {
		return header{}, unexpected(err)
	}
	h, _, err := parseHeader(b)
	return h, err
}

// readSealed reads one record's ciphertext, refusing a length beyond
// recordMax before reading it.
func readSealed(r io.Reader) ([]byte, error) {
	var l [lenSize]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n < tagSize || n > recordMax+tagSize {
		return nil, recordLenError(n)
	}
	ct := make([]byte, n)
	if _, err := io.ReadFull(r, ct); err != nil {
		return nil, unexpected(err)
	}
	return ct, nil
}

// recordLenError is a record length out of bounds.
type recordLenError uint32

func (e recordLenError) Error() string {
	return fmt.Sprintf("record of %d bytes announced (at most %d)", uint32(e), recordMax+tagSize)
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// tcpLoop accepts inbound streams. A connection from an address that is no
// member's is closed at once; the others read their open record within
// hsTTL. When the budget of unauthenticated connections is full, the
// oldest one (of the same address when that address is at its budget)
// is closed to make room (admit).
func (t *secTransport) tcpLoop(tcp *net.TCPListener, sock int) {
	defer t.wg.Done()
	var delay time.Duration
	for {
		conn, err := tcp.AcceptTCP()
		if err != nil {
			if t.down.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			delay = clampDur(2*delay, 5*time.Millisecond, time.Second)
			t.log.Debug("accept heartbeat stream", zap.Int("link", sock+1), zap.Error(err))
			select {
			case <-t.s.Clock.After(delay):
			case <-t.closing:
				return
			}
			continue
		}
		delay = 0
		ra := conn.RemoteAddr().(*net.TCPAddr).AddrPort()
		src := netip.AddrPortFrom(ra.Addr().Unmap(), ra.Port())
		reason, evicted := t.admit(conn, src.Addr())
		if evicted != nil {
			evicted.Close() // its handshake fails and releases nothing more
			t.c.refused.Add(1)
			t.refuse(src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: evicted.RemoteAddr().String(),
				Reason: "stream: " + reason})
		}
		if evicted == nil && reason != "" {
			conn.Close()
			t.c.refused.Add(1)
			t.refuse(src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: src.String(),
				Reason: "stream: " + reason})
			continue
		}
		t.wg.Add(1)
		go t.handshake(conn, src)
	}
}

// unauthSlot is an inbound stream reading its open record: its source
// address and its admission order.
type unauthSlot struct {
	ip  netip.Addr
	seq uint64
}

// admit reserves a slot for an unauthenticated stream. A connection from
// an address that is no member's, or arriving at shutdown, is refused
// (reason set, evicted nil). When the budget is full (maxUnauthPerIP from
// ip, or maxUnauthStreams in all), the oldest unauthenticated connection
// (from ip, or from any address) loses its slot to the new one: it is
// returned in evicted, with the reason, for the caller to close. A member
// opens its stream and sends its open record at once, which takes
// microseconds to authenticate; connections that send nothing or trickle
// could otherwise hold every slot of a member's address (another process
// of a member's host, a NAT in front of it) and keep the member's own
// streams out for as long as they reconnect. Evicting the oldest, they can
// only keep a member's stream out by opening maxUnauthPerIP connections
// within the time its first record takes to be read.
func (t *secTransport) admit(conn net.Conn, ip netip.Addr) (reason string, evicted net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.down.Load():
		return "shutting down", nil
	case !t.memberIPs[ip]:
		return "connection from an address that is no member's", nil
	case t.unauthIP[ip] >= maxUnauthPerIP:
		evicted = t.oldestUnauthLocked(ip)
		reason = fmt.Sprintf("%d unauthenticated connections already open from %s: the oldest closed", maxUnauthPerIP, ip)
	case len(t.unauth) >= maxUnauthStreams:
		evicted = t.oldestUnauthLocked(netip.Addr{})
		reason = fmt.Sprintf("%d unauthenticated connections already open: the oldest closed", maxUnauthStreams)
	}
	if evicted != nil {
		t.releaseLocked(evicted)
	} else if reason != "" {
		return reason, nil // not reached: a full budget holds a connection
	}
	t.admitted++
	t.unauth[conn] = unauthSlot{ip: ip, seq: t.admitted}
	t.unauthIP[ip]++
	return reason, evicted
}

// oldestUnauthLocked is the unauthenticated connection admitted first,
// from ip (any address when ip is the zero Addr).
func (t *secTransport) oldestUnauthLocked(ip netip.Addr) net.Conn {
	var old net.Conn
	var seq uint64
	for c, s := range t.unauth {
		if (!ip.IsValid() || s.ip == ip) && (old == nil || s.seq < seq) {
			old, seq = c, s.seq
		}
	}
	return old
}

// release frees the slot of conn, and tells whether it still held one (it
// did not when it was evicted).
func (t *secTransport) release(conn net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.releaseLocked(conn)
}

func (t *secTransport) releaseLocked(conn net.Conn) bool {
	s, ok := t.unauth[conn]
	if ok {
		delete(t.unauth, conn)
		if t.unauthIP[s.ip]--; t.unauthIP[s.ip] <= 0 {
			delete(t.unauthIP, s.ip)
		}
	}
	return ok
}

// handshake authenticates the open record of an inbound stream and hands
// the stream to memberlist, or closes it.
func (t *secTransport) handshake(conn net.Conn, src netip.AddrPort) {
	defer t.wg.Done()
	sc, err := t.openStream(conn, src)
	held := t.release(conn)
	if sc == nil || !held {
		conn.Close()
		if err != nil && held { // an evicted connection was reported by tcpLoop
			t.refuse(src.Addr().String(), Event{Kind: Rejected, Node: src.Addr().String(), Addr: src.String(),
				Reason: "stream: " + err.Error()})
		}
		return
	}
	if t.userStream(sc) {
		return
	}
	select {
	case t.streamCh <- sc:
	case <-t.closing:
		conn.Close()
	}
}

// openStream reads and checks the open record. It returns nil and the
// error to report, or nil and nil when the refusal was reported already
// (or is not worth it: a connection closed before its first byte).
func (t *secTransport) openStream(conn net.Conn, src netip.AddrPort) (*secConn, error) {
	conn.SetReadDeadline(time.Now().Add(t.hsTTL)) // the kernel's deadline: wall clock
	h, err := readHeader(conn)
	if err == io.EOF {
		t.c.refused.Add(1) // an empty connection: mostly a sender that gave up
		return nil, nil
	}
	if err == nil && h.typ != typeOpen {
		err = errNotFrame
	}
	if err != nil {
		return nil, err
	}
	ps := t.peers[h.name]
	if ps == nil {
		return nil, fmt.Errorf("from %.64q, not a cluster member", h.name)
	}
	ct, err := readSealed(conn)
	if err != nil {
		return nil, err
	}
	key, err := t.keys.openKey(h, t.node)
	if err != nil {
		t.c.notOwnKey.Add(1)
		return nil, fmt.Errorf("claiming to be %.64q: %w", h.name, err)
	}
	first, err := key.Open(ct[:0], nonceFor(h.seq, 0), ct, adata(t.keys.context(h.raw, nil), 0))
	if err != nil {
		if h.pair {
			t.c.notOwnKey.Add(1)
		}
		return nil, authErr(h)
	}
	switch {
	case h.name == t.node:
		t.ownFrame(h, src)
		return nil, nil
	}
	link, ok := t.fromMemberLink(ps, src, false)
	// a stream is no evidence of a live run (twins.go): a run beats by
	// datagrams, whose messages say when they were sent
	if !ok || !t.fresh(ps, h, &ps.stream, "stream", false) {
		return nil, nil
	}
	conn.SetReadDeadline(time.Time{}) // memberlist sets its own
	sc := t.newAccepted(conn, h, key, first)
	sc.link = link
	return sc, nil
}

// checkAccept checks the accept header of the reply to a stream we opened.
func (t *secTransport) checkAccept(h header, want string, remote net.Addr) (cipher.AEAD, error) {
	ps := t.peers[h.name]
	switch {
	case ps == nil || h.name == t.node:
		return nil, fmt.Errorf("reply from %.64q, not another cluster member", h.name)
	case want != "" && h.name != want:
		return nil, fmt.Errorf("reply from %s to a stream opened to %s", h.name, want)
	}
	if ta, ok := remote.(*net.TCPAddr); ok {
		ra := ta.AddrPort()
		if !t.fromMember(ps, netip.AddrPortFrom(ra.Addr().Unmap(), ra.Port()), false) {
			return nil, errors.New("reply from the wrong address")
		}
	}
	key, err := t.keys.openKey(h, t.node)
	if err != nil {
		t.c.notOwnKey.Add(1)
		return nil, fmt.Errorf("reply of %s: %w", h.name, err)
	}
	return key, nil
}

// accepted notes that the reply to our fresh stream authenticated: its run
// is alive (a reply cannot be replayed into another stream).
func (t *secTransport) accepted(h header) error {
	ps := t.peers[h.name]
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.inc < ps.inc {
		t.c.replayed.Add(1)
		return fmt.Errorf("reply of an earlier run of %s (incarnation %d, current %d)", h.name, h.inc, ps.inc)
	}
	t.confirmLocked(ps, h)
	return nil
}

// streamError reports a stream that failed after its first record: a
// forged or damaged record, or one over the budget. Network errors are
// memberlist's to log.
func (t *secTransport) streamError(remote net.Addr, err error) {
	var rl recordLenError
	if !errors.Is(err, errAuth) && !errors.Is(err, errNotFrame) && !errors.Is(err, errStreamBudget) && !errors.Is(err, errNotOwnKey) && !errors.As(err, &rl) {
		return
	}
	src := remote.String()
	host := src
	if ta, ok := remote.(*net.TCPAddr); ok {
		host = ta.IP.String()
	}
	t.refuse(host, Event{Kind: Rejected, Node: host, Addr: src, Reason: "stream: " + err.Error()})
}
