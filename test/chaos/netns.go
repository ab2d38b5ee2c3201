// Package chaos runs Haven's daemons in network namespaces, injects faults
// (daemon crashes and pauses, link cuts, partitions, packet loss, a full
// /var) and audits the cluster after each named test, in the manner of
// Pacemaker's CTS. The namespace test bed here is also the one the e2e
// tests use (e2e/netns_helpers_test.go wraps it).
package chaos

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// The network-namespace test bed: one namespace holds a bridge (br0), and
// each host (a node, or the arbitrator) has its own namespace joined to it
// by a veth pair: eth0 in the host's namespace (192.0.2.N/24, TEST-NET-1),
// v-NAME on the bridge. Nothing is created in the root namespace, so link
// names only need to be unique inside a namespace; the namespace names
// carry a random id per bed.
//
//	ns hv-ID-br:  br0 ── v-n1 ─┐ ── v-n2 ─┐ ── v-n3 ─┐
//	ns hv-ID-n1:  eth0 192.0.2.1 ──────────┘          │          │
//	ns hv-ID-n2:  eth0 192.0.2.2 ─────────────────────┘          │
//	ns hv-ID-n3:  eth0 192.0.2.3 ────────────────────────────────┘
//
// With two links (NewBedLinks), a second bridge br1 joins every host again
// by a second veth pair: eth1 in the host's namespace (198.51.100.N/24,
// TEST-NET-2), w-NAME on br1; cluster.toml lists both addresses of each
// node, and CutLink cuts one of them.
//
// Daemons run inside their node's namespace (`ip netns exec`); the CLIs
// reach them from the root namespace over the unix socket of their root.
// Filtering faults (partitions, one-way and random loss) are iptables rules
// in a chain of the receiving host's namespace (chainName), so that Heal
// removes them all at once.
const (
	Dev    = "eth0"     // the host side of its veth
	HBPort = 10000      // heartbeat port, the same in every namespace
	Subnet = "192.0.2." // TEST-NET-1: traffic stays in our namespaces
	// Dev2 and Subnet2 are those of the second link (NewBedLinks).
	Dev2      = "eth1"
	Subnet2   = "198.51.100." // TEST-NET-2
	chainName = "HAVEN-CHAOS"
)

// Bed is a bridge and one namespace per host.
type Bed struct {
	ID   string
	BrNS string
	NS   map[string]string // host name -> namespace
	Addr map[string]string // host name -> address on eth0
	// Addr2 is each host's address on eth1 (second link), empty with one
	// link.
	Addr2 map[string]string
	links int             // 1 or 2 (NewBedLinks)
	made  []string        // namespaces to delete, in creation order
	ipt   map[string]bool // hosts whose chaos chain exists
	// delays are the packet delayers by receiving host (Delay)
	delays map[string]*delayer
	// onpath are the on-path attacker's queues by receiving host (onpath.go)
	onpath map[string]*onPath
}

