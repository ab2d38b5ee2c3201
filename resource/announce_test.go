package resource

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"haven/dataset"
)

// The announcements are counted for real on the peer of a veth pair: the
// test binary re-executes itself in the peer's namespace, running only
// TestAnnounceCounterHelper, which listens on its device with a packet
// socket and prints every gratuitous ARP and unsolicited neighbour
// advertisement of the address it is given, with its time.

const counterEnv = "HAVEN_ANNOUNCE_COUNTER" // JSON of counterReq

type counterReq struct {
	Dev, Addr string
	For       time.Duration
}

// seenAnnounce is one announcement received: its kind ("garp", "na"), the
// sender's MAC and when, since the counter was ready.
type seenAnnounce struct {
	Kind string
	MAC  string
	At   time.Duration
}

const counterReady = "HAVEN-COUNTER-READY"

func TestAnnounceCounterHelper(t *testing.T) {
	raw := os.Getenv(counterEnv)
	if raw == "" {
		t.Skip("helper of the announce tests, run by them inside a network namespace")
	}
	var req counterReq
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	want := netip.MustParseAddr(req.Addr)
	ifi, err := net.InterfaceByName(req.Dev)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		t.Fatal(err)
	}
	fmt.Println(counterReady)
	start := time.Now()
	var seen []seenAnnounce
	buf := make([]byte, 2048)
	for {
		left := req.For - time.Since(start)
		if left <= 0 {
			break
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, int(left/time.Millisecond)+1); err != nil || n == 0 {
			continue
		}
		n, from, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
		if err != nil {
			continue
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok || ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		mac := net.HardwareAddr(ll.Addr[:6]).String()
		if kind := announceKind(buf[:n], htons(ll.Protocol), want); kind != "" {
			seen = append(seen, seenAnnounce{Kind: kind, MAC: mac, At: time.Since(start)})
		}
	}
	b, _ := json.Marshal(seen)
	fmt.Println(helperMark + string(b))
}

// announceKind tells whether p (a packet of ethertype proto, without its
// ethernet header) announces addr: a gratuitous ARP (sender and target
// address both addr) or a neighbour advertisement whose target is addr.
func announceKind(p []byte, proto uint16, addr netip.Addr) string {
	switch proto {
	case unix.ETH_P_ARP:
		a := addr.As4()
		if addr.Is4() && len(p) >= 28 && bytes.Equal(p[14:18], a[:]) && bytes.Equal(p[24:28], a[:]) {
			return "garp"
		}
	case unix.ETH_P_IPV6:
		a := addr.As16()
		// no extension header: next header ICMPv6, type 136
		if addr.Is6() && len(p) >= 40+24 && p[6] == 58 && p[40] == 136 && bytes.Equal(p[48:64], a[:]) {
			return "na"
		}
	}
	return ""
}

// countAnnounces starts the counter in ns on dev for d and returns a
// function that waits for its result.
func countAnnounces(t *testing.T, ns, dev, addr string, d time.Duration) func() []seenAnnounce {
	t.Helper()
	req, _ := json.Marshal(counterReq{Dev: dev, Addr: addr, For: d})
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestAnnounceCounterHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), counterEnv+"="+string(req))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	ready := false
	for !ready && sc.Scan() {
		ready = sc.Text() == counterReady
	}
	if !ready {
		t.Fatalf("counter in %s never got ready: %v", ns, sc.Err())
	}
	return func() []seenAnnounce {
		var got []seenAnnounce
		found := false
		for sc.Scan() {
			if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(helperMark)); ok {
				if err := json.Unmarshal(rest, &got); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if err := cmd.Wait(); err != nil || !found {
			t.Fatalf("counter in %s: %v (result found: %v)", ns, err, found)
		}
		return got
	}
}

func macOf(t *testing.T, ns, dev string) string {
	t.Helper()
	for _, f := range strings.Fields(sh(t, "ip", "-n", ns, "-o", "link", "show", dev)) {
		if hw, err := net.ParseMAC(f); err == nil && len(hw) == 6 && hw.String() != "ff:ff:ff:ff:ff:ff" {
			return hw.String()
		}
	}
	t.Fatalf("no MAC for %s in %s", dev, ns)
	return ""
}

