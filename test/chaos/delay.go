package chaos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Delay without netem: this kernel has no netem qdisc, so the bed delays
// packets in user space with NFQUEUE. An iptables rule in the receiving
// host's chaos chain hands every packet that arrives on eth0 to a netlink
// queue; a goroutine of this process, bound to that queue in the host's
// namespace, holds each packet for the delay and then gives the kernel its
// verdict (accept): the packet goes on unchanged. UDP and TCP alike, with
// their real addresses and ports, in order (the delay is the same for
// every packet), nothing rewritten.
//
// Why not a relay (a proxy socket between two namespaces): Haven's
// heartbeat rejects an authenticated frame that comes from another address
// than its sender's configured one, and a relay's sockets send from the
// relay's address; keeping the source would take transparent proxying
// (TPROXY, spoofed sources) on both protocols. NFQUEUE delays the original
// packets instead, so there is nothing to translate.
//
// The rule carries --queue-bypass: with no program bound to the queue
// (the delayer closed or crashed), packets pass undelayed rather than
// being dropped; the queue is also fail-open (a full queue accepts).

// netlink constants of nfnetlink_queue (linux/netfilter/nfnetlink_queue.h)
const (
	nfnlSubsysQueue   = 3
	nfqnlMsgPacket    = 0
	nfqnlMsgVerdict   = 1
	nfqnlMsgConfig    = 2
	nfqaPacketHdr     = 1
	nfqaVerdictHdr    = 2
	nfqaCfgCmd        = 1
	nfqaCfgParams     = 2
	nfqaCfgQueueMax   = 3
	nfqaCfgMask       = 4
	nfqaCfgFlags      = 5
	nfqnlCfgCmdBind   = 1
	nfqnlCopyMeta     = 1
	nfqaCfgFFailOpen  = 1
	nfAccept          = 1
	delayQueueBase    = 4200 // queue numbers: base + host index
	delayQueueMaxLen  = 8192
	delayRecvTimeout  = 50 * time.Millisecond
	delayRecvBufBytes = 4 << 20
)

// delayer holds the packets of one netlink queue in one namespace.
type delayer struct {
	fd    int
	queue uint16
	d     time.Duration
	held  chan heldPacket
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	count int // packets delayed
	// pick, when set (an on-path attacker, onpath.go), decides for each
	// packet: withheld until releaseHeld, or delayed by its own duration
	// (so packets overtake each other); the FIFO of held is then unused
	pick     func() (d time.Duration, withhold bool)
	withheld []uint32
	timers   sync.WaitGroup
}

type heldPacket struct {
	id  uint32
	due time.Time
}

// Delay holds every packet arriving at n on eth0 for d (both protocols).
// It replaces a delay set before on n; Heal (or NoDelay) removes it.
func (b *Bed) Delay(n string, d time.Duration) error {
	if err := b.NoDelay(n); err != nil {
		return err
	}
	idx := 0
	for i, h := range b.Names() {
		if h == n {
			idx = i
		}
	}
	q := uint16(delayQueueBase + idx)
	var dl *delayer
	err := InNetns(b.NS[n], func() (err error) {
		dl, err = newDelayer(q, d)
		return err
	})
	if err != nil {
		return fmt.Errorf("delay into %s: %w", n, err)
	}
	if err := b.chain(n); err != nil {
		dl.close()
		return err
	}
	if err := b.iptables(n, "-A", chainName, "-i", Dev, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(q), "--queue-bypass"); err != nil {
		dl.close()
		return err
	}
	b.delays[n] = dl
	return nil
}

// NoDelay removes the delay into n: the rule first, then the delayer once
// the packets it holds are released.
func (b *Bed) NoDelay(n string) error {
	return b.noDelay([]string{n})
}

// noDelay removes the delays into the hosts ns: their rules, then their
// delayers at once.
func (b *Bed) noDelay(ns []string) error {
	var errs []error
	var wg sync.WaitGroup
	for _, n := range ns {
		dl := b.delays[n]
		if dl == nil {
			continue
		}
		delete(b.delays, n)
		errs = append(errs, b.iptables(n, "-D", chainName, "-i", Dev, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(dl.queue), "--queue-bypass"))
		wg.Add(1)
		go func() { defer wg.Done(); dl.close() }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Delayed is the number of packets the delay into n, and the on-path
// attacker's queue into n, held so far.
func (b *Bed) Delayed(n string) int {
	total := 0
	for _, dl := range []*delayer{b.delays[n], b.onpath[n].queue()} {
		if dl != nil {
			dl.mu.Lock()
			total += dl.count
			dl.mu.Unlock()
		}
	}
	return total
}

// newDelayer binds netlink queue q in the current namespace (the caller
// runs it in the host's, see InNetns) and starts holding its packets.
func newDelayer(q uint16, d time.Duration) (*delayer, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	dl := &delayer{fd: fd, queue: q, d: d, held: make(chan heldPacket, delayQueueMaxLen), stop: make(chan struct{})}
	fail := func(err error) (*delayer, error) {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fail(fmt.Errorf("netlink bind: %w", err))
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, delayRecvBufBytes)
	tv := unix.NsecToTimeval(int64(delayRecvTimeout))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail(err)
	}
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0} // command, pad, pf (unused)
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff) // copy range (meta only: unused)
	params[4] = nfqnlCopyMeta
	for _, attrs := range [][]nlAttr{
		{{nfqaCfgCmd, cmd}},
		{{nfqaCfgParams, params}, {nfqaCfgQueueMax, be32(delayQueueMaxLen)}, {nfqaCfgMask, be32(nfqaCfgFFailOpen)}, {nfqaCfgFlags, be32(nfqaCfgFFailOpen)}},
	} {
		if err := dl.request(nfqnlMsgConfig, attrs, true); err != nil {
			return fail(fmt.Errorf("bind netlink queue %d: %w", q, err))
		}
	}
	dl.wg.Add(2)
	go dl.read()
	go dl.release()
	return dl, nil
}

