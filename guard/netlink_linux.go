package guard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// delAddr removes address prefix ("10.0.0.5/24") from device dev with one
// rtnetlink request (RTM_DELADDR), as `ip addr del` does, without running
// a process. It reports whether it removed it: an address, or a device,
// that is not there is nothing to remove. An IPv4 address is matched by
// itself (whatever prefix it has there); an IPv6 one by itself and its
// prefix length.
func delAddr(dev, prefix string) (bool, error) {
	p, err := netip.ParsePrefix(prefix)
	if err != nil {
		return false, err
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return false, sysErr("socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(dev)
	if err != nil {
		return false, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		if errors.Is(err, unix.ENODEV) {
			return false, nil // the device is gone, its addresses with it
		}
		return false, sysErr("SIOCGIFINDEX "+dev, err)
	}
	index := ifr.Uint32()
	addr := p.Addr().Unmap()
	family, attrs := uint8(unix.AF_INET), []uint16{unix.IFA_LOCAL}
	if addr.Is6() {
		family, attrs = unix.AF_INET6, []uint16{unix.IFA_ADDRESS}
	}
	raw := addr.AsSlice()
	// nlmsghdr, ifaddrmsg, then each attribute (rtattr and the address,
	// already a multiple of 4 bytes)
	size := unix.SizeofNlMsghdr + unix.SizeofIfAddrmsg + len(attrs)*(unix.SizeofRtAttr+len(raw))
	b := make([]byte, size)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(size))
	ne.PutUint16(b[4:], unix.RTM_DELADDR)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(b[8:], 1) // seq
	o := unix.SizeofNlMsghdr
	b[o] = family
	b[o+1] = uint8(p.Bits())
	ne.PutUint32(b[o+4:], index)
	o += unix.SizeofIfAddrmsg
	for _, typ := range attrs {
		ne.PutUint16(b[o:], uint16(unix.SizeofRtAttr+len(raw)))
		ne.PutUint16(b[o+2:], typ)
		copy(b[o+unix.SizeofRtAttr:], raw)
		o += unix.SizeofRtAttr + len(raw)
	}
	tv := unix.NsecToTimeval(int64(time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return false, sysErr("setsockopt", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, sysErr("bind", err)
	}
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, sysErr("sendto", err)
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, sysErr("recvfrom", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			switch errno := syscall.Errno(-int32(ne.Uint32(m.Data))); errno {
			case 0:
				return true, nil
			case unix.EADDRNOTAVAIL, unix.ENODEV:
				return false, nil // not there
			default:
				return false, fmt.Errorf("RTM_DELADDR: %w", errno)
			}
		}
	}
}

func sysErr(call string, err error) error { return fmt.Errorf("%s: %w", call, err) }
