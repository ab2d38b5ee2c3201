package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"haven/dataset"
	"haven/internal/paths"
	"haven/test/testbed"
)

// flagService is up while {var}/flag exists; its resource is not
// monitored, so the daemon checks it every check_interval (60s) only.
const flagService = `
[DEFAULT]
orchestrate = "no"

[app.main]
check = "test -f {var}/flag"
`

// printStatus is the status object of svc from svcmgr print status.
func printStatus(t *testing.T, n *node, svc string, args ...string) dataset.ServiceStatus {
	t.Helper()
	out := n.must("svcmgr", append([]string{"-s", svc, "print", "status", "--format", "json"}, args...)...)
	var s dataset.ServiceStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("print status json: %v\n%s", err, out)
	}
	return s
}

// print status -r checks the local instance now, then prints: a change
// the periodic checks would see a minute later is in its answer.
func TestPrintStatusRefreshChecksNow(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	cfg := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, cfg, flagService)
	n.must("svcmgr", "-s", "web", "create", "--config", cfg)
	waitFor(t, 20*time.Second, "the first check of web (down)", func() bool {
		return n.instance("web").Avail == dataset.StatusDown
	})
	writeFile(t, filepath.Join(paths.New(n.root).ServiceVar("web"), "flag"), "")
	if a := printStatus(t, n, "web").Instances["n1"].Avail; a != dataset.StatusDown {
		t.Fatalf("print status without -r: avail %s; want down, the last periodic check (check_interval 60s)", a)
	}
	start := time.Now()
	if a := printStatus(t, n, "web", "-r").Instances["n1"].Avail; a != dataset.StatusUp {
		t.Fatalf("print status -r: avail %s, want up: the check did not run before the print", a)
	}
	t.Logf("print status -r answered in %s", time.Since(start).Round(time.Millisecond))
	// -r before the command, and the human tree
	if out := n.must("svcmgr", "-r", "-s", "web", "print", "status"); !strings.Contains(out, "up") {
		t.Fatalf("svcmgr -r -s web print status:\n%s", out)
	}
	os.Remove(filepath.Join(paths.New(n.root).ServiceVar("web"), "flag"))
	if a := printStatus(t, n, "web", "--refresh").Instances["n1"].Avail; a != dataset.StatusDown {
		t.Fatalf("print status --refresh after the flag was removed: avail %s, want down", a)
	}
	// a time never set is left out of the printed status object: the
	// resource never failed, no "last_failure_at": "0001-01-01T00:00:00Z"
	for _, args := range [][]string{{"svcmgr", "-s", "web", "print", "status", "--format", "json"}, {"svcmon", "--format", "json"}} {
		if out := n.must(args[0], args[1:]...); strings.Contains(out, "0001-01-01") || !strings.Contains(out, `"app#main"`) {
			t.Fatalf("%s: a time never set is printed:\n%s", strings.Join(args, " "), out)
		}
	}
	// a service that does not exist: exit 1, named
	if r := n.run("svcmgr", "-s", "nope", "print", "status", "-r"); r.Code != 1 || !strings.Contains(r.Err, "nope") {
		t.Fatalf("print status -r of no service: %s", r)
	}
}

// A node that freezes itself says why in svcmon, also after a restart of
// its daemon; a thaw clears the reason.
func TestSelfFreezeReasonShownInSvcmon(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := newCluster(t, []string{"n1", "n2"}, clusterOpts{})
	n1 := c["n1"] // n2 never starts: n1's rejoin grace period (5s) ends without it
	n1.startDaemon()
	const want = "rejoin grace period (5s) ended with nodes never heard from: n2"
	waitFor(t, 30*time.Second, "n1 frozen with its reason", func() bool {
		ni := n1.status().Nodes["n1"]
		return ni.Frozen && strings.Contains(ni.FrozenReason, want)
	})
	if out := n1.must("svcmon"); !strings.Contains(out, "n1 frozen: "+want) {
		t.Fatalf("svcmon does not say why n1 is frozen:\n%s", out)
	}
	n1.must("nodemgr", "daemon", "stop")
	n1.startDaemon()
	if ni := n1.status().Nodes["n1"]; !ni.Frozen || !strings.Contains(ni.FrozenReason, want) {
		t.Fatalf("after a daemon restart: frozen %v, reason %q; want the reason kept", ni.Frozen, ni.FrozenReason)
	}
	n1.must("nodemgr", "thaw")
	if ni := n1.status().Nodes["n1"]; ni.Frozen || ni.FrozenReason != "" {
		t.Fatalf("after thaw: frozen %v, reason %q", ni.Frozen, ni.FrozenReason)
	}
	if out := n1.must("svcmon"); strings.Contains(out, "frozen:") {
		t.Fatalf("svcmon still gives a freeze reason after the thaw:\n%s", out)
	}
}

// slowService takes 3s to start; it is up while {var}/flag exists.
const slowService = `
[DEFAULT]
orchestrate = "no"

[app.main]
start = "sleep 3"
check = "test -f {var}/flag"
`

