package chaos

import (
	"io"
	"net"
	"testing"
	"time"
)

// rtt is the time of a ping from a to b (fails the test without an answer).
func rtt(t *testing.T, b *Bed, from, to string) time.Duration {
	t.Helper()
	start := time.Now()
	ok, err := b.Ping(from, b.Addr[to], 5*time.Second)
	if err != nil || !ok {
		t.Fatalf("ping %s -> %s: %v, answered %v", from, to, err, ok)
	}
	return time.Since(start)
}

// tcpRoundTrip connects from a to b's echo server, sends a line and reads
// it back: three packets each way through the delays.
func tcpRoundTrip(t *testing.T, b *Bed, from, to string) time.Duration {
	t.Helper()
	var d time.Duration
	err := InNetns(b.NS[from], func() error {
		start := time.Now()
		c, err := net.DialTimeout("tcp", b.Addr[to]+":7777", 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("haven\n")); err != nil {
			return err
		}
		buf := make([]byte, 6)
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		d = time.Since(start)
		return nil
	})
	if err != nil {
		t.Fatalf("tcp %s -> %s: %v", from, to, err)
	}
	return d
}

// udpRoundTrip sends a datagram from a to b's echo server and waits for
// it to come back.
func udpRoundTrip(t *testing.T, b *Bed, from, to string) time.Duration {
	t.Helper()
	var d time.Duration
	err := InNetns(b.NS[from], func() error {
		c, err := net.Dial("udp", b.Addr[to]+":7777")
		if err != nil {
			return err
		}
		defer c.Close()
		start := time.Now()
		c.SetDeadline(start.Add(5 * time.Second))
		if _, err := c.Write([]byte("haven")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		if _, err := c.Read(buf); err != nil {
			return err
		}
		d = time.Since(start)
		return nil
	})
	if err != nil {
		t.Fatalf("udp %s -> %s: %v", from, to, err)
	}
	return d
}

func TestDelayHoldsUDPAndTCPBothWays(t *testing.T) {
	b := twoHostBed(t)
	var l net.Listener
	if err := InNetns(b.NS["b"], func() (err error) { l, err = net.Listen("tcp", b.Addr["b"]+":7777"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	var pc net.PacketConn
	if err := InNetns(b.NS["b"], func() (err error) { pc, err = net.ListenPacket("udp", b.Addr["b"]+":7777"); return err }); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	before := rtt(t, b, "a", "b")
	const d = 200 * time.Millisecond
	for _, n := range []string{"a", "b"} {
		if err := b.Delay(n, d); err != nil {
			t.Fatal(err)
		}
	}
	// a ping's echo is delayed at b, its answer at a: 2d at least
	if got := rtt(t, b, "a", "b"); got < 2*d || got > 2*d+time.Second {
		t.Fatalf("ping with %s into each host: %s (before: %s), want about %s", d, got, before, 2*d)
	}
	if got := udpRoundTrip(t, b, "a", "b"); got < 2*d || got > 2*d+time.Second {
		t.Fatalf("udp echo with %s into each host: %s, want about %s", d, got, 2*d)
	}
	// connect (SYN, SYN-ACK), then the line and its echo: 2 round trips
	if got := tcpRoundTrip(t, b, "a", "b"); got < 4*d || got > 4*d+2*time.Second {
		t.Fatalf("tcp connect and echo with %s into each host: %s, want about %s", d, got, 4*d)
	}
	t.Logf("ping before %s; with %s into each host: ping %s, udp echo %s, tcp connect+echo %s; packets held a %d, b %d", before, d, rtt(t, b, "a", "b"), udpRoundTrip(t, b, "a", "b"), tcpRoundTrip(t, b, "a", "b"), b.Delayed("a"), b.Delayed("b"))
	if b.Delayed("a") == 0 || b.Delayed("b") == 0 {
		t.Fatalf("packets held: a %d, b %d", b.Delayed("a"), b.Delayed("b"))
	}
	if err := b.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := rtt(t, b, "a", "b"); got > d {
		t.Fatalf("ping after the heal: %s, want no delay (before: %s)", got, before)
	}
	if got := udpRoundTrip(t, b, "a", "b"); got > d {
		t.Fatalf("udp after the heal: %s, want no delay", got)
	}
	if got := tcpRoundTrip(t, b, "a", "b"); got > 2*d {
		t.Fatalf("tcp after the heal: %s, want no delay", got)
	}
}