// Start announces the address 2 × 5 times, the second burst 5s after the
// first: a peer on the link receives the ten.
func TestIPAnnounces(t *testing.T) {
	tests := []struct{ name, addr, mask, kind string }{
		{"v4 gratuitous arp", "198.18.77.70", "24", "garp"},
		{"v6 neighbour advertisement", "fd00:77::70", "64", "na"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := twoHosts(t)
			mac := macOf(t, a, "va")
			result := countAnnounces(t, b, "vb", tt.addr, announceDelay+2*time.Second)
			h := inNS(t, a, ipRC(tt.addr, tt.mask, "va"), "start", "settle")
			if h[0].Err != "" || h[0].Status != dataset.StatusUp {
				t.Fatalf("start = %+v", h[0])
			}
			got := result()
			var ats []time.Duration
			for _, s := range got {
				if s.Kind != tt.kind || s.MAC != mac {
					t.Errorf("unexpected announcement %+v (want %s from %s)", s, tt.kind, mac)
					continue
				}
				ats = append(ats, s.At)
			}
			t.Logf("%d announcements at %v", len(ats), ats)
			if len(ats) != 2*announceBurst {
				t.Fatalf("%d announcements received, want %d", len(ats), 2*announceBurst)
			}
			first, second := ats[:announceBurst], ats[announceBurst:]
			if d := first[announceBurst-1] - first[0]; d > 2*time.Second {
				t.Errorf("first burst spread over %s", d)
			}
			if d := second[0] - first[0]; d < announceDelay-500*time.Millisecond || d > announceDelay+2*time.Second {
				t.Errorf("second burst %s after the first, want about %s", d, announceDelay)
			}
		})
	}
}

// Stop ends the announcements at once: the second burst never goes out
// for an address this host gave up.
func TestIPAnnounceStops(t *testing.T) {
	a, b := twoHosts(t)
	result := countAnnounces(t, b, "vb", "198.18.77.71", announceDelay+2*time.Second)
	h := inNS(t, a, ipRC("198.18.77.71", "24", "va"), "start", "stop", "settle")
	if h[0].Err != "" || h[1].Err != "" {
		t.Fatalf("start, stop = %+v", h[:2])
	}
	got := result()
	if len(got) == 0 || len(got) >= announceBurst+1 {
		t.Fatalf("%d announcements after a start then a stop, want the first ones only: %+v", len(got), got)
	}
	for _, s := range got {
		if s.At > 2*time.Second {
			t.Errorf("announcement %+v after the stop", s)
		}
	}
}

// An address already on the device is announced again by a start (the
// instance starts here: the clients may have reached another copy) and by
// Announce (the instance left alone after running on several nodes): a
// full burst and the second one. Without the address, Announce sends
// nothing.
func TestIPAnnounceAgain(t *testing.T) {
	for _, action := range []string{"start", "announce"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			const addr = "198.18.77.72"
			a, b := twoHosts(t)
			mac := macOf(t, a, "va")
			sh(t, "ip", "-n", a, "addr", "add", addr+"/24", "dev", "va")
			result := countAnnounces(t, b, "vb", addr, announceDelay+3*time.Second)
			h := inNS(t, a, ipRC(addr, "24", "va"), action, "settle", "stop", "announce")
			for i, o := range h {
				if o.Err != "" {
					t.Fatalf("step %d: %+v", i, o)
				}
			}
			got := result()
			for _, s := range got {
				if s.Kind != "garp" || s.MAC != mac {
					t.Errorf("unexpected announcement %+v", s)
				}
			}
			if len(got) != 2*announceBurst {
				t.Fatalf("%s of an address already there: %d announcements, want %d (and none once it was stopped): %+v", action, len(got), 2*announceBurst, got)
			}
		})
	}
}
