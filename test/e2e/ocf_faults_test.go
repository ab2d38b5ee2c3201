package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/test/testbed"
)

// The OCF exit codes with real daemons on loopback, with the fake agent of
// package resource (resource/testdata/ocf/resource.d/haven/fake: each
// action exits with the code written in DIR/ACTION; without one, start
// creates DIR/running, stop removes it, monitor says 0 or 7).

// fakeOCFService is an ha service of n1 and n2 with one monitored
// ocf:haven:fake resource whose code directory is dir.
func fakeOCFService(dir string) string {
	return `[DEFAULT]
nodes = ["n1", "n2"]
orchestrate = "ha"

[ocf.app]
agent = "haven:fake"
params = { dir = "` + dir + `" }
monitor = true
restart = 1
restart_delay = "200ms"
`
}

// A 2-node cluster where n1 lacks the agent (its ocf_root holds none):
//   - an agent neither node has is refused at create (exit 2, the line
//     and the key);
//   - the service, n1 first in its nodes, is placed on n2, and n1 says
//     why (excluded: cannot run here);
//   - bad parameters are refused at create with the agent's own text;
//   - the monitor says 7 (the resource died): the restart ladder restarts
//     it alone on n2;
//   - the monitor says 6 (not configured): the service is stopped and
//     frozen everywhere, said at error level.
func TestOCFExitCodesWithDaemons(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	fakeRoot := repoPath(t, "resource", "testdata", "ocf")
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{extra: `ocf_root = "` + fakeRoot + `"`})
	// n1: an OCF root without the agent
	nt := filepath.Join(c["n1"].root, "etc", "node.toml")
	writeFile(t, nt, strings.Replace(readFile(t, nt), fakeRoot, t.TempDir(), 1))
	for _, n := range names {
		c[n].startDaemon()
	}
	for _, p := range [][2]string{{"n1", "n2"}, {"n2", "n1"}} {
		waitFor(t, 10*time.Second, p[0]+" sees "+p[1]+" up", func() bool { return peerStatus(c[p[0]], p[1]) == dataset.NodeUp })
	}
	dir := t.TempDir()

	// bad parameters: refused at create, with the agent's words (exit 2)
	bad := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, bad, strings.Replace(fakeOCFService(dir), `params = { dir`, `params = { colour = "red", dir`, 1))
	r := c["n2"].run("svcmgr", "-s", "web", "create", "--config", bad)
	if r.Code != 2 || !strings.Contains(r.Err, `web.toml:7: ocf#app.params.colour: ocf:haven:fake has no parameter "colour"; its parameters: dir (required) [Code directory], color [A color]`) {
		t.Fatalf("bad params: %s", r)
	}

	// the daemon checks too (an API client that skips svcmgr's check)
	body, _ := json.Marshal(api.CreateRequest{Name: "web", Config: readFile(t, bad), File: "web.toml"})
	if code, e := c["n2"].rawPost(api.PathCreate, body); code != 400 || e.Status != 2 || !strings.Contains(e.Error, `ocf#app.params.colour: ocf:haven:fake has no parameter "colour"`) {
		t.Fatalf("create over the API: %d %+v", code, e)
	}

	// an agent none of the service's nodes has (a typo): refused at create,
	// naming the file, the line and the key, once both nodes said so
	typo := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, typo, strings.Replace(fakeOCFService(dir), `"haven:fake"`, `"haven:fake3"`, 1))
	r = c["n1"].run("svcmgr", "-s", "web", "create", "--config", typo)
	if r.Code != 2 || !strings.Contains(r.Err, "web.toml:6: ocf#app.agent: agent ocf:haven:fake3 is installed on none of the service's nodes (n1, n2)") {
		t.Fatalf("an agent no node has: %s, want exit 2 naming web.toml:6 ocf#app.agent", r)
	}
	// --force installs it anyway (an agent installed later), said as a warning
	r = c["n1"].run("svcmgr", "-s", "later", "create", "--force", "--config", typo)
	if r.Code != 0 || !strings.Contains(r.Err, "warning: "+typo+":6: ocf#app.agent: agent ocf:haven:fake3 is installed on none of the service's nodes (n1, n2): installed anyway (--force)") {
		t.Fatalf("create --force of an agent no node has: %s, want exit 0 and the warning", r)
	}
	c["n1"].must("svcmgr", "-s", "later", "delete")

	// placed on n2, the node that has the agent (created from n1, which
	// lacks it: n2 said it has it); n1 says why not
	createService(t, c["n1"], "web", fakeOCFService(dir))
	waitFor(t, 15*time.Second, "web up on n2 (seen from n1)", upOnlyOn(c["n1"], "web", "n2"))
	if err := testbed.WaitFor(5*time.Second, 50*time.Millisecond, "n1 excluded", func() bool {
		return strings.Contains(c["n2"].status().Services["web"].Instances["n1"].Excluded, "ocf#app cannot run here: agent ocf:haven:fake is not installed on this node")
	}); err != nil {
		t.Fatalf("%v: %+v\n%s", err, c["n2"].status().Services["web"].Instances["n1"], c["n1"].must("svcmgr", "-s", "web", "print", "status"))
	}
	if out := c["n1"].must("svcmgr", "-s", "web", "print", "status"); !strings.Contains(out, "cannot run here") {
		t.Errorf("n1's status does not say it cannot run here:\n%s", out)
	}
	// explain says the exclusion ends by itself, not at a clear
	if out := c["n1"].must("svcmgr", "-s", "web", "explain"); !strings.Contains(out, "back by itself once a check finds the resource fine again") || strings.Contains(out, "until svcmgr clear") {
		t.Errorf("n1's explain does not say the exclusion ends by itself:\n%s", out)
	}

	// a set of a parameter the agent does not have: refused the same way
	r = c["n2"].run("svcmgr", "-s", "web", "set", "--kw", "ocf#app.params=dir="+dir+" colour=red")
	if r.Code != 2 || !strings.Contains(r.Err, `ocf#app.params.colour: ocf:haven:fake has no parameter "colour"`) {
		t.Fatalf("set of a bad param: %s", r)
	}

	// a set naming an agent none of the nodes has: refused as at create,
	// on a node that lacks it and on one that has the agent web runs
	for _, n := range names {
		r = c[n].run("svcmgr", "-s", "web", "set", "--kw", "ocf#app.agent=haven:fake3")
		if r.Code != 2 || !strings.Contains(r.Err, "web.toml:6: ocf#app.agent: agent ocf:haven:fake3 is installed on none of the service's nodes (n1, n2)") {
			t.Fatalf("set of an agent no node has, on %s: %s, want exit 2 naming web.toml:6 ocf#app.agent", n, r)
		}
	}
	if got := strings.TrimSpace(c["n1"].must("svcmgr", "-s", "web", "get", "--kw", "ocf#app.agent")); got != "haven:fake" {
		t.Fatalf("agent after the refused set: %q", got)
	}

	// the monitor says 7: the ladder restarts the resource on n2
	calls := filepath.Join(dir, "calls")
	before := len(strings.Fields(readFile(t, calls)))
	if err := os.Remove(filepath.Join(dir, "running")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ocf#app restarted by the ladder", func() bool {
		after := strings.Fields(readFile(t, calls))[before:]
		return strings.Contains(strings.Join(after, " "), "stop validate-all start monitor") && fileExists(filepath.Join(dir, "running"))
	})
	waitFor(t, 5*time.Second, "web up on n2 after the restart, its restart spent", func() bool {
		i := c["n2"].instance("web")
		return i.Avail == dataset.StatusUp && i.Resources["ocf#app"].RestartRemaining == 0
	})
	if l := c["n2"].instance("web").Resources["ocf#app"].LastFailure; !strings.Contains(l, "OCF_NOT_RUNNING") && !strings.Contains(l, "check says down") {
		t.Errorf("last failure %q", l)
	}

	// the monitor says 6: stopped and frozen everywhere, said loudly
	writeFile(t, filepath.Join(dir, "monitor"), "6\n")
	if err := testbed.WaitFor(15*time.Second, 50*time.Millisecond, "web stopped and frozen on both nodes", func() bool {
		st := c["n1"].status().Services["web"]
		for _, n := range names {
			if i := st.Instances[n]; !i.Frozen || i.Avail == dataset.StatusUp {
				return false
			}
		}
		return !fileExists(filepath.Join(dir, "running"))
	}); err != nil {
		t.Fatalf("%v\n%s\n%s\n%s", err, c["n2"].must("svcmgr", "-s", "web", "print", "status"), nodeLog(t, c["n2"]),
			readFile(t, filepath.Join(c["n2"].root, "log", "services", "web.log")))
	}
	if log := nodeLog(t, c["n2"]); !strings.Contains(log, "fatal fault of ocf#app") || !strings.Contains(log, "OCF_ERR_CONFIGURED") {
		t.Errorf("n2's log does not say why:\n%s", log)
	}
}

// repoPath is a path of the repository, found from the test's directory
// up to go.mod (wherever the e2e tests live).
func repoPath(t *testing.T, elem ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for !fileExists(filepath.Join(dir, "go.mod")) {
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = up
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
