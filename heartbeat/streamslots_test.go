package heartbeat

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"haven/dataset"
)

// Attack: connections from a member's address that send nothing, or
// trickle a byte now and then, fill every unauthenticated slot of that
// address and reconnect as soon as they are closed. The member's own
// stream (a change too large for a datagram) still gets through at once:
// a new connection takes the slot of the oldest unauthenticated one.
func TestEnvelopeMemberStreamAdmittedPastIdleConnections(t *testing.T) {
	ms := loopMembers(t, 2) // both on 127.0.0.1: the attacker's address is a member's
	// hb.timeout 8s: an idle connection holds its slot for 2s (hsTTL)
	cfg1, cfg2 := loopConfig(ms, "n1", nil), loopConfig(ms, "n2", nil)
	cfg1.Timeout, cfg2.Timeout = 8*time.Second, 8*time.Second
	w1, w2 := watch(t, cfg1), watch(t, cfg2)
	w1.hb.Publish(svcNode("n1", 1, "web"))
	w2.hb.Publish(svcNode("n2", 1, "web"))
	if _, ok := w2.find(5*time.Second, func(ev Event) bool { return ev.Kind == Data && ev.Node == "n1" }); !ok {
		t.Fatal("n2 never got n1's data")
	}

	// The holders: 2 x maxUnauthPerIP connections to n2, half of them
	// silent, half trickling a byte every 100ms, each reopened when n2
	// closes it.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var dials sync.Map
	for i := range 2 * maxUnauthPerIP {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", ms[1].Addr, time.Second)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				n, _ := dials.LoadOrStore(i, new(int))
				*n.(*int)++
				hold(c, i%2 == 1, stop)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	tr := w2.hb.(*mlHB).tr
	ip := netip.MustParseAddr("127.0.0.1")
	full := func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.unauthIP[ip] >= maxUnauthPerIP
	}
	deadline := time.Now().Add(5 * time.Second)
	for !full() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !full() {
		t.Fatal("the idle connections never filled the budget of 127.0.0.1")
	}

	// n1's change goes by stream; it reaches n2 promptly.
	big := svcNode("n1", 2)
	for i := range 200 {
		big.Services[fmt.Sprintf("svc-%03d", i)] = dataset.Instance{Avail: dataset.StatusUp}
	}
	start := time.Now()
	w1.hb.Publish(big)
	ev, ok := w2.find(5*time.Second, func(ev Event) bool {
		return ev.Kind == Data && ev.Node == "n1" && sameData(ev.Data, &big)
	})
	if !ok {
		t.Fatalf("n2 never got n1's change past %d idle connections (stats of n2: %+v)", 2*maxUnauthPerIP, w2.hb.Stats())
	}
	t.Logf("n1's change reached n2 in %s past the idle connections; n2 stats %+v", ev.at.Sub(start), w2.hb.Stats())
	if lat := ev.at.Sub(start); lat > time.Second {
		t.Errorf("n1's change took %s, want well under a second", lat)
	}
	tr.mu.Lock()
	waiting := len(tr.unauth)
	tr.mu.Unlock()
	if waiting > maxUnauthPerIP {
		t.Errorf("%d unauthenticated connections waiting, want at most %d", waiting, maxUnauthPerIP)
	}
}

// hold keeps c open, silent or sending a byte of a header every 100ms
// (never a whole header),
// until the peer closes it or stop.
func hold(c net.Conn, trickle bool, stop <-chan struct{}) {
	defer c.Close()
	closed := make(chan struct{})
	go func() {
		var b [1]byte
		c.Read(b[:]) // returns when the peer closes
		close(closed)
	}()
	// the start of an open header announcing a 255-byte name, then zeros:
	// never complete before n2's deadline
	prefix := []byte{envMagic, envVersion, typeOpen, 255}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for sent := 0; ; {
		select {
		case <-stop:
			return
		case <-closed:
			return
		case <-tick.C:
			if trickle {
				b := byte(0)
				if sent < len(prefix) {
					b = prefix[sent]
				}
				c.Write([]byte{b})
				sent++
			}
		}
	}
}
