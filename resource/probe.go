package resource

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// DefaultProbeTimeout is how long probeAddr waits for an answer when the
// resource sets no ip probe_timeout.
const DefaultProbeTimeout = 300 * time.Millisecond

// probeEvery is the period of the probes within the probe window: a host
// holding the address answers within a millisecond or two on a LAN, so
// a probe every 100ms until the window ends catches it even if a probe or
// two, or their answers, are lost; the first answer ends the wait.
const probeEvery = 100 * time.Millisecond

// probeAddr asks the network whether another host already holds addr, and
// returns a description of the answer ("" when nobody answered within
// total). An error means no probe was possible; the caller decides what to
// do then. It returns at the first answer, so a live holder costs a round
// trip, and a free address (the failover case) costs total.
//
// IPv4 uses an ARP probe (RFC 5227: an ARP request with a zero sender
// address) sent on the device itself through a raw packet socket: every
// host on the link holding the address answers it, whether or not it
// answers pings, and whatever routes exist. When the device cannot carry
// ARP (no ethernet address, down) it falls back to an ICMP echo. IPv6 uses
// an ICMPv6 echo (the kernel runs its own duplicate address detection after
// the add; Status reports a "dadfailed" address as warn). Both need root
// (CAP_NET_RAW) and nothing installed.
func probeAddr(ctx context.Context, dev string, addr netip.Addr, total time.Duration) (string, error) {
	if total <= 0 {
		total = DefaultProbeTimeout
	}
	if addr.Is4() {
		holder, err := arpProbe(ctx, dev, addr, total)
		if err == nil {
			return holder, nil
		}
		if !errors.Is(err, errNoARP) {
			return "", err
		}
	}
	return echoProbe(ctx, dev, addr, total)
}

// probeSchedule paces probes: due tells whether a probe is to be sent now
// (one at the start, then every probeEvery), wait how long to listen before
// the next one or the end of the window, which over tells.
type probeSchedule struct {
	end, next time.Time
}

func newProbeSchedule(total time.Duration) *probeSchedule {
	now := time.Now()
	return &probeSchedule{end: now.Add(total), next: now}
}

func (s *probeSchedule) due() bool {
	now := time.Now()
	if now.Before(s.next) || !now.Before(s.end) {
		return false
	}
	for !s.next.After(now) {
		s.next = s.next.Add(probeEvery)
	}
	return true
}

func (s *probeSchedule) over() bool { return !time.Now().Before(s.end) }

// wait is how long to listen until the next probe or the end.
func (s *probeSchedule) wait() time.Duration {
	t := s.next
	if s.end.Before(t) {
		t = s.end
	}
	return time.Until(t)
}

// errNoARP says the device cannot carry ARP.
var errNoARP = errors.New("device cannot carry ARP")

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// arpIface returns the interface when it can carry ARP.
func arpIface(dev string) (*net.Interface, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, err
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%s has no ethernet address: %w", dev, errNoARP)
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, fmt.Errorf("%s is down: %w", dev, errNoARP)
	}
	return ifi, nil
}

// arpSocket opens a packet socket for ARP payloads bound to the interface.
func arpSocket(ifi *net.Interface) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ARP)))
	if err != nil {
		return -1, fmt.Errorf("arp socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("arp socket bind: %w", err)
	}
	return fd, nil
}

// arpPacket builds an ethernet/IPv4 ARP request.
func arpPacket(sha net.HardwareAddr, spa, tpa netip.Addr) []byte {
	b := make([]byte, 28)
	binary.BigEndian.PutUint16(b[0:], 1)      // hardware: ethernet
	binary.BigEndian.PutUint16(b[2:], 0x0800) // protocol: IPv4
	b[4], b[5] = 6, 4
	binary.BigEndian.PutUint16(b[6:], 1) // request
	copy(b[8:14], sha)
	s, t := spa.As4(), tpa.As4()
	copy(b[14:18], s[:])
	// target hardware address stays zero
	copy(b[24:28], t[:])
	return b
}

