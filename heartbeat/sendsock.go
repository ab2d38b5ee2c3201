package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Datagrams leave by a socket of their own (sendSock), bound to the same
// address and port as the link's receiving socket: the peers check that a
// datagram comes from our configured address and port, so the source must
// stay that port. Go's runtime watches every socket it opens for reading
// AND writing (edge-triggered): each datagram sent by the receiving socket
// made the kernel report it writable again once the datagram left, a
// wake-up of the whole process for nothing, as many as the beats sent (4 a
// second at hb 3s/1s with two peers, a third of an idle daemon's wake-ups;
// docs/benchmarks.md). The sending socket is a plain descriptor
// that no poller watches, written without blocking (MSG_DONTWAIT: a full
// buffer is a datagram lost, as on the wire).
//
// Two sockets share a port through SO_REUSEPORT; a one-instruction
// program attached to the pair (SO_ATTACH_REUSEPORT_CBPF: "return 0")
// hands every datagram that arrives to the first, the receiving socket, so
// the sending one never holds any. The TCP listener of the link binds the
// port without SO_REUSEPORT: a second daemon on the same address still
// fails to start (its TCP bind is refused before it binds UDP).

// listenUDPShared binds the link's receiving UDP socket at ip:port with
// SO_REUSEPORT.
func listenUDPShared(ip net.IP, port int) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp", net.JoinHostPort(ipString(ip), fmt.Sprint(port)))
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

func ipString(ip net.IP) string {
	if ip == nil {
		return ""
	}
	return ip.String()
}

// sendSock is the sending socket of a link.
type sendSock struct {
	fd int
	v6 bool // an AF_INET6 socket (dual stack when bound to the wildcard)
}

// openSendSock opens the sending socket beside udp (bound, SO_REUSEPORT)
// and steers every arriving datagram to udp.
func openSendSock(udp *net.UDPConn) (*sendSock, error) {
	rc, err := udp.SyscallConn()
	if err != nil {
		return nil, err
	}
	var local unix.Sockaddr
	var v6only int
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		if local, cerr = unix.Getsockname(int(fd)); cerr != nil {
			return
		}
		if _, ok := local.(*unix.SockaddrInet6); ok {
			if v6only, cerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_V6ONLY); cerr != nil {
				return
			}
		}
		// every datagram to the group's first socket, udp
		prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
		cerr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF,
			&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("sending socket: %w", cerr)
	}
	family := unix.AF_INET
	_, v6 := local.(*unix.SockaddrInet6)
	if v6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sending socket: %w", err)
	}
	s := &sendSock{fd: fd, v6: v6}
	if err := s.setup(local, v6only); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sending socket: %w", err)
	}
	return s, nil
}

func (s *sendSock) setup(local unix.Sockaddr, v6only int) error {
	if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return err
	}
	if s.v6 {
		if err := unix.SetsockoptInt(s.fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			return err
		}
	}
	return unix.Bind(s.fd, local)
}

// errSendFull is a datagram the kernel had no room for.
var errSendFull = errors.New("send buffer full: datagram dropped")

// sendTo sends one datagram to ap without blocking.
func (s *sendSock) sendTo(b []byte, ap netip.AddrPort) error {
	var sa rawSockaddr
	n, err := sa.set(ap, s.v6)
	if err != nil {
		return err
	}
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	for {
		// sendto(2) without telling the runtime (see rawSockaddr)
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), uintptr(p), uintptr(len(b)),
			unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&sa)), uintptr(n))
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return errSendFull
		}
		return e
	}
}

// Datagrams are sent and received by raw system calls (RawSyscall): a
// call the runtime is told of (syscall.Syscall, as the net package and
// unix.Sendto make) wakes the runtime's monitor thread, sysmon, when it
// sleeps, so that it can take the processor back from a call that blocks.
// These calls never block (MSG_DONTWAIT; the receive runs only once the
// poller says the socket is readable), and sysmon woke for each of them:
// two or three thread wake-ups more per datagram, a third of an idle
// daemon's wake-ups (docs/benchmarks.md).

// rawSockaddr is a sockaddr_in or sockaddr_in6 as the kernel reads it.
type rawSockaddr struct {
	family uint16
	port   [2]byte  // network order
	a      [24]byte // in: the address; in6: flowinfo, address, scope id
}

// set fills sa with ap (as an IPv6 address on an AF_INET6 socket) and
// returns its length.
func (sa *rawSockaddr) set(ap netip.AddrPort, v6 bool) (int, error) {
	sa.port = [2]byte{byte(ap.Port() >> 8), byte(ap.Port())}
	switch a := ap.Addr(); {
	case v6:
		sa.family = unix.AF_INET6
		a16 := a.As16()
		copy(sa.a[4:20], a16[:])
		return unix.SizeofSockaddrInet6, nil
	case a.Is4() || a.Is4In6():
		sa.family = unix.AF_INET
		a4 := a.Unmap().As4()
		copy(sa.a[:4], a4[:])
		return unix.SizeofSockaddrInet4, nil
	}
	return 0, fmt.Errorf("IPv6 destination %s from an IPv4 socket", ap)
}

// addrPort is the address in sa (IPv4-mapped addresses unmapped).
func (sa *rawSockaddr) addrPort() netip.AddrPort {
	port := uint16(sa.port[0])<<8 | uint16(sa.port[1])
	switch sa.family {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa.a[:4])), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(sa.a[4:20])).Unmap(), port)
	}
	return netip.AddrPort{}
}

// udpReader reads datagrams from a UDP socket by raw calls, waiting in the
// runtime's poller while there is none.
type udpReader struct {
	rc  syscall.RawConn
	buf []byte
	sa  rawSockaddr
	n   int
	err syscall.Errno
	fn  func(fd uintptr) bool // read, allocated once
}

func newUDPReader(udp *net.UDPConn, size int) (*udpReader, error) {
	rc, err := udp.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &udpReader{rc: rc, buf: make([]byte, size)}
	r.fn = func(fd uintptr) bool {
		for {
			sl := uint32(unsafe.Sizeof(r.sa))
			n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)),
				unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&r.sa)), uintptr(unsafe.Pointer(&sl)))
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait until readable
			}
			r.n, r.err = int(n), e
			return true
		}
	}
	return r, nil
}

// read returns the next datagram (valid until the next read) and its
// source. The error is the socket's (net.ErrClosed once it is closed).
func (r *udpReader) read() ([]byte, netip.AddrPort, error) {
	if err := r.rc.Read(r.fn); err != nil {
		return nil, netip.AddrPort{}, err
	}
	if r.err != 0 {
		return nil, netip.AddrPort{}, r.err
	}
	return r.buf[:r.n], r.sa.addrPort(), nil
}

func (s *sendSock) close() { unix.Close(s.fd) }
