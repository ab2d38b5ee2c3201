package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Links planted in the root's directories are never
// followed: node.log, a service log and a service's {var} refuse them and
// say so, and nothing is written where they point. The directories the
// daemon creates are private (0700).
func TestDaemonNeverWritesThroughPlantedLinks(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	outside := t.TempDir()
	target := filepath.Join(outside, "target")
	writeFile(t, target, "")
	unchanged := func(what string) {
		t.Helper()
		if b, _ := os.ReadFile(target); len(b) != 0 {
			t.Fatalf("%s: the daemon wrote through the link: %q", what, b)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 1 {
			t.Fatalf("%s: files appeared where a link points: %v", what, ents)
		}
	}

	// node.log: the daemon refuses to start, and says why
	nodeLog := filepath.Join(n.root, "log", "node.log")
	if err := os.MkdirAll(filepath.Dir(nodeLog), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, nodeLog); err != nil {
		t.Fatal(err)
	}
	r := n.run("nodemgr", "daemon", "start")
	if r.Code == 0 || !strings.Contains(r.Out+r.Err, "symbolic link") {
		t.Fatalf("daemon start with node.log a link: want a refusal naming the link, got %s", r)
	}
	unchanged("node.log")
	os.Remove(nodeLog)
	n.startDaemon()
	for _, d := range []string{"var", "run", filepath.Join("log", "services"), filepath.Join("etc", "services")} {
		st, err := os.Stat(filepath.Join(n.root, d))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want a 0700 directory", d, st.Mode(), err)
		}
	}

	// a service log: its lines are refused, reported in node.log
	svcLog := filepath.Join(n.root, "log", "services", "web.log")
	if err := os.Symlink(target, svcLog); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(outside, "..", "svc.toml")
	writeFile(t, conf, "[DEFAULT]\norchestrate = \"no\"\n\n[app.main]\nstart = \"sh -c 'echo started; touch started'\"\nstop = \"true\"\ncheck = \"sh -c 'test -f started'\"\n")
	n.must("svcmgr", "-s", "web", "create", "--config", conf)
	n.must("svcmgr", "-s", "web", "start", "--local")
	waitFor(t, 20*time.Second, "node.log to report the refused service log", func() bool {
		b, _ := os.ReadFile(nodeLog)
		return strings.Contains(string(b), "service log not written") && strings.Contains(string(b), "symbolic link")
	})
	if st, err := os.Stat(filepath.Join(n.root, "var", "services", "web")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("{var} of web: %v, want a 0700 directory", err)
	}
	unchanged("service log")

	// {var}: the command does not run there
	if err := os.MkdirAll(filepath.Join(n.root, "var", "services"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(n.root, "var", "services", "db")); err != nil {
		t.Fatal(err)
	}
	n.must("svcmgr", "-s", "db", "create", "--config", conf)
	n.run("svcmgr", "-s", "db", "start", "--local")
	waitFor(t, 20*time.Second, "db's log to report the refused {var}", func() bool {
		r := n.run("svcmgr", "-s", "db", "logs")
		return strings.Contains(r.Out, "{var}") && strings.Contains(r.Out, "symbolic link")
	})
	unchanged("{var}")
}