// sendARP broadcasts an ARP payload on the interface.
func sendARP(fd int, ifi *net.Interface, pkt []byte) error {
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifi.Index, Halen: 6}
	copy(to.Addr[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	return unix.Sendto(fd, pkt, 0, to)
}

// arpProbe sends ARP probes for addr on dev, every probeEvery for total,
// and returns "is-at MAC" as soon as a host other than this one claims it.
func arpProbe(ctx context.Context, dev string, addr netip.Addr, total time.Duration) (string, error) {
	ifi, err := arpIface(dev)
	if err != nil {
		return "", err
	}
	fd, err := arpSocket(ifi)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	pkt := arpPacket(ifi.HardwareAddr, netip.IPv4Unspecified(), addr)
	want := addr.As4()
	buf := make([]byte, 1500)
	sched := newProbeSchedule(total)
	for !sched.over() {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if sched.due() {
			if err := sendARP(fd, ifi, pkt); err != nil {
				return "", fmt.Errorf("arp probe: %w", err)
			}
		}
		left := sched.wait()
		if left <= 0 {
			continue
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int((left+time.Millisecond-1)/time.Millisecond))
		if errors.Is(err, unix.EINTR) || n == 0 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("arp probe: %w", err)
		}
		m, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
		if err != nil {
			continue
		}
		p := buf[:m]
		if len(p) < 28 || binary.BigEndian.Uint16(p[0:]) != 1 || binary.BigEndian.Uint16(p[2:]) != 0x0800 {
			continue
		}
		sha := net.HardwareAddr(p[8:14])
		if bytes.Equal(p[14:18], want[:]) && !bytes.Equal(sha, ifi.HardwareAddr) {
			return "is-at " + sha.String(), nil
		}
	}
	return "", nil
}

// echoProbe sends ICMP (v4 or v6) echo requests to addr, every probeEvery
// for total, and returns "answers ICMP echo" at the first matching reply.
func echoProbe(ctx context.Context, dev string, addr netip.Addr, total time.Duration) (string, error) {
	network, laddr, proto := "ip4:icmp", "0.0.0.0", 1
	var typ icmp.Type = ipv4.ICMPTypeEcho
	var reply icmp.Type = ipv4.ICMPTypeEchoReply
	if addr.Is6() {
		network, laddr, proto = "ip6:ipv6-icmp", "::", 58
		typ, reply = ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
	}
	c, err := icmp.ListenPacket(network, laddr)
	if err != nil {
		return "", fmt.Errorf("icmp: %w", err)
	}
	defer c.Close()
	id, seq := os.Getpid()&0xffff, int(time.Now().UnixNano()&0xffff)
	msg := icmp.Message{Type: typ, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("haven probe")}}
	req, err := msg.Marshal(nil)
	if err != nil {
		return "", err
	}
	dst := &net.IPAddr{IP: addr.AsSlice()}
	if addr.Is6() && addr.IsLinkLocalUnicast() {
		dst.Zone = dev
	}
	buf := make([]byte, 1500)
	sched := newProbeSchedule(total)
	for !sched.over() {
		if sched.due() {
			if _, err := c.WriteTo(req, dst); err != nil {
				return "", fmt.Errorf("icmp echo: %w", err)
			}
		}
		end := time.Now().Add(sched.wait())
		if d, ok := ctx.Deadline(); ok && d.Before(end) {
			end = d
		}
		_ = c.SetReadDeadline(end)
		for {
			n, peer, err := c.ReadFrom(buf)
			if err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				break // deadline: next probe
			}
			ip, ok := peer.(*net.IPAddr)
			if !ok {
				continue
			}
			if from, ok := netip.AddrFromSlice(ip.IP); !ok || from.Unmap() != addr {
				continue
			}
			m, err := icmp.ParseMessage(proto, buf[:n])
			if err != nil || m.Type != reply {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq {
				return "answers ICMP echo", nil
			}
		}
	}
	return "", nil
}