// NetnsUnavailable says why network namespaces cannot be made here ("" when
// they can): not root, no `ip`, or `ip netns` failing.
func NetnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "network-namespace tests need root (run `make test` as root to include them)"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "network-namespace tests need iproute2 (`ip`), not found in PATH"
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Sprintf("`ip netns` is unavailable: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// ErrNoNamespace is wrapped by NewBed when the first namespace cannot be
// made (a container without the privilege): callers skip rather than fail.
var ErrNoNamespace = errors.New("cannot create a network namespace")

// IP runs ip with args and returns its output.
func IP(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// NewBed builds the bridge and one namespace per name, whose addresses are
// 192.0.2.1, .2, ... in order. On an error, what was made is removed.
func NewBed(names []string) (b *Bed, err error) { return NewBedLinks(names, 1) }

// NewBedLinks is NewBed with links (1 or 2) links per host: the second on
// its own bridge, at 198.51.100.N.
func NewBedLinks(names []string, links int) (b *Bed, err error) {
	rnd := make([]byte, 3)
	rand.Read(rnd)
	b = &Bed{ID: hex.EncodeToString(rnd), NS: map[string]string{}, Addr: map[string]string{}, Addr2: map[string]string{},
		links: min(max(links, 1), 2), ipt: map[string]bool{}, delays: map[string]*delayer{}}
	b.BrNS = "hv-" + b.ID + "-br"
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if err := b.addNS(b.BrNS); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"-n", b.BrNS, "link", "add", "br0", "type", "bridge"}, {"-n", b.BrNS, "link", "set", "br0", "up"}} {
		if _, err := IP(args...); err != nil {
			return nil, err
		}
	}
	if b.links == 2 {
		for _, args := range [][]string{{"-n", b.BrNS, "link", "add", "br1", "type", "bridge"}, {"-n", b.BrNS, "link", "set", "br1", "up"}} {
			if _, err := IP(args...); err != nil {
				return nil, err
			}
		}
	}
	for i, n := range names {
		if err := b.AddHost(n, fmt.Sprintf("%s%d", Subnet, i+1)); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *Bed) addNS(ns string) error {
	recordMade(madeEntry{Netns: ns})
	out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput()
	if err != nil {
		if len(b.made) == 0 {
			return fmt.Errorf("%w (ip netns add): %v: %s", ErrNoNamespace, err, strings.TrimSpace(string(out)))
		}
		return fmt.Errorf("ip netns add %s: %w: %s", ns, err, out)
	}
	b.made = append(b.made, ns)
	_, err = IP("-n", ns, "link", "set", "lo", "up")
	return err
}

// AddHost adds a namespace for name with addr on its eth0, on the bridge.
func (b *Bed) AddHost(name, addr string) error {
	ns := "hv-" + b.ID + "-" + name
	if err := b.addNS(ns); err != nil {
		return err
	}
	b.NS[name] = ns
	b.Addr[name] = addr
	br := b.brPort(name)
	for _, args := range [][]string{
		{"-n", b.BrNS, "link", "add", br, "type", "veth", "peer", "name", Dev, "netns", ns},
		{"-n", b.BrNS, "link", "set", br, "master", "br0"},
		{"-n", b.BrNS, "link", "set", br, "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", Dev},
		{"-n", ns, "link", "set", Dev, "up"},
	} {
		if _, err := IP(args...); err != nil {
			return err
		}
	}
	if b.links < 2 {
		return nil
	}
	// the second link: same host number on TEST-NET-2
	addr2 := Subnet2 + addr[strings.LastIndexByte(addr, '.')+1:]
	b.Addr2[name] = addr2
	br2 := b.brPort2(name)
	for _, args := range [][]string{
		{"-n", b.BrNS, "link", "add", br2, "type", "veth", "peer", "name", Dev2, "netns", ns},
		{"-n", b.BrNS, "link", "set", br2, "master", "br1"},
		{"-n", b.BrNS, "link", "set", br2, "up"},
		{"-n", ns, "addr", "add", addr2 + "/24", "dev", Dev2},
		{"-n", ns, "link", "set", Dev2, "up"},
	} {
		if _, err := IP(args...); err != nil {
			return err
		}
	}
	return nil
}

// Links is the number of links per host (1 or 2).
func (b *Bed) Links() int { return b.links }

// HBAddrs are the heartbeat addresses of host n, one per link.
func (b *Bed) HBAddrs(n string) []string {
	out := []string{fmt.Sprintf("%s:%d", b.Addr[n], HBPort)}
	if a := b.Addr2[n]; a != "" {
		out = append(out, fmt.Sprintf("%s:%d", a, HBPort))
	}
	return out
}

// brPort2 is the bridge side of the host's second veth.
func (b *Bed) brPort2(n string) string { return "w-" + n }

// CutLink sets the bridge side of link (0: eth0, 1: eth1) of n down (on)
// or up again (off): one network of n fails, the others work.
func (b *Bed) CutLink(n string, link int, on bool) error {
	port := b.brPort(n)
	if link == 1 {
		if b.links < 2 {
			return fmt.Errorf("%s has no second link", n)
		}
		port = b.brPort2(n)
	}
	state := "up"
	if on {
		state = "down"
	}
	_, err := IP("-n", b.BrNS, "link", "set", port, state)
	return err
}

// Close kills every process left in the bed's namespaces (the caller asks
// its daemons to stop first), then deletes the namespaces, which deletes
// their links. It returns what it could not delete.
func (b *Bed) Close() []error {
	var errs []error
	if err := b.noDelay(b.Names()); err != nil {
		errs = append(errs, err)
	}
	if err := b.noOnPath(b.Names()); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range b.made {
		for _, pid := range nsPids(ns) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %w: %s", ns, err, out))
		}
	}
	b.made = nil
	return errs
}

