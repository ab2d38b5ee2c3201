package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// startService is testbed.PidService with orchestrate = start.
var startService = strings.Replace(testbed.PidService, `orchestrate = "no"`, `orchestrate = "start"`, 1)

// A service whose config no longer parses keeps its durable state and is
// shown as "config invalid"; nothing is started or stopped; once the file
// is repaired, a service the admin had stopped stays stopped and frozen.
func TestConfigInvalidKeepsStateAndIsShown(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "[node]\nname = \"n1\"\nmonitor_interval = \"300ms\"\nready_period = \"1s\"\n")
	n.startDaemon()
	createService(t, n, "web", startService)
	waitFor(t, 10*time.Second, "web started (orchestrate = start)", func() bool { return n.instance("web").Avail == dataset.StatusUp })
	n.must("svcmgr", "-s", "web", "stop", "--wait", "--time", "20s")
	if i := n.instance("web"); i.Avail != dataset.StatusDown || !i.Frozen {
		t.Fatalf("after stop: avail %q frozen %v, want down and frozen", i.Avail, i.Frozen)
	}
	// a second service runs: it must be left alone while its config is invalid
	createService(t, n, "db", testbed.PidService)
	n.must("svcmgr", "-s", "db", "start", "--local")
	dbPid := readFile(t, filepath.Join(n.root, "var", "services", "db", "main.pid"))

	conf := filepath.Join(n.root, "etc", "services", "web.toml")
	good := readFile(t, conf)
	n.must("nodemgr", "daemon", "stop")
	writeFile(t, conf, "[DEFAULT]\norchestrate = \"start\"\nnodes = [\"n1\"\n")
	dbConf := filepath.Join(n.root, "etc", "services", "db.toml")
	dbGood := readFile(t, dbConf)
	writeFile(t, dbConf, strings.Replace(dbGood, `orchestrate = "no"`, `orchestrate = "sometimes"`, 1))
	n.startDaemon()

	st := n.status()
	web, ok := st.Services["web"]
	if !ok {
		t.Fatalf("web disappeared from the status when its config became invalid: %v", st.Services)
	}
	if !strings.Contains(web.ConfigError, conf) {
		t.Fatalf("web config_error = %q, want the error naming %s", web.ConfigError, conf)
	}
	if web.Frozen != "frozen" || !web.Instances["n1"].Frozen {
		t.Fatalf("web frozen = %q (instance %v), want frozen: the durable state was lost", web.Frozen, web.Instances["n1"].Frozen)
	}
	db := st.Services["db"]
	if !strings.Contains(db.ConfigError, "orchestrate") || db.Instances["n1"].Monitor.LocalExpect != "started" {
		t.Fatalf("db: config_error %q local expect %q, want the orchestrate error and started", db.ConfigError, db.Instances["n1"].Monitor.LocalExpect)
	}
	for _, out := range []string{n.must("svcmon"), n.must("svcmgr", "ls"), n.must("svcmgr", "-s", "web", "print", "status")} {
		if !strings.Contains(out, "config invalid") || !strings.Contains(out, conf) {
			t.Fatalf("the view does not say config invalid with the error:\n%s", out)
		}
	}
	// the daemon does not act: nothing started, the running db left alone
	pid := filepath.Join(n.root, "var", "services", "web", "main.pid")
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err := os.Stat(pid); err == nil {
			t.Fatal("web was started while its config is invalid")
		}
	}
	if got := readFile(t, filepath.Join(n.root, "var", "services", "db", "main.pid")); got != dbPid {
		t.Fatalf("db was restarted while its config is invalid (pid %q, was %q)", got, dbPid)
	}
	if r := n.run("svcmgr", "-s", "web", "start"); r.Code != 1 || !strings.Contains(r.Err, "config invalid") {
		t.Fatalf("start of a service whose config is invalid: want exit 1 saying config invalid, got %s", r)
	}

	// repaired by hand, then a restart: still stopped and frozen
	n.must("nodemgr", "daemon", "stop")
	writeFile(t, conf, good)
	n.startDaemon()
	waitFor(t, 5*time.Second, "web checked after the repair", func() bool { return n.instance("web").Avail != dataset.StatusUnknown })
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if i := n.instance("web"); i.Avail != dataset.StatusDown || !i.Frozen {
			t.Fatalf("after the repair web is %q frozen %v, want down and frozen (the admin stopped it)", i.Avail, i.Frozen)
		}
	}
	if e := n.status().Services["web"].ConfigError; e != "" {
		t.Fatalf("config_error %q after the repair", e)
	}

	// repaired with edit config: db is managed again, still running
	editor := filepath.Join(t.TempDir(), "fix.sh")
	writeFile(t, editor, "#!/bin/sh\nsed -i 's/sometimes/no/' \"$1\"\n")
	os.Chmod(editor, 0o755)
	r := n.runEnv([]string{"EDITOR=" + editor}, "svcmgr", "-s", "db", "edit", "config")
	if r.Code != 0 {
		t.Fatalf("edit config of the invalid db: %s", r)
	}
	waitFor(t, 5*time.Second, "db checked up after the repair", func() bool { return n.instance("db").Avail == dataset.StatusUp })
	if got := readFile(t, filepath.Join(n.root, "var", "services", "db", "main.pid")); got != dbPid {
		t.Fatalf("db was restarted by the repair (pid %q, was %q)", got, dbPid)
	}
}

