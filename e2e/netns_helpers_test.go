package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
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
	"testing"
	"time"

	"haven/dataset"
	"haven/testbed"
)

// The network-namespace test bed: one namespace holds a bridge (br0), and
// each node has its own namespace joined to it by a veth pair: eth0 in the
// node's namespace (192.0.2.N/24, TEST-NET-1), v-NODE on the bridge. Nothing
// is created in the root namespace, so link names only need to be unique
// inside a namespace; the namespace names carry a random id per bed.
//
//	ns hv-ID-br:  br0 ── v-n1 ─┐ ── v-n2 ─┐ ── v-n3 ─┐
//	ns hv-ID-n1:  eth0 192.0.2.1 ──────────┘          │          │
//	ns hv-ID-n2:  eth0 192.0.2.2 ─────────────────────┘          │
//	ns hv-ID-n3:  eth0 192.0.2.3 ────────────────────────────────┘
//
// Daemons run inside their node's namespace (`ip netns exec`); the CLIs
// reach them from the root namespace over the unix socket of their root.

const (
	bedDev    = "eth0"     // the node side of its veth
	bedPort   = 10000      // heartbeat port, the same in every namespace
	bedSubnet = "192.0.2." // TEST-NET-1: traffic stays in our namespaces
)

type netBed struct {
	t     *testing.T
	id    string
	brNS  string
	ns    map[string]string // node name -> namespace
	addr  map[string]string // node name -> heartbeat address
	nodes map[string]*node
}

// skipUnlessNetns skips the test when network namespaces cannot be made.
func skipUnlessNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network-namespace tests need root (run `make test` as root to include them)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network-namespace tests need iproute2 (`ip`), not found in PATH")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		t.Skipf("`ip netns` is unavailable: %v: %s", err, strings.TrimSpace(string(out)))
	}
}

// ipc runs ip with args and fails the test on an error.
func ipc(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out)
}

// newNetBed builds the namespaces, the bridge and the veths for names, and
// the node roots of a cluster whose members are 192.0.2.1, .2, ... Extra
// [node] keys go in nodeExtra. Everything is removed at the end of the test,
// even on failure: the processes left in the namespaces are killed (after
// the daemons were asked to stop), then the namespaces are deleted, which
// deletes their links.
func newNetBed(t *testing.T, names []string, nodeExtra string) *netBed {
	t.Helper()
	skipUnlessNetns(t)
	rnd := make([]byte, 3)
	rand.Read(rnd)
	b := &netBed{t: t, id: hex.EncodeToString(rnd), ns: map[string]string{}, addr: map[string]string{}, nodes: map[string]*node{}}
	b.brNS = "hv-" + b.id + "-br"
	var made []string
	// registered first, so it runs last: after the nodes' daemon stop
	t.Cleanup(func() {
		for _, ns := range made {
			out, _ := exec.Command("ip", "netns", "pids", ns).Output()
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Logf("cleanup: ip netns del %s: %v: %s", ns, err, out)
			}
		}
	})
	addNS := func(ns string) {
		out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput()
		if err != nil {
			if len(made) == 0 {
				t.Skipf("cannot create a network namespace (ip netns add): %v: %s", err, strings.TrimSpace(string(out)))
			}
			t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
		}
		made = append(made, ns)
		ipc(t, "-n", ns, "link", "set", "lo", "up")
	}
	addNS(b.brNS)
	ipc(t, "-n", b.brNS, "link", "add", "br0", "type", "bridge")
	ipc(t, "-n", b.brNS, "link", "set", "br0", "up")
	for i, n := range names {
		ns := "hv-" + b.id + "-" + n
		addNS(ns)
		b.ns[n] = ns
		b.addr[n] = fmt.Sprintf("%s%d", bedSubnet, i+1)
		br := b.brPort(n)
		ipc(t, "-n", b.brNS, "link", "add", br, "type", "veth", "peer", "name", bedDev, "netns", ns)
		ipc(t, "-n", b.brNS, "link", "set", br, "master", "br0")
		ipc(t, "-n", b.brNS, "link", "set", br, "up")
		ipc(t, "-n", ns, "addr", "add", b.addr[n]+"/24", "dev", bedDev)
		ipc(t, "-n", ns, "link", "set", bedDev, "up")
	}

	var members []testbed.Member
	for _, n := range names {
		members = append(members, testbed.Member{Name: n, Addr: fmt.Sprintf("%s:%d", b.addr[n], bedPort)})
	}
	cluster := testbed.ClusterToml("netns", testbed.NewSecret(), members)
	for _, n := range names {
		nodeToml := testbed.NodeToml{Name: n,
			Keys:   []string{`monitor_interval = "300ms"`, `maintenance_grace_period = "6s"`, `ready_period = "2s"`, nodeExtra},
			HBAddr: b.addr[n], HBPort: bedPort, HBTimeout: "3s", HBInterval: "1s"}
		nd := newNode(t, n, nodeToml.String())
		writeClusterToml(t, nd, cluster)
		b.nodes[n] = nd
	}
	t.Logf("netns bed %s: bridge in %s, nodes %v", b.id, b.brNS, b.ns)
	return b
}

