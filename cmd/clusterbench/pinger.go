package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"haven/test/chaos"
)

// pinger is a client outside the nodes: from its own namespace of the bed
// it sends an ICMP echo to the VIP every period (through the kernel, so
// the client's ARP cache decides which host gets it, as a real client's
// would), and reads the echo replies on a packet socket of its eth0, which
// tells which host answered (the Ethernet source address).
type pinger struct {
	vip    net.IP
	period time.Duration
	id     int
	ic     *icmp.PacketConn
	fd     int
	paused atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	replies []echoReply
}

type echoReply struct {
	t   time.Time
	mac string
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func newPinger(bed *chaos.Bed, host, vip string, period time.Duration) (*pinger, error) {
	p := &pinger{vip: net.ParseIP(vip).To4(), period: period, id: 1 + rand.IntN(0xfffe), fd: -1, stop: make(chan struct{})}
	err := chaos.InNetns(bed.NS[host], func() error {
		ic, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		if err != nil {
			return err
		}
		p.ic = ic
		ifi, err := net.InterfaceByName(chaos.Dev)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_IP)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		p.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifi.Index}); err != nil {
			return fmt.Errorf("bind the packet socket to %s: %w", chaos.Dev, err)
		}
		tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if err != nil {
		p.close()
		return nil, fmt.Errorf("pinger in %s: %w", bed.NS[host], err)
	}
	p.wg.Add(3)
	go p.send()
	go p.drain()
	go p.receive()
	return p, nil
}

func (p *pinger) send() {
	defer p.wg.Done()
	t := time.NewTicker(p.period)
	defer t.Stop()
	seq := 0
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		if p.paused.Load() {
			continue
		}
		seq++
		b, _ := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: p.id, Seq: seq & 0xffff, Data: []byte("havenbench")}}).Marshal(nil)
		p.ic.WriteTo(b, &net.IPAddr{IP: p.vip}) // no route while cut: no answer
	}
}

// drain empties the ICMP socket, which also queues the replies.
func (p *pinger) drain() {
	defer p.wg.Done()
	buf := make([]byte, 1500)
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		p.ic.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		p.ic.ReadFrom(buf)
	}
}

func (p *pinger) receive() {
	defer p.wg.Done()
	buf := make([]byte, 2048)
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		n, from, err := unix.Recvfrom(p.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		now := time.Now()
		sa, ok := from.(*unix.SockaddrLinklayer)
		if !ok || sa.Pkttype == unix.PACKET_OUTGOING || n < 28 {
			continue
		}
		ihl := int(buf[0]&0x0f) * 4
		if buf[0]>>4 != 4 || buf[9] != 1 || n < ihl+8 || !net.IP(buf[12:16]).Equal(p.vip) {
			continue
		}
		m := buf[ihl:n]
		if m[0] != 0 || int(binary.BigEndian.Uint16(m[4:6])) != p.id {
			continue
		}
		p.mu.Lock()
		p.replies = append(p.replies, echoReply{t: now, mac: net.HardwareAddr(sa.Addr[:sa.Halen]).String()})
		if len(p.replies) > 20000 {
			p.replies = append([]echoReply(nil), p.replies[10000:]...)
		}
		p.mu.Unlock()
	}
}

// last is the latest reply (zero when none).
func (p *pinger) last() echoReply {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.replies) == 0 {
		return echoReply{}
	}
	return p.replies[len(p.replies)-1]
}

// firstAfter waits for the first reply after t from another host than
// notMAC, for at most within.
func (p *pinger) firstAfter(t time.Time, notMAC string, within time.Duration) (echoReply, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, r := range p.replies {
			if r.t.After(t) && r.mac != notMAC {
				p.mu.Unlock()
				return r, nil
			}
		}
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	return echoReply{}, fmt.Errorf("no echo reply from another host than %s within %s", notMAC, within)
}

func (p *pinger) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
	if p.ic != nil {
		p.ic.Close()
	}
	if p.fd >= 0 {
		unix.Close(p.fd)
	}
}
