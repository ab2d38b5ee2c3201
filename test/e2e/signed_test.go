package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// Admin-signed configs on real daemons (docs/security.md, "Admin-signed
// configs"). Three nodes whose cluster.toml lists alice's admin key:
//   - an unsigned create is refused (exit 2, config_refused: unsigned);
//   - web, signed on a workstation (svcmgr sign --cluster), created on n2,
//     runs on n1 where it is placed; a set signed with --key and an edit
//     config signed with $HAVEN_ADMIN_KEY reach every node;
//   - n2's insider edits services/web.toml on n2's disk (a check that
//     marks the node it runs on) and restarts n2's daemon: n2 refuses its
//     own file and takes the signed config back from a peer;
//   - the insider edits it again, removes [admin_keys] from n2's
//     cluster.toml and restarts: n2 runs the edit (its mark appears) and
//     sends it as a new version; n1 and n3 refuse it (config_refused:
//     bad signature, the text changed after it was signed, in their
//     status and log), keep the signed config, never run
//     the edit's check, and web runs on, the same process on n1;
//   - the insider sends the first signed config again (a replay, two
//     serials back): n1 and n3 refuse it (config_refused: replayed).
func TestSignedConfigsInsiderEditRefused(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c := newCluster(t, names, clusterOpts{})
	ws := t.TempDir() // the admin's workstation
	key := filepath.Join(ws, "alice.key")
	line := c["n1"].must("svcmgr", "key", "generate", "--name", "alice", "--key", key)
	base := readFile(t, c["n1"].root+"/etc/cluster.toml")
	signedConf := base + "\n[admin_keys]\n" + line
	for _, n := range names {
		writeClusterToml(t, c[n], signedConf)
	}
	startNodes(t, c, names)

	marks := t.TempDir()
	web := testbed.HAService(testbed.NodeList(names), "")
	file := filepath.Join(ws, "web.toml")
	writeFile(t, file, web)
	if r := c["n1"].run("svcmgr", "-s", "web", "create", "--config", file); r.Code != 2 || !strings.Contains(r.Err, "config_refused: unsigned") {
		t.Fatalf("unsigned create: want exit 2 config_refused: unsigned, got %s", r)
	}
	c["n1"].must("svcmgr", "-s", "web", "sign", file, "--key", key, "--cluster", "test")
	c["n2"].must("svcmgr", "-s", "web", "create", "--config", file)
	waitFor(t, 20*time.Second, "signed web up on n1", upOnlyOn(c["n3"], "web", "n1"))
	first := readFile(t, c["n1"].root+"/etc/services/web.toml") // serial 1 of 3
	if r := c["n3"].run("svcmgr", "-s", "web", "set", "--kw", "app#main.timeout=11s"); r.Code != 2 || !strings.Contains(r.Err, "svcmgr set --key") {
		t.Fatalf("set without a key: want exit 2 naming --key, got %s", r)
	}
	c["n3"].must("svcmgr", "-s", "web", "set", "--kw", "app#main.timeout=12s", "--key", key)
	for _, n := range names {
		waitFor(t, 10*time.Second, "the signed set on "+n, func() bool {
			return strings.Contains(readFile(t, c[n].root+"/etc/services/web.toml"), `"12s"`)
		})
	}
	// edit config, the key from the environment
	r, err := testbed.Command{Bin: filepath.Join(binDir, "svcmgr"), Root: c["n2"].root, Args: []string{"-s", "web", "edit", "config"},
		Env: []string{"EDITOR=sed -i s/12s/13s/", "HAVEN_ADMIN_KEY=" + key}}.Run()
	if err != nil || r.Code != 0 {
		t.Fatalf("edit config with HAVEN_ADMIN_KEY: %v %s", err, r)
	}
	for _, n := range names {
		waitFor(t, 10*time.Second, "the signed edit on "+n, func() bool {
			return strings.Contains(readFile(t, c[n].root+"/etc/services/web.toml"), `"13s"`)
		})
	}
	signed := readFile(t, c["n1"].root+"/etc/services/web.toml")
	pidFile := c["n1"].root + "/var/services/web/main.pid"
	pid := strings.TrimSpace(readFile(t, pidFile))

	// the insider's edit: the check also marks the node it runs on
	evil := strings.Replace(signed, `check = "sh -c '`, `check = "sh -c 'touch `+marks+`/{nodename}; `, 1)
	if evil == signed {
		t.Fatal("no check to edit in:\n" + signed)
	}
	n2conf := c["n2"].root + "/etc/services/web.toml"
	c["n2"].must("nodemgr", "daemon", "stop")
	writeFile(t, n2conf, evil)
	c["n2"].startDaemon()
	waitFor(t, 20*time.Second, "n2 takes the signed config back", func() bool { return readFile(t, n2conf) == signed })
	if log := readFile(t, c["n2"].root+"/log/node.log"); !strings.Contains(log, "service config refused for its signature") {
		t.Error("n2's log does not say why its file was refused")
	}

	c["n2"].must("nodemgr", "daemon", "stop")
	writeFile(t, n2conf, evil)
	writeClusterToml(t, c["n2"], base)
	c["n2"].startDaemon()
	waitFor(t, 20*time.Second, "n2 runs its own edit (its check marks n2)", func() bool {
		_, err := os.Stat(filepath.Join(marks, "n2"))
		return err == nil
	})
	for _, n := range []string{"n1", "n3"} {
		waitFor(t, 10*time.Second, n+" refuses n2's edit and says so", func() bool {
			e := c[n].status().Services["web"].ConfigError
			return strings.Contains(e, "the config from n2 is refused here") && strings.Contains(e, "config_refused: bad signature")
		})
		if log := readFile(t, c[n].root+"/log/node.log"); !strings.Contains(log, "config_refused") {
			t.Errorf("%s: no config_refused in its log", n)
		}
		if got := readFile(t, c[n].root+"/etc/services/web.toml"); got != signed {
			t.Errorf("%s: the signed config was not kept:\n%s", n, got)
		}
	}
	// n2's check ran twice more meanwhile: the others' checks, had they
	// taken the edit, would have marked them by now
	n2mark := filepath.Join(marks, "n2")
	for _, round := range []int{1, 2} {
		os.Remove(n2mark)
		waitFor(t, 10*time.Second, "n2's check ran again ("+strconv.Itoa(round)+")", func() bool {
			_, err := os.Stat(n2mark)
			return err == nil
		})
	}
	for _, n := range []string{"n1", "n3"} {
		if _, err := os.Stat(filepath.Join(marks, n)); err == nil {
			t.Errorf("%s ran the insider's check", n)
		}
	}
	// the insider sends the first signed config again (a replay): below
	// the serial of the config before the newest, refused
	c["n2"].must("nodemgr", "daemon", "stop")
	writeFile(t, n2conf, first)
	c["n2"].startDaemon()
	for _, n := range []string{"n1", "n3"} {
		waitFor(t, 10*time.Second, n+" refuses the replayed config", func() bool {
			return strings.Contains(c[n].status().Services["web"].ConfigError, "config_refused: replayed")
		})
		if got := readFile(t, c[n].root+"/etc/services/web.toml"); got != signed {
			t.Errorf("%s: the signed config was not kept after the replay:\n%s", n, got)
		}
	}
	if now := strings.TrimSpace(readFile(t, pidFile)); now != pid {
		t.Errorf("web's app on n1 was restarted: pid %s, then %s", pid, now)
	}
	if p, _ := strconv.Atoi(pid); !testbed.Alive(p) {
		t.Errorf("web's app (pid %s) no longer runs on n1", pid)
	}
	if w := where(c["n1"], "web"); len(w) != 1 || w[0] != "n1" {
		t.Errorf("web up on %v, want n1", w)
	}
}
