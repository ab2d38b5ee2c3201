package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

// The network-namespace test bed is chaos.Bed (chaos/netns.go): a bridge in
// its own namespace, one namespace per node joined to it by a veth pair,
// eth0 192.0.2.N/24 in the node's namespace. netBed adds the e2e nodes (one
// root each) and turns the bed's errors into test failures.

const (
	bedDev  = chaos.Dev
	bedPort = chaos.HBPort
)

type netBed struct {
	t     *testing.T
	bed   *chaos.Bed
	nodes map[string]*node
	// netOnly starts the daemons in their node's network namespace alone
	// (nsenter --net), with the host's mounts: a container engine's
	// runtime needs the cgroup mounts that `ip netns exec`'s fresh /sys
	// hides.
	netOnly bool
}

// command is name with args run in node n's network namespace.
func (b *netBed) command(n, name string, args ...string) *exec.Cmd {
	if b.netOnly {
		return exec.Command("nsenter", append([]string{"--net=/run/netns/" + b.bed.NS[n], "--", name}, args...)...)
	}
	return b.bed.Command(n, name, args...)
}

// skipUnlessNetns skips the test when network namespaces cannot be made.
func skipUnlessNetns(t *testing.T) {
	t.Helper()
	if why := chaos.NetnsUnavailable(); why != "" {
		t.Skip(why)
	}
}

// newNetBed builds the namespaces, the bridge and the veths for names, and
// the node roots of a cluster whose members are 192.0.2.1, .2, ... Extra
// [node] keys go in nodeExtra. Everything is removed at the end of the test,
// even on failure: the processes left in the namespaces are killed (after
// the daemons were asked to stop), then the namespaces are deleted, which
// deletes their links.
func newNetBed(t *testing.T, names []string, nodeExtra string) *netBed {
	t.Helper()
	return newNetBedAt(t, names, nodeExtra, nil)
}

// newNetBedAt is newNetBed where the nodes of addrs are members at (and
// their hb.addr is) that address instead of their eth0 address: the test
// adds it to the node's namespace before starting its daemon.
func newNetBedAt(t *testing.T, names []string, nodeExtra string, addrs map[string]string) *netBed {
	t.Helper()
	return newNetBedLinks(t, names, nodeExtra, addrs, 1)
}

// newNetBedLinks is newNetBedAt with links (1 or 2) network links per
// node (chaos.NewBedLinks): with two, each member lists its eth0 and eth1
// addresses in cluster.toml.
func newNetBedLinks(t *testing.T, names []string, nodeExtra string, addrs map[string]string, links int) *netBed {
	t.Helper()
	skipUnlessNetns(t)
	bed, err := chaos.NewBedLinks(names, links)
	if errors.Is(err, chaos.ErrNoNamespace) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// registered first, so it runs last: after the nodes' daemon stop
	t.Cleanup(func() {
		for _, err := range bed.Close() {
			t.Logf("cleanup: %v", err)
		}
	})
	b := &netBed{t: t, bed: bed, nodes: map[string]*node{}}
	addr := func(n string) string {
		if a, ok := addrs[n]; ok {
			return a
		}
		return bed.Addr[n]
	}
	var members []testbed.Member
	for _, n := range names {
		m := testbed.Member{Name: n, Addr: fmt.Sprintf("%s:%d", addr(n), bedPort)}
		if links > 1 {
			m.Links = bed.HBAddrs(n)
		}
		members = append(members, m)
	}
	cluster := testbed.ClusterToml("netns", testbed.NewSecret(), members)
	for _, n := range names {
		nodeToml := testbed.NodeToml{Name: n,
			Keys:   []string{`monitor_interval = "300ms"`, `maintenance_grace_period = "6s"`, `ready_period = "2s"`, nodeExtra},
			HBAddr: addr(n), HBPort: bedPort, HBTimeout: "3s", HBInterval: "1s"}
		nd := newNode(t, n, nodeToml.String())
		writeClusterToml(t, nd, cluster)
		b.nodes[n] = nd
	}
	t.Logf("netns bed %s: bridge in %s, nodes %v", bed.ID, bed.BrNS, bed.NS)
	return b
}

// startDaemon starts the node's daemon inside its namespace.
func (b *netBed) startDaemon(n string) {
	b.t.Helper()
	if out, err := b.command(n, binDir+"/nodemgr", "--root", b.nodes[n].root, "daemon", "start").CombinedOutput(); err != nil {
		b.t.Fatalf("start the daemon of %s in %s: %v: %s", n, b.bed.NS[n], err, out)
	}
}

// restartDaemon restarts the node's daemon inside its namespace
// (`nodemgr daemon restart`: the services keep running and are adopted).
func (b *netBed) restartDaemon(n string) {
	b.t.Helper()
	if out, err := b.command(n, binDir+"/nodemgr", "--root", b.nodes[n].root, "daemon", "restart").CombinedOutput(); err != nil {
		b.t.Fatalf("restart the daemon of %s in %s: %v: %s", n, b.bed.NS[n], err, out)
	}
}

// converge waits until every node sees every other up and left rejoin.
// startAll starts the daemons of names and waits until each hears the
// others (15 s at most).
func (b *netBed) startAll(names []string) {
	b.t.Helper()
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 15*time.Second)
}

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

// ok fails the test on err.
func (b *netBed) ok(err error) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
}

// cut sets the bridge side of n's veths down; restore sets them up again.
func (b *netBed) cut(n string) { b.t.Helper(); b.ok(b.bed.Cut(n)) }

// cutLink cuts (on) or restores link (0: eth0, 1: eth1) of n.
func (b *netBed) cutLink(n string, link int, on bool) { b.t.Helper(); b.ok(b.bed.CutLink(n, link, on)) }
func (b *netBed) restore(n string)                    { b.t.Helper(); b.ok(b.bed.Restore(n)) }

func (b *netBed) hasAddr(n, addr string) bool {
	b.t.Helper()
	v, err := b.bed.HasAddr(n, addr)
	b.ok(err)
	return v
}

func (b *netBed) holders(addr string) []string {
	b.t.Helper()
	v, err := b.bed.Holders(addr)
	b.ok(err)
	return v
}

func (b *netBed) mac(n string) string {
	b.t.Helper()
	v, err := b.bed.MAC(n)
	b.ok(err)
	return v
}

func (b *netBed) neighMAC(n, addr string) string {
	b.t.Helper()
	v, err := b.bed.NeighMAC(n, addr)
	b.ok(err)
	return v
}

func (b *netBed) ping(n, addr string, wait time.Duration) bool {
	b.t.Helper()
	v, err := b.bed.Ping(n, addr, wait)
	b.ok(err)
	return v
}
