package resource

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The status of an ip resource is read from the kernel through rtnetlink,
// in the daemon, with no process run: the device's index (SIOCGIFINDEX on
// the netlink socket), then a dump of the addresses of its family on that
// device (RTM_GETADDR). It runs at every check (every 60 s, every 5 s when
// monitored), where `ip -o addr show dev` cost a process start each time.

// nlBufs holds the receive buffers of the dumps: 32 KiB, the most the
// kernel puts in one read of a dump.
var nlBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// nlSeq is the sequence number of the dump request.
const nlSeq = 1

// devAddr looks for addr among the addresses of the device dev: whether it
// is there, with the prefix length it has there and its IFA_F_* flags
// (the 32-bit IFA_FLAGS attribute when the kernel sends it, else the 8 bits
// of ifa_flags). A device that does not exist gives errNoDevice. timeout
// bounds each read of the answer.
func devAddr(ctx context.Context, dev string, addr netip.Addr, timeout time.Duration) (bool, netip.Prefix, uint32, error) {
	if err := ctx.Err(); err != nil {
		return false, netip.Prefix{}, 0, err
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return false, netip.Prefix{}, 0, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	noDevice := func() error { return fmt.Errorf("device %s: %w", dev, errNoDevice) }
	ifr, err := unix.NewIfreq(dev)
	if err != nil { // a name longer than the kernel's: no such device
		return false, netip.Prefix{}, 0, noDevice()
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		if errors.Is(err, unix.ENODEV) {
			return false, netip.Prefix{}, 0, noDevice()
		}
		return false, netip.Prefix{}, 0, fmt.Errorf("device %s: %w", dev, err)
	}
	index := ifr.Uint32()
	// Ask the kernel to dump the addresses of this device only (Linux 4.20
	// and later; older kernels send them all and the index is checked
	// below), and bound each read.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	tv := unix.NsecToTimeval(max(timeout, time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return false, netip.Prefix{}, 0, fmt.Errorf("netlink socket: %w", err)
	}

	family := byte(unix.AF_INET6)
	if addr.Is4() {
		family = unix.AF_INET
	}
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfAddrmsg)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.RTM_GETADDR)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], nlSeq)
	req[16] = family              // ifa_family
	ne.PutUint32(req[20:], index) // ifa_index
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, netip.Prefix{}, 0, fmt.Errorf("netlink: addresses of %s: %w", dev, err)
	}

	bp := nlBufs.Get().(*[]byte)
	defer nlBufs.Put(bp)
	buf := *bp
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return false, netip.Prefix{}, 0, fmt.Errorf("netlink: addresses of %s: no answer within %s", dev, timeout)
		}
		if err != nil {
			return false, netip.Prefix{}, 0, fmt.Errorf("netlink: addresses of %s: %w", dev, err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return false, netip.Prefix{}, 0, fmt.Errorf("netlink: addresses of %s: %w", dev, err)
		}
		for i := range msgs {
			m := &msgs[i]
			if m.Header.Seq != nlSeq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE, unix.NLMSG_ERROR:
				// both carry an errno (negative) or 0 first
				var errno int32
				if len(m.Data) >= 4 {
					errno = int32(ne.Uint32(m.Data))
				}
				switch {
				case errno == 0:
					return false, netip.Prefix{}, 0, nil
				case unix.Errno(-errno) == unix.ENODEV: // gone since its index was read
					return false, netip.Prefix{}, 0, noDevice()
				default:
					return false, netip.Prefix{}, 0, fmt.Errorf("netlink: addresses of %s: %w", dev, unix.Errno(-errno))
				}
			case unix.RTM_NEWADDR:
				if pfx, flags, ok := matchAddr(m, index, addr); ok {
					return true, pfx, flags, nil
				}
			}
		}
	}
}

// matchAddr reads one RTM_NEWADDR message: whether it is addr on the device
// of the given index, and then its prefix and flags. The address is
// IFA_LOCAL when there is one (IPv4; IFA_ADDRESS is then the peer of a
// point-to-point link), else IFA_ADDRESS, as `ip addr show` reads them.
func matchAddr(m *syscall.NetlinkMessage, index uint32, addr netip.Addr) (netip.Prefix, uint32, bool) {
	if len(m.Data) < unix.SizeofIfAddrmsg {
		return netip.Prefix{}, 0, false
	}
	bits, flags := int(m.Data[1]), uint32(m.Data[2])
	if binary.NativeEndian.Uint32(m.Data[4:8]) != index {
		return netip.Prefix{}, 0, false
	}
	attrs, err := syscall.ParseNetlinkRouteAttr(m)
	if err != nil {
		return netip.Prefix{}, 0, false
	}
	var local, address []byte
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFA_LOCAL:
			local = a.Value
		case unix.IFA_ADDRESS:
			address = a.Value
		case unix.IFA_FLAGS:
			if len(a.Value) == 4 {
				flags = binary.NativeEndian.Uint32(a.Value)
			}
		}
	}
	if local == nil {
		local = address
	}
	ip, ok := netip.AddrFromSlice(local)
	if !ok || ip.Unmap() != addr {
		return netip.Prefix{}, 0, false
	}
	return netip.PrefixFrom(ip, bits), flags, true
}
