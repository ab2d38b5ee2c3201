package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/paths"
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
	// a service that does not exist: exit 1, named
	if r := n.run("svcmgr", "-s", "nope", "print", "status", "-r"); r.code != 1 || !strings.Contains(r.err, "nope") {
		t.Fatalf("print status -r of no service: %s", r)
	}
}

// A node that freezes itself says why in svcmon, also after a restart of
// its daemon; a thaw clears the reason.
func TestSelfFreezeReasonShownInSvcmon(t *testing.T) {
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