// brPort is the bridge side of the node's veth (at most 15 characters).
func (b *netBed) brPort(n string) string { return "v-" + n }

// startDaemon starts the node's daemon inside its namespace.
func (b *netBed) startDaemon(n string) {
	b.t.Helper()
	nd := b.nodes[n]
	cmd := exec.Command("ip", "netns", "exec", b.ns[n], filepath.Join(binDir, "nodemgr"), "--root", nd.root, "daemon", "start")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.t.Fatalf("start the daemon of %s in %s: %v: %s", n, b.ns[n], err, out)
	}
}

// converge waits until every node sees every other up and left rejoin.
func (b *netBed) converge(names []string, within time.Duration) {
	b.t.Helper()
	for _, a := range names {
		for _, o := range names {
			if a != o {
				waitFor(b.t, within, a+" sees "+o+" up", func() bool { return peerStatus(b.nodes[a], o) == dataset.NodeUp })
			}
		}
		waitFor(b.t, within, a+" out of rejoin", func() bool { return b.nodes[a].status().Nodes[a].Monitor == dataset.NodeIdle })
	}
}

// cut sets the bridge side of n's veth down (n's eth0 loses its carrier
// and keeps its addresses); restore sets it up again.
func (b *netBed) cut(n string) {
	b.t.Helper()
	ipc(b.t, "-n", b.brNS, "link", "set", b.brPort(n), "down")
}

func (b *netBed) restore(n string) {
	b.t.Helper()
	ipc(b.t, "-n", b.brNS, "link", "set", b.brPort(n), "up")
}

// hasAddr reports whether addr is on eth0 in n's namespace (`ip -n NS addr`).
func (b *netBed) hasAddr(n, addr string) bool {
	b.t.Helper()
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(ipc(b.t, "-j", "-n", b.ns[n], "addr", "show", "dev", bedDev)), &links); err != nil {
		b.t.Fatalf("ip -j addr: %v", err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Local == addr {
				return true
			}
		}
	}
	return false
}

// holders lists the nodes whose namespace holds addr.
func (b *netBed) holders(addr string) []string {
	b.t.Helper()
	var out []string
	for _, n := range sortedNames(b.ns) {
		if b.hasAddr(n, addr) {
			out = append(out, n)
		}
	}
	return out
}

func sortedNames(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// mac is the hardware address of eth0 in n's namespace.
func (b *netBed) mac(n string) string {
	b.t.Helper()
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(ipc(b.t, "-j", "-n", b.ns[n], "link", "show", "dev", bedDev)), &links); err != nil || len(links) != 1 {
		b.t.Fatalf("ip -j link show: %v", err)
	}
	return links[0].Address
}

// neighMAC is the hardware address n's neighbour table holds for addr ("" if none).
func (b *netBed) neighMAC(n, addr string) string {
	b.t.Helper()
	var ns []struct {
		LLAddr string `json:"lladdr"`
	}
	out := ipc(b.t, "-j", "-n", b.ns[n], "neigh", "show", addr, "dev", bedDev)
	if strings.TrimSpace(out) == "" {
		return ""
	}
	if err := json.Unmarshal([]byte(out), &ns); err != nil {
		b.t.Fatalf("ip -j neigh: %v: %s", err, out)
	}
	if len(ns) == 0 {
		return ""
	}
	return ns[0].LLAddr
}

// inNetns runs f on an OS thread switched into the namespace ns, then
// switches the thread back. While switched, the thread runs nothing else
// (LockOSThread). If it cannot switch back, it stays locked and ends with
// the goroutine. (A thread left in ns must never be the main thread: the
// kernel shows the main thread's namespace as the process's, and the bed's
// cleanup would then count the test binary among the namespace's pids.)
func inNetns(ns string, f func() error) error {
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

// ping sends one ICMP echo to addr from n's namespace and reports whether
// addr answered within wait. It needs no ping binary: a raw ICMP socket
// opened in the namespace (root has CAP_NET_RAW).
func (b *netBed) ping(n, addr string, wait time.Duration) bool {
	b.t.Helper()
	dst := net.ParseIP(addr)
	ok := false
	err := inNetns(b.ns[n], func() error {
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
		b.t.Fatalf("ping %s from %s: %v", addr, b.ns[n], err)
	}
	return ok
}