// What svcmgr and svcmon print against a real daemon: JSON logs and
// config, errors that name the file and the service once, the thaw said
// by the actions that thaw, colours only on a terminal.
func TestCLIOutputsAgainstADaemon(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	cfg := filepath.Join(t.TempDir(), "slow.toml")
	writeFile(t, cfg, slowService)
	n.must("svcmgr", "-s", "slow", "create", "--config", cfg)
	conf := filepath.Join(n.root, "etc", "services", "slow.toml")

	// get --kw of a typo names the installed file
	r := n.run("svcmgr", "-s", "slow", "get", "--kw", "app#main.timout")
	if r.Code != 2 || !strings.HasPrefix(r.Err, "svcmgr: "+conf+": app#main.timout: unknown keyword") {
		t.Fatalf("get --kw app#main.timout: %s\nwant exit 2 and the file named", r)
	}

	// print config --format json: sections, keys, values as written
	var secs map[string]map[string]any
	if err := json.Unmarshal([]byte(n.must("svcmgr", "-s", "slow", "print", "config", "--format", "json")), &secs); err != nil {
		t.Fatal(err)
	}
	if secs["DEFAULT"]["orchestrate"] != "no" || secs["app#main"]["start"] != "sleep 3" || len(secs) != 2 {
		t.Fatalf("print config --format json: %v", secs)
	}

	// a second start while the first runs: the service named once
	first := make(chan testbed.Result, 1)
	go func() { first <- n.run("svcmgr", "-s", "slow", "start", "--local") }()
	waitFor(t, 20*time.Second, "slow starting", func() bool { return n.instance("slow").Monitor.State == dataset.Starting })
	r = n.run("svcmgr", "-s", "slow", "start", "--local")
	if r.Code != 1 || !strings.Contains(r.Err, "slow: an action is already running") || strings.Contains(r.Err, "slow: slow:") {
		t.Fatalf("second start --local: %s\nwant exit 1, the service named once", r)
	}
	if r := <-first; r.Code != 0 {
		t.Fatalf("first start --local: %s", r)
	}

	// logs --format json: one object a line, with the node and service
	out := n.must("svcmgr", "-s", "slow", "logs", "--format", "json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	found := false
	for _, l := range lines {
		var e struct{ Time, Node, Svc, Rid, Message string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("logs --format json: line %q: %v", l, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, e.Time); err != nil || e.Node != "n1" || e.Svc != "slow" {
			t.Fatalf("logs --format json: %q: want a time, node n1, svc slow", l)
		}
		if e.Rid == "" && strings.HasPrefix(e.Message, "start: admin start --local") {
			found = true
		}
	}
	if !found {
		t.Fatalf("logs --format json: no line of the start:\n%s", out)
	}

	// an action that thaws says so
	n.must("svcmgr", "-s", "slow", "freeze")
	waitFor(t, 20*time.Second, "slow frozen", func() bool { return n.status().Services["slow"].Frozen == "frozen" })
	if out := n.must("svcmgr", "-s", "slow", "takeover"); !strings.Contains(out, "the service was frozen: thawed by this action") {
		t.Fatalf("takeover of a frozen service does not say it thaws it: %q", out)
	}

	// colours: on a terminal only, never with NO_COLOR
	if out := onTerminal(t, n, nil, "svcmon"); !strings.Contains(out, "\x1b[") {
		t.Fatalf("svcmon on a terminal: no colours:\n%q", out)
	}
	if out := onTerminal(t, n, []string{"NO_COLOR=1"}, "svcmon"); strings.Contains(out, "\x1b") {
		t.Fatalf("svcmon on a terminal with NO_COLOR=1: escapes:\n%q", out)
	}
	if out := n.must("svcmon"); strings.Contains(out, "\x1b") {
		t.Fatalf("svcmon into a pipe: escapes:\n%q", out)
	}
	// --watch into a pipe: one view after the other, no escapes
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "svcmon"), "--root", n.root, "--watch", "--interval", "300ms")
	cmd.Stdout = &buf
	cmd.Run()
	if w := buf.String(); strings.Contains(w, "\x1b") || strings.Count(w, "Cluster") < 2 {
		t.Fatalf("svcmon --watch into a pipe: want views without escapes, got:\n%q", w)
	}
}

// onTerminal runs a binary against n's root with its stdout on a new
// pseudo-terminal and returns what it wrote there.
func onTerminal(t *testing.T, n *node, env []string, bin string, args ...string) string {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer master.Close()
	unlock := 0
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, master.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	num, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", num), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, bin), append([]string{"--root", n.root}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = slave
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, master); close(done) }() // ends with EIO once the slave is closed
	err = cmd.Run()
	slave.Close()
	<-done
	if err != nil {
		t.Fatalf("%s on a terminal: %v\n%s", bin, err, out.String())
	}
	return out.String()
}