// nsPids lists the processes in namespace ns, never this one.
func nsPids(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Pids lists the processes running in host n's namespace.
func (b *Bed) Pids(n string) []int { return nsPids(b.NS[n]) }

// Command is name with args run inside host n's namespace.
func (b *Bed) Command(n, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", b.NS[n], name}, args...)...)
}

// Names are the hosts of the bed, sorted.
func (b *Bed) Names() []string { return slices.Sorted(maps.Keys(b.NS)) }

// brPort is the bridge side of the host's veth (at most 15 characters).
func (b *Bed) brPort(n string) string { return "v-" + n }

// Cut sets the bridge side of n's veths down (n's eth0, and eth1 with two
// links, lose their carrier and keep their addresses): n is cut from every
// network. Restore sets them up again.
func (b *Bed) Cut(n string) error {
	for i := 0; i < b.links; i++ {
		if err := b.CutLink(n, i, true); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bed) Restore(n string) error {
	for i := 0; i < b.links; i++ {
		if err := b.CutLink(n, i, false); err != nil {
			return err
		}
	}
	return nil
}

// HasAddr reports whether addr is on eth0 in n's namespace.
func (b *Bed) HasAddr(n, addr string) (bool, error) {
	out, err := IP("-j", "-n", b.NS[n], "addr", "show", "dev", Dev)
	if err != nil {
		return false, err
	}
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return false, fmt.Errorf("ip -j addr in %s: %w", b.NS[n], err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Local == addr {
				return true, nil
			}
		}
	}
	return false, nil
}

// Holders lists the hosts whose namespace holds addr.
func (b *Bed) Holders(addr string) ([]string, error) {
	var out []string
	for _, n := range b.Names() {
		ok, err := b.HasAddr(n, addr)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// MAC is the hardware address of eth0 in n's namespace.
func (b *Bed) MAC(n string) (string, error) {
	out, err := IP("-j", "-n", b.NS[n], "link", "show", "dev", Dev)
	if err != nil {
		return "", err
	}
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		return "", fmt.Errorf("ip -j link show in %s: %v: %s", b.NS[n], err, out)
	}
	return links[0].Address, nil
}

// NeighMAC is the hardware address n's neighbour table holds for addr ("" if none).
func (b *Bed) NeighMAC(n, addr string) (string, error) {
	out, err := IP("-j", "-n", b.NS[n], "neigh", "show", addr, "dev", Dev)
	if err != nil || strings.TrimSpace(out) == "" {
		return "", err
	}
	var ns []struct {
		LLAddr string `json:"lladdr"`
	}
	if err := json.Unmarshal([]byte(out), &ns); err != nil {
		return "", fmt.Errorf("ip -j neigh in %s: %w: %s", b.NS[n], err, out)
	}
	if len(ns) == 0 {
		return "", nil
	}
	return ns[0].LLAddr, nil
}

// InNetns runs f on an OS thread switched into the namespace ns, then
// switches the thread back. While switched, the thread runs nothing else
// (LockOSThread). If it cannot switch back, it stays locked and ends with
// the goroutine. (A thread left in ns must never be the main thread: the
// kernel shows the main thread's namespace as the process's, and the bed's
// cleanup would then count this process among the namespace's pids.)
// Sockets opened by f stay in ns after it returns.
func InNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(self)
		fd, err := unix.Open(filepath.Join("/var/run/netns", ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns back from %s: %w", ns, err) // the thread stays locked and ends
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Ping sends one ICMP echo to addr from n's namespace and reports whether
// addr answered within wait. It needs no ping binary: a raw ICMP socket
// opened in the namespace (root has CAP_NET_RAW).
func (b *Bed) Ping(n, addr string, wait time.Duration) (bool, error) {
	dst := net.ParseIP(addr)
	ok := false
	err := InNetns(b.NS[n], func() error {
		c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		if err != nil {
			return err
		}
		defer c.Close()
		id, seq := os.Getpid()&0xffff, int(time.Now().UnixNano()&0xffff)
		req, err := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("haven e2e")}}).Marshal(nil)
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(req, &net.IPAddr{IP: dst}); err != nil {
			return nil // e.g. no route while the link is down: no answer
		}
		c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, 1500)
		for {
			m, peer, err := c.ReadFrom(buf)
			if err != nil {
				return nil // deadline
			}
			if ip, _ := peer.(*net.IPAddr); ip == nil || !ip.IP.Equal(dst) {
				continue
			}
			msg, err := icmp.ParseMessage(1, buf[:m])
			if err != nil || msg.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if e, _ := msg.Body.(*icmp.Echo); e != nil && e.ID == id && e.Seq == seq {
				ok = true
				return nil
			}
		}
	})
	if err != nil {
		return false, fmt.Errorf("ping %s from %s: %w", addr, b.NS[n], err)
	}
	return ok, nil
}