// A config changed behind Haven's back on one node (valid TOML, e.g. a
// file truncated or edited by hand) is not kept silently under the same
// version as the other nodes' content: the node that finds it on start-up
// gives it a new version, and every node converges on that content.
func TestConfigChangedBehindHavenConverges(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", strings.Replace(testbed.PidService, "[DEFAULT]", "[DEFAULT]\nnodes = [\"n1\", \"n2\"]", 1))
	conf2 := filepath.Join(c["n2"].root, "etc", "services", "web.toml")
	waitFor(t, 10*time.Second, "web installed on n2", func() bool { _, err := os.Stat(conf2); return err == nil })

	c["n2"].must("nodemgr", "daemon", "stop")
	hand := "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\norchestrate = \"no\"\npriority = 42\n"
	writeFile(t, conf2, hand)
	c["n2"].startDaemon()
	start := time.Now()
	waitFor(t, 20*time.Second, "both nodes hold the same content", func() bool {
		a := c["n1"].run("svcmgr", "-s", "web", "print", "config").Out
		b := c["n2"].run("svcmgr", "-s", "web", "print", "config").Out
		return a == b && a == hand
	})
	t.Logf("converged %s after n2's restart", time.Since(start).Round(10*time.Millisecond))
	v1 := c["n1"].status().Services["web"].Instances["n1"].ConfigVersion
	v2 := c["n2"].status().Services["web"].Instances["n2"].ConfigVersion
	if v1 != v2 {
		t.Fatalf("same content under different versions: n1 %+v, n2 %+v", v1, v2)
	}
	if !strings.Contains(nodeLog(t, c["n2"]), "changed outside Haven") {
		t.Fatalf("n2 did not log the change made behind Haven's back:\n%s", nodeLog(t, c["n2"]))
	}
}

// Concurrent edits on two nodes never lose an acknowledged change: every
// append that exited 0 is in the final config of both nodes; an append may
// fail (exit 1) only saying it was changed concurrently.
func TestConcurrentEditsLoseNoAcknowledgedChange(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", strings.Replace(testbed.PidService, "[DEFAULT]", "[DEFAULT]\nnodes = [\"n1\", \"n2\"]", 1))
	waitFor(t, 10*time.Second, "web installed on n2", func() bool {
		return c["n2"].run("svcmgr", "-s", "web", "print", "config").Code == 0
	})
	const perNode, parallel = 20, 4
	type outcome struct {
		item string
		r    testbed.Result
	}
	var mu sync.Mutex
	var outcomes []outcome
	var wg sync.WaitGroup
	for _, name := range []string{"n1", "n2"} {
		n := c[name]
		work := make(chan string)
		for w := 0; w < parallel; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for item := range work {
					r := n.run("svcmgr", "-s", "web", "set", "--kw", "DEFAULT.soft_affinity+="+item)
					mu.Lock()
					outcomes = append(outcomes, outcome{item, r})
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perNode; i++ {
				work <- fmt.Sprintf("%s-%d", name, i)
			}
			close(work)
		}()
	}
	wg.Wait()
	var final string
	waitFor(t, 20*time.Second, "both nodes hold the same config", func() bool {
		a := c["n1"].run("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.soft_affinity").Out
		b := c["n2"].run("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.soft_affinity").Out
		final = a
		return a == b
	})
	acked, refused := 0, 0
	for _, o := range outcomes {
		switch {
		case o.r.Code == 0:
			acked++
			if !strings.Contains(final, `"`+o.item+`"`) {
				t.Errorf("append of %s exited 0 but is not in the final config", o.item)
			}
		case o.r.Code == 1 && strings.Contains(o.r.Err, "changed concurrently"):
			refused++
		default:
			t.Errorf("append of %s: want exit 0, or exit 1 saying changed concurrently; got %s", o.item, o.r)
		}
	}
	rebases := strings.Count(nodeLog(t, c["n1"])+nodeLog(t, c["n2"]), "applied again on top of a concurrent version")
	t.Logf("%d appends acknowledged, %d refused as concurrent, %d rebases; final list: %s", acked, refused, rebases, strings.TrimSpace(final))
	if acked == 0 {
		t.Fatal("no append was acknowledged")
	}

	// edits of different keys at the same moment on both nodes: both kept
	for i := 1; i <= 5; i++ {
		var r1, r2 testbed.Result
		var pair sync.WaitGroup
		pair.Add(2)
		go func() {
			defer pair.Done()
			r1 = c["n1"].run("svcmgr", "-s", "web", "set", "--kw", fmt.Sprintf("DEFAULT.priority=%d", i))
		}()
		go func() {
			defer pair.Done()
			r2 = c["n2"].run("svcmgr", "-s", "web", "set", "--kw", fmt.Sprintf("DEFAULT.soft_anti_affinity=p%d", i))
		}()
		pair.Wait()
		for _, r := range []testbed.Result{r1, r2} {
			if r.Code != 0 && !(r.Code == 1 && strings.Contains(r.Err, "changed concurrently")) {
				t.Fatalf("pair %d: want exit 0, or exit 1 saying changed concurrently; got %s", i, r)
			}
		}
		for _, n := range []string{"n1", "n2"} {
			if r1.Code == 0 {
				waitFor(t, 10*time.Second, fmt.Sprintf("pair %d: priority %d on %s", i, i, n), func() bool {
					return strings.TrimSpace(c[n].run("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.priority").Out) == fmt.Sprint(i)
				})
			}
			if r2.Code == 0 {
				waitFor(t, 10*time.Second, fmt.Sprintf("pair %d: soft_anti_affinity p%d on %s", i, i, n), func() bool {
					return strings.Contains(c[n].run("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.soft_anti_affinity").Out, fmt.Sprintf(`"p%d"`, i))
				})
			}
		}
	}
}

