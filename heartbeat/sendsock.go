package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

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
// docs/benchmarks.md, issue 26). The sending socket is a plain descriptor
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
	var sa unix.Sockaddr
	switch a := ap.Addr(); {
	case s.v6:
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	case a.Is4() || a.Is4In6():
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}
	default:
		return fmt.Errorf("IPv6 destination %s from an IPv4 socket", ap)
	}
	err := unix.Sendto(s.fd, b, unix.MSG_DONTWAIT, sa)
	if errors.Is(err, unix.EAGAIN) {
		return errSendFull
	}
	return err
}

func (s *sendSock) close() { unix.Close(s.fd) }
