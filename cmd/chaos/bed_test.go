package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/test/chaos"
	"haven/test/testbed"
)

// `chaos bed -example web-container` (make bed EXAMPLE=web-container):
// a containerised failover web server behind a virtual IP. The client is
// outside the cluster, in the arbitrator's namespace: it gets the page
// from n1 at the address, then from n2 after a switch. Ctrl-C removes the
// namespaces, the containers and their stores.
func TestBedWebContainerExample(t *testing.T) {
	if why := chaos.NetnsUnavailable(); why != "" {
		t.Skip("the chaos bed: " + why)
	}
	if why := testbed.PodmanUnavailable(); why != "" {
		t.Skip(why)
	}
	if testing.Short() {
		t.Skip("starts a cluster: not with -short")
	}
	t.Parallel() // a bed of its own; mostly waits
	bin := t.TempDir()
	if err := testbed.BuildNode(bin, "", "haven/cmd/chaos"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "chaos"), "bed", "-bin", bin, "-nodes", "2", "-example", "web-container")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	nsRe := regexp.MustCompile(`\bhv-([0-9a-f]+)-n1\b`)
	var id, root string
	var guide []string
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(3 * time.Minute)
	for !strings.Contains(strings.Join(guide, "\n"), "Ctrl-C stops") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the bed ended before it printed its guide:\n%s", strings.Join(guide, "\n"))
			}
			guide = append(guide, l)
			if m := nsRe.FindStringSubmatch(l); m != nil && strings.HasPrefix(strings.TrimSpace(l), "n1") {
				id = m[1]
				f := strings.Fields(l)
				root = f[len(f)-1]
			}
		case <-deadline:
			t.Fatal("no guide within 3 minutes")
		}
	}
	go func() {
		for range lines {
		}
	}()
	text := strings.Join(guide, "\n")
	arb := "hv-" + id + "-arb"
	if !strings.Contains(text, "ip netns exec "+arb+" busybox wget -qO- http://"+chaos.ExampleVIP+":8080/") {
		t.Fatalf("the guide does not say how to ask the service:\n%s", text)
	}
	work := filepath.Dir(root)
	get := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b, _ := exec.CommandContext(ctx, "ip", "netns", "exec", arb, "busybox", "wget", "-qO-", "http://"+chaos.ExampleVIP+":8080/").Output()
		return strings.TrimSpace(string(b))
	}
	if err := testbed.WaitFor(30*time.Second, 200*time.Millisecond, "the page from n1 at the VIP", func() bool { return get() == "hello from n1" }); err != nil {
		t.Fatalf("%v (got %q)", err, get())
	}
	r, err := testbed.Run(filepath.Join(bin, "svcmgr"), root, "-s", "web", "switch", "--to", "n2", "--wait", "--time", "60s")
	if err != nil || r.Code != 0 {
		t.Fatalf("switch --to n2: %s %v", r, err)
	}
	if err := testbed.WaitFor(30*time.Second, 200*time.Millisecond, "the page from n2 at the VIP", func() bool { return get() == "hello from n2" }); err != nil {
		t.Fatalf("%v (got %q)", err, get())
	}
	stores, _ := filepath.Glob(filepath.Join(work, "podman-*"))
	if len(stores) != 2 {
		t.Fatalf("podman stores of the bed: %v", stores)
	}

	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the bed did not end within 2 minutes of its Ctrl-C")
	}
	if left, _ := filepath.Glob("/var/run/netns/hv-" + id + "-*"); len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if _, err := os.Stat(work); err == nil {
		t.Errorf("the work directory %s is left", work)
	}
	if out, _ := exec.Command("pgrep", "-f", "httpd -f -p "+chaos.ExampleVIP).Output(); len(out) > 0 {
		t.Errorf("the container's httpd still runs: %s", out)
	}
}
