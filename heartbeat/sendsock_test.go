package heartbeat

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Every datagram that arrives goes to the receiving socket, never to the
// sending one that shares its port, whatever the source (without the
// steering program the kernel spreads sources over the two sockets by a
// hash of the addresses: about half would be lost in the sending socket).
// The datagrams sent leave from the link's port.
func TestSendSockSharesThePortAndReceivesNothing(t *testing.T) {
	ls, err := listenLink("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ls.tcp.Close(); ls.udp.Close(); ls.out.close() }()
	port := ls.udp.LocalAddr().(*net.UDPAddr).Port
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))

	const sources = 32
	for i := range sources {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WriteToUDPAddrPort([]byte{byte(i)}, to); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	got := map[byte]bool{}
	buf := make([]byte, 16)
	ls.udp.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < sources {
		n, _, err := ls.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("the receiving socket got %d of %d datagrams from distinct sources: %v", len(got), sources, err)
		}
		if n == 1 {
			got[buf[0]] = true
		}
	}

	// a datagram sent leaves from the link's port
	peer, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := ls.out.sendTo([]byte("beat"), peer.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := peer.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "beat" {
		t.Fatalf("datagram not received: %q %v", buf[:n], err)
	}
	if int(from.Port()) != port {
		t.Fatalf("datagram left from port %d, want the link's %d", from.Port(), port)
	}
}

// A second daemon on the same address still fails to bind, although the
// UDP port is shared by two sockets of the first.
func TestSendSockSecondListenerRefused(t *testing.T) {
	ls, err := listenLink("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ls.tcp.Close(); ls.udp.Close(); ls.out.close() }()
	addr := ls.tcp.Addr().String()
	if ls2, err := listenLink(addr); err == nil {
		ls2.tcp.Close()
		ls2.udp.Close()
		ls2.out.close()
		t.Fatalf("a second link on %s was bound", addr)
	} else if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("unexpected error: %v", err)
	}
}

// Wildcard binds make a dual-stack socket: the sending socket matches it
// and reaches IPv4 peers.
func TestSendSockWildcard(t *testing.T) {
	ls, err := listenLink(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ls.tcp.Close(); ls.udp.Close(); ls.out.close() }()
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := ls.out.sendTo([]byte("x"), peer.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := peer.ReadFromUDPAddrPort(buf); err != nil {
		t.Fatal(err)
	}
}

// The raw calls (sendSock.sendTo, udpReader) carry the payload and both
// addresses as the net package does: an IPv4 peer heard on an IPv4 link
// and on a dual-stack wildcard one (where the kernel gives a mapped
// address, read as the IPv4 one), an IPv6 peer on ::1; replies leave from
// the link's port; a closed socket ends the read with net.ErrClosed.
func TestRawSendReceive(t *testing.T) {
	for _, c := range []struct{ link, peer, net string }{
		{"127.0.0.1:0", "127.0.0.1", "udp4"},
		{":0", "127.0.0.1", "udp4"},
		{"[::1]:0", "::1", "udp6"},
	} {
		t.Run(c.link, func(t *testing.T) {
			ls, err := listenLink(c.link)
			if err != nil {
				t.Skipf("%s: %v", c.link, err)
			}
			defer func() { ls.tcp.Close(); ls.out.close() }()
			peer, err := net.ListenUDP(c.net, &net.UDPAddr{IP: net.ParseIP(c.peer)})
			if err != nil {
				t.Skipf("no %s: %v", c.peer, err)
			}
			defer peer.Close()
			port := uint16(ls.udp.LocalAddr().(*net.UDPAddr).Port)
			to := netip.AddrPortFrom(netip.MustParseAddr(c.peer), port)
			if _, err := peer.WriteToUDPAddrPort([]byte("beat"), to); err != nil {
				t.Fatal(err)
			}
			r, err := newUDPReader(ls.udp, 64)
			if err != nil {
				t.Fatal(err)
			}
			b, src, err := r.read()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != "beat" || src != peer.LocalAddr().(*net.UDPAddr).AddrPort() {
				t.Fatalf("read %q from %s, want \"beat\" from %s", b, src, peer.LocalAddr())
			}
			if err := ls.out.sendTo([]byte("ack"), src); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 8)
			peer.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, from, err := peer.ReadFromUDPAddrPort(buf)
			if err != nil || string(buf[:n]) != "ack" || from.Port() != port {
				t.Fatalf("peer read %q from %s (%v), want \"ack\" from port %d", buf[:n], from, err, port)
			}
			done := make(chan error, 1)
			go func() { _, _, err := r.read(); done <- err }()
			ls.udp.Close()
			select {
			case err := <-done:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("read on a closed socket: %v, want net.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("read still waiting 10s after the socket closed")
			}
		})
	}
}
