package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// A descriptor the daemon inherited without
// close-on-exec (a shell's `3>file`, a supervisor's socket) reached every
// app command and hook it ran. The daemon is started with one extra open
// file; a check command and a hook list their descriptors: neither may
// hold it.
func TestAppsAndHooksDoNotInheritTheDaemonsDescriptors(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	dir := t.TempDir()
	nodeToml := testbed.NodeToml{Name: "n1", Keys: []string{`monitor_interval = "300ms"`}}.String() +
		fmt.Sprintf("\n[hook.fds]\nevents = [\"daemon_start\"]\ncommand = \"sh -c 'ls -l /proc/$$/fd > %s/hook.fds'\"\ntimeout = \"5s\"\n", dir)
	n := newNode(t, "n1", nodeToml)
	marker, err := os.Create(filepath.Join(dir, "inherited-marker"))
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	cmd := exec.Command(filepath.Join(binDir, "nodemgr"), "--root", n.root, "daemon", "run", "--log-stderr=false")
	cmd.ExtraFiles = []*os.File{marker} // fd 3 of the daemon, without close-on-exec
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 20*time.Second, "the daemon to answer", func() bool { return n.run("nodemgr", "daemon", "status").Code == 0 })
	if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", cmd.Process.Pid)); target != marker.Name() {
		t.Fatalf("the daemon's fd 3 is %q, not the inherited file: the test proves nothing", target)
	}
	svc := filepath.Join(dir, "web.toml")
	writeFile(t, svc, "[DEFAULT]\norchestrate = \"no\"\n\n[app.web]\nstart = \"true\"\nstop = \"true\"\n"+
		"check = \"sh -c 'ls -l /proc/$$/fd > {var}/check.fds'\"\n")
	n.must("svcmgr", "-s", "web", "create", "--config", svc)
	n.must("svcmgr", "-s", "web", "print", "status", "-r")
	for _, f := range []string{filepath.Join(n.root, "var", "services", "web", "check.fds"), filepath.Join(dir, "hook.fds")} {
		var got string
		waitFor(t, 20*time.Second, f, func() bool {
			b, err := os.ReadFile(f)
			got = string(b)
			return err == nil && strings.Contains(got, " -> ")
		})
		if strings.Contains(got, "inherited-marker") {
			t.Errorf("%s: the command holds the daemon's inherited descriptor:\n%s", filepath.Base(f), got)
		}
	}
}
