package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// Configs installed in any order (a configuration-management tool): a
// create whose hard affinity and parent name a service not created yet is
// refused (exit 2), and installed with --force, a warning on standard
// error naming the file, the line and the key; the service waits (no
// such service) until the other is created, then starts beside it. set
// --force does the same; a cycle of parents is refused even with --force.
func TestCreateForceInAnyOrder(t *testing.T) {
	t.Parallel() // one daemon on a port of its own (testbed.FreePort); mostly waits
	n := newNode(t, "n1", "")
	n.startDaemon()

	app := filepath.Join(t.TempDir(), "app.toml")
	writeFile(t, app, testbed.HAService(`["n1"]`, `hard_affinity = ["db"]`+"\n"+`parents = ["db"]`))
	r := n.run("svcmgr", "-s", "app", "create", "--config", app)
	if r.Code != 2 || !strings.Contains(r.Err, "app.toml:5: DEFAULT.hard_affinity: no service db in the cluster") || !strings.Contains(r.Err, "--force") {
		t.Fatalf("create naming db before db exists: %s, want exit 2 naming app.toml:5 and --force", r)
	}
	r = n.run("svcmgr", "-s", "app", "create", "--force", "--config", app)
	if r.Code != 0 ||
		!strings.Contains(r.Err, "warning: "+app+":5: DEFAULT.hard_affinity: no service db in the cluster yet: installed anyway (--force)") ||
		!strings.Contains(r.Err, "warning: "+app+":6: DEFAULT.parents: no service db in the cluster yet: installed anyway (--force)") {
		t.Fatalf("create --force: %s, want exit 0 and a warning per key", r)
	}
	if !strings.Contains(nodeLog(t, n), "config installed with --force: "+app+":5: DEFAULT.hard_affinity") {
		t.Error("node.log does not say what --force installed")
	}
	waitFor(t, 5*time.Second, "app checked", func() bool { return n.instance("app").Avail == dataset.StatusDown })
	if out := n.must("svcmgr", "-s", "app", "explain"); !strings.Contains(out, "hard affinity: db: no such service") {
		t.Fatalf("explain of app does not say it waits for db:\n%s", out)
	}

	// db comes: app starts beside it
	createService(t, n, "db", testbed.HAService(`["n1"]`, ""))
	waitFor(t, 15*time.Second, "db then app up on n1", func() bool {
		return n.instance("db").Avail == dataset.StatusUp && n.instance("app").Avail == dataset.StatusUp
	})

	// set: refused, then installed with --force and a warning
	if r := n.run("svcmgr", "-s", "app", "set", "--kw", "parents+=cache"); r.Code != 2 || !strings.Contains(r.Err, "DEFAULT.parents: no service cache in the cluster") {
		t.Fatalf("set parents+=cache: %s, want exit 2", r)
	}
	r = n.run("svcmgr", "-s", "app", "set", "--force", "--kw", "parents+=cache")
	if r.Code != 0 || !strings.Contains(r.Err, "warning: ") || !strings.Contains(r.Err, "DEFAULT.parents: no service cache in the cluster yet: installed anyway (--force)") {
		t.Fatalf("set --force parents+=cache: %s, want exit 0 and the warning", r)
	}
	if got := strings.TrimSpace(n.must("svcmgr", "-s", "app", "get", "--kw", "DEFAULT.parents")); !strings.Contains(got, "cache") {
		t.Fatalf("parents after set --force: %q", got)
	}
	// a cycle is never let through: no later create ends it
	if r := n.run("svcmgr", "-s", "db", "set", "--force", "--kw", "parents=app"); r.Code != 2 || !strings.Contains(r.Err, "a cycle of parents: db -> app -> db") {
		t.Fatalf("set --force closing a cycle: %s, want exit 2", r)
	}
}