// edit config is a compare-and-swap: a config changed while the editor
// was open is not overwritten (exit 1, the edit kept in a file).
func TestEditConfigRefusesAConcurrentChange(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	createService(t, n, "web", testbed.PidService)
	editor := filepath.Join(t.TempDir(), "edit.sh")
	writeFile(t, editor, fmt.Sprintf("#!/bin/sh\n%s --root %s -s web set --kw DEFAULT.priority=3 || exit 1\necho '# mine' >> \"$1\"\n",
		filepath.Join(binDir, "svcmgr"), n.root))
	os.Chmod(editor, 0o755)
	r := n.runEnv([]string{"EDITOR=" + editor}, "svcmgr", "-s", "web", "edit", "config")
	if r.Code != 1 || !strings.Contains(r.Err, "changed concurrently") || !strings.Contains(r.Err, "your edit is kept in") {
		t.Fatalf("edit config over a concurrent set: want exit 1, changed concurrently, edit kept; got %s", r)
	}
	if got := strings.TrimSpace(n.must("svcmgr", "-s", "web", "get", "--kw", "DEFAULT.priority")); got != "3" {
		t.Fatalf("the concurrent set was overwritten: priority %q, want 3", got)
	}
	if strings.Contains(n.must("svcmgr", "-s", "web", "print", "config"), "# mine") {
		t.Fatal("the stale edit was installed")
	}
}

// edit config on a terminal offers a refused edit to the editor again
// (as crontab -e does); answered yes, the second edit is installed and no
// edit file is left behind. Off a terminal, the refusal ends it, the edit
// kept and named.
func TestEditConfigOffersARefusedEditAgain(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("needs script(1) (util-linux) for a terminal")
	}
	n := newNode(t, "n1", "")
	n.startDaemon()
	createService(t, n, "web", testbed.PidService)
	dir := t.TempDir()
	tmpdir := filepath.Join(dir, "tmp")
	os.Mkdir(tmpdir, 0o700)
	// first edit: an unknown keyword (refused); second: a valid change
	editor := filepath.Join(dir, "edit.sh")
	writeFile(t, editor, fmt.Sprintf("#!/bin/sh\nif [ -e %[1]s/once ]; then sed -i '/nosuchsection/d' \"$1\"; echo '# second' >> \"$1\"; else touch %[1]s/once; echo '[nosuchsection]' >> \"$1\"; fi\n", dir))
	os.Chmod(editor, 0o755)
	env := []string{"EDITOR=" + editor, "TMPDIR=" + tmpdir}
	// off a terminal: refused, exit 2, the edit kept and named
	r := n.runEnv(env, "svcmgr", "-s", "web", "edit", "config")
	if r.Code != 2 || !strings.Contains(r.Err, "nosuchsection") || !strings.Contains(r.Err, "your edit is kept in "+tmpdir) {
		t.Fatalf("a refused edit off a terminal: want exit 2 naming the key and the kept file; got %s", r)
	}
	os.Remove(filepath.Join(dir, "once"))
	kept, _ := filepath.Glob(filepath.Join(tmpdir, "*"))
	for _, f := range kept {
		os.Remove(f)
	}
	// on a terminal (script's pty), answered yes
	cmd := exec.Command(scriptBin, "-qec", filepath.Join(binDir, "svcmgr")+" --root "+n.root+" -s web edit config", "/dev/null")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader("y\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "edit again? [Y/n]") || !strings.Contains(string(out), "web: config installed") {
		t.Fatalf("edit config on a terminal, a refused edit answered yes: %v\n%s", err, out)
	}
	if !strings.Contains(n.must("svcmgr", "-s", "web", "print", "config"), "# second") {
		t.Fatal("the second edit was not installed")
	}
	if left, _ := filepath.Glob(filepath.Join(tmpdir, "*")); len(left) > 0 {
		t.Fatalf("edit files left behind: %v", left)
	}
}
