package chaos

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"
)

// sink is a UDP listener on b:7777 that records the datagrams it gets.
type sink struct {
	pc  net.PacketConn
	got chan string
}

func newSink(t *testing.T, b *Bed, n string) *sink {
	t.Helper()
	s := &sink{got: make(chan string, 1024)}
	if err := InNetns(b.NS[n], func() (err error) { s.pc, err = net.ListenPacket("udp", b.Addr[n]+":7777"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.pc.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			k, _, err := s.pc.ReadFrom(buf)
			if err != nil {
				return
			}
			s.got <- string(buf[:k])
		}
	}()
	return s
}

// drain collects what the sink gets until it has been quiet for quiet.
func (s *sink) drain(quiet time.Duration) []string {
	var out []string
	for {
		select {
		case m := <-s.got:
			out = append(out, m)
		case <-time.After(quiet):
			return out
		}
	}
}

// sendUDP sends each payload from host `from` to to:7777, in order, from one socket.
func sendUDP(t *testing.T, b *Bed, from, to string, payloads []string) {
	t.Helper()
	err := InNetns(b.NS[from], func() error {
		c, err := net.Dial("udp", b.Addr[to]+":7777")
		if err != nil {
			return err
		}
		defer c.Close()
		for _, p := range payloads {
			if _, err := c.Write([]byte(p)); err != nil {
				return err
			}
			time.Sleep(2 * time.Millisecond) // the sender's pace, not a wait for a condition
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func numbered(n int) []string {
	var p []string
	for i := 1; i <= n; i++ {
		p = append(p, strconv.Itoa(i))
	}
	return p
}

// twoHostBed is a bed of hosts a and b, removed at the end of the test; it
// skips without namespaces or iptables.
func twoHostBed(t *testing.T) *Bed {
	t.Helper()
	if why := NetnsUnavailable(); why != "" {
		t.Skip(why)
	}
	if why := IptablesUnavailable(); why != "" {
		t.Skip(why)
	}
	b, err := NewBed([]string{"a", "b"})
	if errors.Is(err, ErrNoNamespace) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// The attacker holds back every 2nd datagram and delivers them later,
// newest first; the others pass at once.
func TestOnPathWithholdsThenReleases(t *testing.T) {
	b := twoHostBed(t)
	s := newSink(t, b, "b")
	if err := b.Withhold("a", "b", 2); err != nil {
		t.Fatal(err)
	}
	sendUDP(t, b, "a", "b", numbered(10))
	if got, want := s.drain(300*time.Millisecond), []string{"1", "3", "5", "7", "9"}; !slices.Equal(got, want) {
		t.Fatalf("while withheld, b got %v, want %v", got, want)
	}
	if n := b.ReleaseHeld("b"); n != 5 {
		t.Fatalf("released %d datagrams, want 5", n)
	}
	if got, want := s.drain(300*time.Millisecond), []string{"10", "8", "6", "4", "2"}; !slices.Equal(got, want) {
		t.Fatalf("after the release, b got %v, want %v", got, want)
	}
	if err := b.Heal(); err != nil {
		t.Fatal(err)
	}
	sendUDP(t, b, "a", "b", numbered(4))
	if got := s.drain(300 * time.Millisecond); len(got) != 4 {
		t.Fatalf("after the heal, b got %v, want all 4", got)
	}
}

// Reordering delivers everything, not in the order sent.
func TestOnPathReorders(t *testing.T) {
	b := twoHostBed(t)
	s := newSink(t, b, "b")
	if err := b.Reorder("a", "b", 200*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	sent := numbered(40)
	sendUDP(t, b, "a", "b", sent)
	got := s.drain(500 * time.Millisecond)
	if len(got) != len(sent) {
		t.Fatalf("b got %d datagrams, want %d: %v", len(got), len(sent), got)
	}
	if slices.Equal(got, sent) {
		t.Fatalf("b got every datagram in the order sent: nothing reordered")
	}
	// a heal delivers what is still in flight
	sendUDP(t, b, "a", "b", numbered(5))
	if err := b.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := s.drain(300 * time.Millisecond); len(got) != 5 {
		t.Fatalf("after the heal, b got %v, want the 5 in flight", got)
	}
}

// Beats only: small datagrams pass; large ones and TCP are dropped.
func TestOnPathBeatsOnly(t *testing.T) {
	b := twoHostBed(t)
	s := newSink(t, b, "b")
	var l net.Listener
	if err := InNetns(b.NS["b"], func() (err error) { l, err = net.Listen("tcp", b.Addr["b"]+":7777"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := b.BeatsOnly("a", "b", BeatLen); err != nil {
		t.Fatal(err)
	}
	big := fmt.Sprintf("%01000d", 7)
	sendUDP(t, b, "a", "b", []string{"beat", big, "beat2"})
	if got := s.drain(300 * time.Millisecond); !slices.Equal(got, []string{"beat", "beat2"}) {
		t.Fatalf("b got %q, want the two small datagrams only", got)
	}
	err := InNetns(b.NS["a"], func() error {
		c, err := net.DialTimeout("tcp", b.Addr["b"]+":7777", 500*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil {
		t.Fatalf("a TCP connection went through a beats-only path")
	}
}
