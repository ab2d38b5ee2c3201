package resource

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// After an address is added, its new place is announced to the link:
// gratuitous ARPs (IPv4) or unsolicited neighbour advertisements (IPv6),
// so that neighbours and switches update their caches at once instead of
// sending to the old owner until their entries expire. One lost packet must
// not strand the clients: like keepalived (garp_master_repeat 5,
// garp_master_refresh after garp_master_delay 5s), a burst of
// announceBurst goes out at once (announceSpacing apart), and another
// announceDelay later, unless the resource stops or the address left the
// device meanwhile.
const (
	announceBurst   = 5
	announceSpacing = 100 * time.Millisecond
	announceDelay   = 5 * time.Second
)

// announcer sends the announcements of one start from its own goroutine.
// It is bounded (2 bursts, about announceDelay + a second) and stopped by
// stop, which waits for it.
type announcer struct {
	stopCh chan struct{}
	done   chan struct{}
	once   sync.Once
}

// announce sends the first announcement now (its error is returned) and the
// others from a goroutine; log receives the later failures (one line per
// burst at most).
func announce(dev string, addr netip.Addr, log func(string)) (*announcer, error) {
	a := &announcer{stopCh: make(chan struct{}), done: make(chan struct{})}
	send := func() error { return sendAnnounce(dev, addr) }
	err := send()
	go func() {
		defer close(a.done)
		for burst := range 2 {
			var failed error
			for i := range announceBurst {
				if burst == 0 && i == 0 {
					continue // sent by the caller
				}
				wait := announceSpacing
				if burst == 1 && i == 0 {
					wait = announceDelay - (announceBurst-1)*announceSpacing
				}
				select {
				case <-a.stopCh:
					return
				case <-time.After(wait):
				}
				// never announce an address this host no longer holds
				if !holds(dev, addr) {
					return
				}
				if err := send(); err != nil && failed == nil {
					failed = err
				}
			}
			if failed != nil && log != nil {
				log(fmt.Sprintf("announce %s on %s: %v", addr, dev, failed))
			}
		}
	}()
	return a, err
}

// stop ends the announcements and waits for the goroutine (nil-safe).
func (a *announcer) stop() {
	if a == nil {
		return
	}
	a.once.Do(func() { close(a.stopCh) })
	<-a.done
}

// wait waits for the last announcement (tests).
func (a *announcer) wait() {
	if a != nil {
		<-a.done
	}
}

// holds tells whether dev carries addr (netlink, no command run).
func holds(dev string, addr netip.Addr) bool {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return false
	}
	as, err := ifi.Addrs()
	if err != nil {
		return false
	}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr {
				return true
			}
		}
	}
	return false
}

// sendAnnounce sends one gratuitous ARP (IPv4) or one unsolicited
// neighbour advertisement (IPv6) for addr on dev.
func sendAnnounce(dev string, addr netip.Addr) error {
	if addr.Is4() {
		return announceARP(dev, addr)
	}
	return announceNA(dev, addr)
}

// announceARP broadcasts a gratuitous ARP request for addr on dev (sender
// and target address both addr).
func announceARP(dev string, addr netip.Addr) error {
	ifi, err := arpIface(dev)
	if err != nil {
		return err
	}
	fd, err := arpSocket(ifi)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return sendARP(fd, ifi, arpPacket(ifi.HardwareAddr, addr, addr))
}

// allNodes is ff02::1, the destination of unsolicited advertisements.
var allNodes = net.ParseIP("ff02::1")

// naPacket builds an ICMPv6 neighbour advertisement of target (RFC 4861
// 4.4): override flag set, solicited flag clear, with the target
// link-layer address option. The kernel fills in the checksum.
func naPacket(target netip.Addr, mac net.HardwareAddr) []byte {
	b := make([]byte, 32)
	b[0] = byte(ipv6.ICMPTypeNeighborAdvertisement)
	binary.BigEndian.PutUint32(b[4:], 1<<29) // O: override
	t := target.As16()
	copy(b[8:24], t[:])
	b[24], b[25] = 2, 1 // option: target link-layer address, 8 bytes
	copy(b[26:32], mac)
	return b
}

// announceNA sends an unsolicited neighbour advertisement for addr to all
// nodes of dev's link, with hop limit 255 as RFC 4861 requires.
func announceNA(dev string, addr netip.Addr) error {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return err
	}
	if len(ifi.HardwareAddr) != 6 {
		return fmt.Errorf("%s has no ethernet address: %w", dev, errNoARP)
	}
	c, err := icmp.ListenPacket("ip6:ipv6-icmp", "::")
	if err != nil {
		return fmt.Errorf("icmpv6: %w", err)
	}
	defer c.Close()
	p := c.IPv6PacketConn()
	if err := errors.Join(p.SetMulticastHopLimit(255), p.SetMulticastInterface(ifi)); err != nil {
		return fmt.Errorf("icmpv6: %w", err)
	}
	_, err = c.WriteTo(naPacket(addr, ifi.HardwareAddr), &net.IPAddr{IP: allNodes, Zone: dev})
	if err != nil {
		return fmt.Errorf("neighbour advertisement: %w", err)
	}
	return nil
}
