package e2e

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"haven/test/chaos"
	"haven/test/testbed"
)

// bridgeService is a failover service on n1 and n2: the VIP, and a
// container on podman's bridge publishing the container's 8080 on the
// VIP's 8080 (the address by reference to the ip resource). Its httpd
// serves /etc: /hostname is the container's short id.
const bridgeService = `[DEFAULT]
orchestrate = "ha"
nodes = ["n1", "n2"]

[ip.vip]
ipname = "` + vip + `"
ipdev = "` + bedDev + `"
netmask = "24"

[container.web]
image = "localhost/hbox:1"
command = ["httpd", "-f", "-p", "8080", "-h", "/etc"]
network = "bridge"
ports = ["{ip#vip.ipname}:8080:8080"]
stop_timeout = "1s"
monitor = true
`

// bridgeClient is the client's address, on the bed's bridge (its own
// namespace: outside the cluster).
const bridgeClient = "192.0.2.200"

// A failover service of a VIP and a podman container on the bridge
// publishing VIP:8080, the nodes in network namespaces (their daemons
// entered with nsenter --net), the guard on: a client in another
// namespace gets the page of n1's container through the VIP; kill -9 of
// n1's daemon: its guard ends the container and removes the VIP, n2 starts
// both, and the client gets the page of n2's container through the same
// address. The observer, outside the cluster (each node's podman ps and
// /proc), never sees the container run on both nodes.
func TestNetnsPodmanBridgePortFailover(t *testing.T) {
	if why := testbed.PodmanUnavailable(); why != "" {
		t.Skip(why)
	}
	t.Parallel() // a bed of its own (namespaces); mostly waits
	names := []string{"n1", "n2"}
	b := newNetBed(t, names, `guard_lease = "3s"`)
	b.netOnly = true
	c := b.nodes
	// no quorum: n2 starts web hb.timeout + ready_period (10 s) after n1's
	// daemon died; n1's guard ends it within guard_lease + 2.5 s
	for _, n := range names {
		path := filepath.Join(c[n].root, "etc", "node.toml")
		writeFile(t, path, strings.Replace(readFile(t, path), "timeout = \"3s\"\n", "timeout = \"8s\"\n", 1))
	}
	stores := engineNodes(t, "podman", c)
	for _, n := range names {
		stores[n].(*testbed.Podman).NetNS = b.bed.NS[n]
	}
	if out, err := exec.Command("ip", "-n", b.bed.BrNS, "addr", "add", bridgeClient+"/24", "dev", "br0").CombinedOutput(); err != nil {
		t.Fatalf("the client's address: %v: %s", err, out)
	}
	b.startAll(names)
	const name = "haven.web.web"
	createService(t, c["n1"], "web", bridgeService)
	waitFor(t, 30*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))

	// page is what the client, a socket of the bridge's namespace, gets
	// through the VIP ("" when nothing)
	page := func() string {
		var body string
		chaos.InNetns(b.bed.BrNS, func() error {
			c, err := net.DialTimeout("tcp", vip+":8080", 2*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprint(c, "GET /hostname HTTP/1.0\r\n\r\n")
			r, _ := io.ReadAll(c)
			_, body, _ = strings.Cut(string(r), "\r\n\r\n")
			return nil
		})
		return strings.TrimSpace(body)
	}
	shortID := func(n string) string {
		out, err := stores[n].Run("inspect", "--format", "{{.Id}}", name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)[:12]
	}
	id1 := shortID("n1")
	waitFor(t, 10*time.Second, "the client gets n1's page through "+vip, func() bool { return page() == id1 })

	w := watchProbes(t, map[string]func() bool{"n1": runningProbe(stores["n1"], name), "n2": runningProbe(stores["n2"], name)})
	at := time.Now()
	syscallKill(daemonPid(t, c["n1"]))
	waitFor(t, 60*time.Second, "web's container runs on n2 (observer)", func() bool { return w.runs("n2") })
	id2 := shortID("n2")
	waitFor(t, 15*time.Second, "the client gets n2's page through "+vip, func() bool { return page() == id2 })
	reached := time.Since(at)
	w.moreRounds(3)
	if o := w.overlaps(); len(o) > 0 {
		t.Logf("guard: %s", readFile(t, filepath.Join(c["n1"].root, "var", "guard.json")))
		t.Fatalf("the observer saw web's container running on both nodes: %v", o)
	}
	if w.runs("n1") {
		t.Fatal("web's container still runs on n1")
	}
	if h := b.holders(vip); !slices.Equal(h, []string{"n2"}) {
		t.Fatalf("%s is held by %v, want n2 alone", vip, h)
	}
	started, _ := w.first("n2", at)
	last, _ := w.last("n1", started)
	t.Logf("n1's container last seen %s after the kill, n2's first %s after (margin %s); the client reached n2's %s after",
		last.Sub(at).Round(time.Millisecond), started.Sub(at).Round(time.Millisecond), started.Sub(last).Round(time.Millisecond), reached.Round(time.Millisecond))
	if rec := readFile(t, filepath.Join(c["n1"].root, "var", "guard.json")); !strings.Contains(rec, `"service": "web"`) {
		t.Fatalf("n1's guard record does not name web:\n%s", rec)
	}
}