type nlAttr struct {
	typ  uint16
	data []byte
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// request sends one nfqueue message; with ack, it waits for the kernel's
// answer (an error number, 0 for success).
func (dl *delayer) request(msg uint16, attrs []nlAttr, ack bool) error {
	b := make([]byte, 16, 64)
	b = append(b, unix.AF_UNSPEC, 0) // nfgenmsg: family, version
	b = binary.BigEndian.AppendUint16(b, dl.queue)
	for _, a := range attrs {
		b = binary.NativeEndian.AppendUint16(b, uint16(4+len(a.data)))
		b = binary.NativeEndian.AppendUint16(b, a.typ)
		b = append(b, a.data...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	flags := uint16(unix.NLM_F_REQUEST)
	if ack {
		flags |= unix.NLM_F_ACK
	}
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|msg)
	binary.NativeEndian.PutUint16(b[6:], flags)
	if err := unix.Sendto(dl.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	if !ack {
		return nil
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(dl.fd, buf, 0)
		if err != nil {
			return err
		}
		for m := buf[:n]; len(m) >= 16; {
			l := int(binary.NativeEndian.Uint32(m))
			if l < 16 || l > len(m) {
				break
			}
			if binary.NativeEndian.Uint16(m[4:]) == unix.NLMSG_ERROR && l >= 20 {
				if e := int32(binary.NativeEndian.Uint32(m[16:])); e != 0 {
					return unix.Errno(-e)
				}
				return nil
			}
			m = m[(l+3)&^3:]
		}
	}
}

// read takes the queued packets and hands them to release with their due
// time.
func (dl *delayer) read() {
	defer dl.wg.Done()
	defer close(dl.held)
	buf := make([]byte, 1<<16)
	for {
		select {
		case <-dl.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(dl.fd, buf, 0)
		if err != nil {
			continue // the receive timeout (to see stop), or ENOBUFS: fail-open covers it
		}
		now := time.Now()
		for m := buf[:n]; len(m) >= 20; {
			l := int(binary.NativeEndian.Uint32(m))
			if l < 20 || l > len(m) {
				break
			}
			if binary.NativeEndian.Uint16(m[4:]) == nfnlSubsysQueue<<8|nfqnlMsgPacket {
				if id, ok := packetID(m[20:l]); ok {
					if dl.pick != nil {
						dl.decide(id)
					} else {
						dl.held <- heldPacket{id: id, due: now.Add(dl.d)}
					}
				}
			}
			m = m[(l+3)&^3:]
		}
	}
}

// packetID finds the packet id in the attributes of a packet message.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x7fff
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:]), true
		}
		attrs = attrs[(l+3)&^3:]
		if len(attrs) > 0 && len(attrs) < 4 {
			break
		}
	}
	return 0, false
}

// release gives each held packet its verdict (accept) when it is due, in
// the order they came.
func (dl *delayer) release() {
	defer dl.wg.Done()
	for p := range dl.held {
		if w := time.Until(p.due); w > 0 {
			time.Sleep(w)
		}
		dl.accept(p.id)
	}
}

// accept gives packet id its verdict: it goes on, unchanged.
func (dl *delayer) accept(id uint32) {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v, nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	dl.request(nfqnlMsgVerdict, []nlAttr{{nfqaVerdictHdr, v}}, false)
	dl.mu.Lock()
	dl.count++
	dl.mu.Unlock()
}

// close releases what is held, then unbinds the queue. The rule is gone:
// nothing new comes, and what the kernel queued before is read within a
// moment (the reader never lags); each held packet still waits its delay.
func (dl *delayer) close() {
	time.Sleep(20 * time.Millisecond)
	close(dl.stop)
	dl.wg.Wait()
	dl.releaseHeld()
	dl.timers.Wait()
	unix.Close(dl.fd)
}
