package web

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
)

// clientOf names the client of r for the cap on live streams per client.
// On the loopback every local user comes from the same address: there the
// client is the user that owns the connection's socket (its uid, read
// from the kernel's table of TCP sockets, as identd does), so that one
// user cannot hold every live page and lock the others (the admin) out.
// Elsewhere the client is its address.
func clientOf(r *http.Request) string {
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if !remote.Addr().Unmap().IsLoopback() {
		return "addr " + remote.Addr().Unmap().String()
	}
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	local, err := netip.ParseAddrPort(fmt.Sprint(la))
	if la == nil || err != nil {
		return "addr " + remote.Addr().Unmap().String()
	}
	if uid, ok := socketUID(remote, local); ok {
		return "uid " + uid
	}
	return "addr " + remote.Addr().Unmap().String()
}

// socketUID finds the uid owning the local TCP socket whose own address
// is from and whose peer is to (the client's end of a connection to this
// view), in /proc/net/tcp and /proc/net/tcp6 of this network namespace.
func socketUID(from, to netip.AddrPort) (string, bool) {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		v6 := strings.HasSuffix(f, "6")
		want := procAddr(from, v6) + " " + procAddr(to, v6)
		if want == " " {
			continue
		}
		if uid, ok := scanTCP(f, want); ok {
			return uid, true
		}
	}
	return "", false
}

// scanTCP looks for the line of a socket "LOCAL REMOTE" in a /proc/net/tcp
// file and returns its uid column.
func scanTCP(path, addrs string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fs := strings.Fields(sc.Text())
		if len(fs) > 7 && fs[1]+" "+fs[2] == addrs {
			return fs[7], true
		}
	}
	return "", false
}

// procAddr writes an address as /proc/net/tcp does: each 32-bit word of
// the address in the host's byte order as 8 hex digits, a colon, the port
// as 4 hex digits. An IPv4 address in the tcp6 table is v4-mapped (a
// socket of a dual-stack listener); an IPv6 one has no form in tcp ("").
func procAddr(a netip.AddrPort, v6 bool) string {
	ip := a.Addr()
	var b []byte
	switch {
	case v6:
		s := ip.As16()
		b = s[:]
	case ip.Unmap().Is4():
		s := ip.Unmap().As4()
		b = s[:]
	default:
		return ""
	}
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&sb, "%08X", binary.NativeEndian.Uint32(b[i:i+4]))
	}
	fmt.Fprintf(&sb, ":%04X", a.Port())
	return sb.String()
}
