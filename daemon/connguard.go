package daemon

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// connGuard bounds the connections of an HTTP listener (the local API,
// the metrics) so that idle ones cannot lock the others out: a keep-alive
// connection that waits for its next request holds a slot, and a client
// that keeps max of them open (or sends a request every idle timeout)
// used to make a scrape or the CLI wait behind them. At the cap, the
// connection idle the longest is closed to make room (as http.Server's
// Shutdown closes idle ones); only connections running a request or still
// sending their first one (bounded by ReadHeaderTimeout) make a new one
// wait. A client (a remote IP; a unix socket is one client) holds at most
// perClient connections (0: no per-client cap): beyond, its own idlest is
// closed, or the new one when none of its own is idle.
type connGuard struct {
	net.Listener
	max, perClient int
	// allow, when set, says whether a client may connect at all: the
	// others are closed before anything is read, and told to refused.
	allow   func(netip.Addr) bool
	refused func(net.Addr)

	mu     sync.Mutex
	cond   *sync.Cond
	conns  map[net.Conn]*guardedConn
	count  map[string]int // by client
	closed bool
	seq    uint64
}

type guardedConn struct {
	net.Conn
	g         *connGuard
	client    string
	idle      bool
	idleSince uint64 // g.seq when it went idle: the order, not a time
}

func (c *guardedConn) Close() error {
	c.g.release(c)
	return c.Conn.Close()
}

// guardConns wraps ln; srv's ConnState must be set to the guard's
// connState (guardServer does both).
func guardConns(ln net.Listener, max, perClient int) *connGuard {
	g := &connGuard{Listener: ln, max: max, perClient: perClient,
		conns: map[net.Conn]*guardedConn{}, count: map[string]int{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// guardServer serves srv on ln through a connGuard.
func guardServer(srv *http.Server, ln net.Listener, max, perClient int) *connGuard {
	g := guardConns(ln, max, perClient)
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		g.connState(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	return g
}

func clientOf(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

func (g *connGuard) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if g.allow != nil && !g.allowed(c.RemoteAddr()) {
			c.Close()
			if g.refused != nil {
				g.refused(c.RemoteAddr())
			}
			continue
		}
		gc := &guardedConn{Conn: c, g: g, client: clientOf(c)}
		g.mu.Lock()
		if g.perClient > 0 && g.count[gc.client] >= g.perClient && !g.evictIdle(gc.client) {
			g.mu.Unlock()
			c.Close() // every connection of this client is busy
			continue
		}
		for len(g.conns) >= g.max && !g.closed {
			if !g.evictIdle("") {
				g.cond.Wait() // every slot runs a request or is being sent one
			}
		}
		if g.closed {
			g.mu.Unlock()
			c.Close()
			return nil, net.ErrClosed
		}
		g.conns[gc] = gc
		g.count[gc.client]++
		g.mu.Unlock()
		return gc, nil
	}
}

func (g *connGuard) allowed(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	return ok && g.allow(ip.Unmap())
}

func (g *connGuard) Close() error {
	g.mu.Lock()
	g.closed = true
	g.cond.Broadcast()
	g.mu.Unlock()
	return g.Listener.Close()
}

// evictIdle closes the connection idle the longest (of client, or of
// any client when client is ""), and reports whether there was one. g.mu
// is held.
func (g *connGuard) evictIdle(client string) bool {
	var old *guardedConn
	for _, c := range g.conns {
		if c.idle && (client == "" || c.client == client) && (old == nil || c.idleSince < old.idleSince) {
			old = c
		}
	}
	if old == nil {
		return false
	}
	g.releaseLocked(old)
	go old.Conn.Close() // never block Accept on a close
	return true
}

func (g *connGuard) connState(c net.Conn, st http.ConnState) {
	gc, ok := c.(*guardedConn)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch st {
	case http.StateIdle:
		g.seq++
		gc.idle, gc.idleSince = true, g.seq
	case http.StateActive:
		gc.idle = false
	case http.StateClosed, http.StateHijacked:
		g.releaseLocked(gc)
	}
}

func (g *connGuard) release(c *guardedConn) {
	g.mu.Lock()
	g.releaseLocked(c)
	g.mu.Unlock()
}

func (g *connGuard) releaseLocked(c *guardedConn) {
	if _, ok := g.conns[c]; !ok {
		return
	}
	delete(g.conns, c)
	if g.count[c.client]--; g.count[c.client] == 0 {
		delete(g.count, c.client)
	}
	g.cond.Broadcast()
}
