package resource

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/cgroup"
	"haven/test/testbed"
)

// network = "bridge" with real podman and real docker, in a network
// namespace of the test's own (a node's): podman's netavark makes the
// podman0 bridge, a veth and the NAT rules of that namespace (dockerd,
// started there, its docker0, veths and rules), which the host's must
// never see. The test binary re-executes itself in the namespace with `nsenter
// --net` (not `ip netns exec`, whose fresh /sys hides the cgroup mounts
// the runtime needs), running only TestContainerBridgeHelper: a
// process entered whole, so the driver's listing, on a goroutine of its
// own, lists from the same namespace as its run.

const bridgeHelperEnv = "HAVEN_BRIDGE_HELPER" // the engine the helper runs

// bridgeVIP stands for the service's address in the namespace.
const bridgeVIP = "192.0.2.50"

// A container on the bridge publishing a port on the node's address
// answers on it; after the guard's kill of its cgroup (podman still says
// Up; docker says exited), a start runs a new one on the same port, which
// answers; after a second kill, the stop leaves no NAT rule of the port
// nor veth (nor podman's bridge: docker0 is dockerd's, and stays), and a
// start on the same port answers again. A second container publishing the
// same port on the node fails its start, naming the port.
func TestContainerPodmanBridge(t *testing.T) { containerBridge(t, "podman") }

// TestContainerDockerBridge: the same with a dockerd of the test's own
// with its bridge (docker0) and iptables rules, in the namespace.
func TestContainerDockerBridge(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	containerBridge(t, "docker")
}

func containerBridge(t *testing.T, engine string) {
	if why := testbed.EngineUnavailable(engine); why != "" {
		t.Skip(why)
	}
	for _, p := range []string{"ip", "nsenter", "iptables"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skip(p + " is not installed")
		}
	}
	ns := netns(t)
	sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
	sh(t, "ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
	sh(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	sh(t, "ip", "-n", ns, "link", "set", "eth1", "up")
	sh(t, "ip", "-n", ns, "addr", "add", bridgeVIP+"/24", "dev", "eth0")
	cmd := exec.Command("nsenter", "--net=/run/netns/"+ns, "--", os.Args[0], "-test.run=^TestContainerBridgeHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), bridgeHelperEnv+"="+engine)
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "--- SKIP: TestContainerBridgeHelper"):
		t.Skipf("the helper skipped:\n%s", out)
	case err != nil || !strings.Contains(string(out), "--- PASS: TestContainerBridgeHelper"):
		t.Fatalf("the helper in %s: %v\n%s", ns, err, out)
	}
	t.Logf("%s", out)
}

func TestContainerBridgeHelper(t *testing.T) {
	engine := os.Getenv(bridgeHelperEnv)
	if engine == "" {
		t.Skip("helper of TestContainerPodmanBridge and TestContainerDockerBridge, run by them inside a network namespace")
	}
	vip := bridgeVIP
	env, rec, p := engineEnvOf(t, engine, testbed.NewBridgeStore)
	port, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	rc := engineRC(engine, "web", func(rc *config.ResourceConfig) {
		rc.Network, rc.Ports = "bridge", []string{fmt.Sprintf("%s:%d:8080", vip, port)}
		rc.Command = []string{"httpd", "-f", "-p", "8080", "-h", "/etc"}
	})
	d, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	url := fmt.Sprintf("http://%s:%d/hostname", vip, port)
	// answers waits for the page: the container's hostname, its short id
	answers := func(what string) string {
		t.Helper()
		id, err := p.Run("inspect", "--format", "{{.Id}}", ContainerName(env.Service, "web"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSpace(id)[:12]
		c := &http.Client{Timeout: 2 * time.Second}
		var got string
		defer func() {
			if t.Failed() {
				t.Logf("%s: the last answer of %s: %s\n%s", what, url, got, rec)
			}
		}()
		eventually(t, 15*time.Second, fmt.Sprintf("%s: %s answers %s", what, url, want), func() bool {
			r, err := c.Get(url)
			if err != nil {
				got = err.Error()
				return false
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			got = strings.TrimSpace(string(b))
			return got == want
		})
		return got
	}
	nat := func() string {
		b, err := exec.Command("iptables", "-t", "nat", "-S").CombinedOutput()
		if err != nil {
			t.Fatalf("iptables: %v: %s", err, b)
		}
		return string(b)
	}
	dport := fmt.Sprintf("--dport %d ", port)
	links := func() string {
		b, _ := exec.Command("ip", "-br", "link").CombinedOutput()
		return string(b)
	}
	// guardKill ends the container and its monitor as the node guard does
	guardKill := func() {
		t.Helper()
		if empty, err := cgroup.KillWait(env.Cgroup, 5*time.Second); err != nil || !empty {
			t.Fatalf("kill the instance's cgroup: empty %v, %v", empty, err)
		}
		if err := cgroup.Remove(env.Cgroup); err != nil {
			t.Fatal(err)
		}
		if out, _ := p.Run("ps", "--format", "{{.Status}}"); engine == "podman" && !strings.HasPrefix(out, "Up") {
			t.Logf("podman no longer says Up (%q): the case this test is about did not arise", out)
		}
		d.(*container).eng.changed()
		mustStatus(t, d, dataset.StatusDown)
	}

	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	first := answers("the first start")
	if !strings.Contains(nat(), dport) || !strings.Contains(links(), map[string]string{"podman": "podman0", "docker": "docker0"}[engine]) {
		t.Fatalf("no NAT rule for port %d or no bridge:\n%s\n%s", port, nat(), links())
	}

	// another container of the node publishing the same port: refused by
	// the engine, which holds the port
	other, err := New(engineRC(engine, "api", func(rc *config.ResourceConfig) {
		rc.Network, rc.Ports = "bridge", []string{fmt.Sprintf("%d:8081", port)}
	}), env)
	if err != nil {
		t.Fatal(err)
	}
	err = other.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Fatalf("a second container on port %d: %v", port, err)
	}
	t.Logf("a second container on port %d: %v", port, err)
	other.Stop(context.Background())

	// the guard's kill, then a start (the restart ladder's): the dead
	// container is removed and a new one answers on the same port
	guardKill()
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("start after the guard's kill: %v\n%s", err, rec)
	}
	if second := answers("the start after the guard's kill"); second == first {
		t.Fatalf("the same container answers after the kill and the start: %s", second)
	}

	// the guard's kill, then the stop: the engine removes its rules, the
	// veth and the bridge
	guardKill()
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("stop after the guard's kill: %v\n%s", err, rec)
	}
	if n := nat(); strings.Contains(n, dport) {
		t.Fatalf("a NAT rule for port %d after the stop:\n%s", port, n)
	}
	if l := links(); (engine == "podman" && strings.Contains(l, "podman0")) || strings.Contains(l, "veth") {
		t.Fatalf("the bridge or a veth after the stop:\n%s", l)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("start after the stop: %v\n%s", err, rec)
	}
	answers("the start after the stop")
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v\n%s", err, rec)
	}
	if n := nat(); strings.Contains(n, dport) {
		t.Fatalf("a NAT rule for port %d after the last stop:\n%s", port, n)
	}
}
