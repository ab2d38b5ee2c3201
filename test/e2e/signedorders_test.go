package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// Admin-signed deletions and targets on real daemons (docs/security.md,
// "Admin-signed deletions and targets"). Three nodes whose cluster.toml
// lists alice's admin key, at cluster feature level 2; web runs on n1, db
// is stopped by an admin's signed stop. n2's insider removes [admin_keys]
// from n2's cluster.toml and restarts n2's daemon, which then takes
// anything through n2's API:
//   - stop web, then (after an abort, which asks for nothing) switch it to
//     n3: n1 and n3 refuse each target (target_refused: unsigned, in their
//     status and log) and web runs on, the same process on n1;
//   - delete db: n2 deletes it, n1 and n3 refuse the unsigned deletion
//     (config_refused: unsigned deletion) and keep its config;
//   - an admin's stop and delete of web from n2, signed with --key: taken
//     by every node (web stops on n1, then its config goes everywhere).
func TestSignedOrdersInsiderRefused(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c := newCluster(t, names, clusterOpts{})
	ws := t.TempDir() // the admin's workstation
	key := filepath.Join(ws, "alice.key")
	line := c["n1"].must("svcmgr", "key", "generate", "--name", "alice", "--key", key)
	base := readFile(t, c["n1"].root+"/etc/cluster.toml")
	for _, n := range names {
		writeClusterToml(t, c[n], base+"\n[admin_keys]\n"+line)
	}
	startNodes(t, c, names)
	for _, n := range names {
		waitFor(t, 20*time.Second, n+" at feature level 2", func() bool { return c[n].status().Cluster.FeatureLevel >= 2 })
	}
	for _, svc := range []string{"web", "db"} {
		file := filepath.Join(ws, svc+".toml")
		writeFile(t, file, testbed.HAService(testbed.NodeList(names), ""))
		c["n1"].must("svcmgr", "-s", svc, "sign", file, "--key", key, "--cluster", "test")
		c["n1"].must("svcmgr", "-s", svc, "create", "--config", file)
		waitFor(t, 20*time.Second, svc+" up on n1", upOnlyOn(c["n3"], svc, "n1"))
	}
	// without a key, this node's daemon refuses (exit 2); with one it stops db
	if r := c["n1"].run("svcmgr", "-s", "db", "stop"); r.Code != 2 || !strings.Contains(r.Err, "target_refused: unsigned") {
		t.Fatalf("unsigned stop: want exit 2 target_refused: unsigned, got %s", r)
	}
	c["n1"].must("svcmgr", "-s", "db", "stop", "--wait", "--time", "30s", "--key", key)
	if r := c["n3"].run("svcmgr", "-s", "db", "delete"); r.Code != 2 || !strings.Contains(r.Err, "config_refused: unsigned deletion") {
		t.Fatalf("unsigned delete: want exit 2 config_refused: unsigned deletion, got %s", r)
	}
	pidFile := c["n1"].root + "/var/services/web/main.pid"
	pid := strings.TrimSpace(readFile(t, pidFile))

	// the insider: n2 without [admin_keys]
	c["n2"].must("nodemgr", "daemon", "stop")
	writeClusterToml(t, c["n2"], base)
	c["n2"].startDaemon()
	waitFor(t, 30*time.Second, "n2 back, out of rejoin", func() bool { return c["n2"].status().Nodes["n2"].Monitor == dataset.NodeIdle })

	refused := func(svc, what string) {
		t.Helper()
		for _, n := range []string{"n1", "n3"} {
			waitFor(t, 15*time.Second, n+" refuses n2's "+what+" of "+svc, func() bool {
				return strings.Contains(c[n].status().Services[svc].OrderRefused, what)
			})
		}
	}
	c["n2"].must("svcmgr", "-s", "web", "stop")
	refused("web", "the target stopped from n2 is refused here: target_refused: unsigned")
	c["n2"].must("svcmgr", "-s", "web", "abort")
	waitFor(t, 15*time.Second, "the abort taken on n1", func() bool { return c["n1"].status().Services["web"].OrderRefused == "" })
	c["n2"].must("svcmgr", "-s", "web", "switch", "--to", "n3")
	refused("web", "the target placed@n3 from n2 is refused here: target_refused: unsigned")
	c["n2"].must("svcmgr", "-s", "db", "delete")
	refused("db", "the deletion from n2 is refused here: config_refused: unsigned deletion")
	for _, n := range []string{"n1", "n3"} {
		if _, err := os.Stat(c[n].root + "/etc/services/db.toml"); err != nil {
			t.Errorf("%s: db's config is gone: %v", n, err)
		}
		if log := readFile(t, c[n].root+"/log/node.log"); !strings.Contains(log, "target_refused") || !strings.Contains(log, "unsigned deletion") {
			t.Errorf("%s: its log does not say the refusals", n)
		}
	}
	// web stays on n1, the same process
	if w := where(c["n1"], "web"); len(w) != 1 || w[0] != "n1" {
		t.Errorf("web up on %v, want n1", w)
	}
	if now := strings.TrimSpace(readFile(t, pidFile)); now != pid {
		t.Errorf("web's app on n1 was restarted: pid %s, then %s", pid, now)
	}
	if p, _ := strconv.Atoi(pid); !testbed.Alive(p) {
		t.Errorf("web's app (pid %s) no longer runs on n1", pid)
	}

	// the admin, from n2: signed orders are taken everywhere
	c["n2"].must("svcmgr", "-s", "web", "abort")
	c["n2"].must("svcmgr", "-s", "web", "stop", "--wait", "--time", "30s", "--key", key)
	waitFor(t, 20*time.Second, "web stopped on n1", func() bool { return !testbed.Alive(atoi(pid)) })
	c["n2"].must("svcmgr", "-s", "web", "delete", "--key", key)
	for _, n := range names {
		waitFor(t, 20*time.Second, "web deleted on "+n, func() bool {
			_, err := os.Stat(c[n].root + "/etc/services/web.toml")
			return os.IsNotExist(err)
		})
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
