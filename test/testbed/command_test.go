package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBin is a stand-in binary: it prints its arguments, "oops" on
// stderr, then runs body.
func fakeBin(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"$@\"\necho oops >&2\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommandExitStatusAndOutput(t *testing.T) {
	r, err := Run(fakeBin(t, "exit 3"), "/r", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 3 || r.TimedOut || strings.TrimSpace(r.Out) != "--root /r a b" || strings.TrimSpace(r.Err) != "oops" {
		t.Fatalf("got %+v, want exit 3, stdout %q, stderr oops", r, "--root /r a b")
	}
}

func TestCommandKilledAtItsDeadline(t *testing.T) {
	start := time.Now()
	r, err := Command{Bin: fakeBin(t, "exec sleep 30"), Root: "/r", Timeout: 200 * time.Millisecond}.Run()
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.Code != -1 {
		t.Fatalf("got %+v, want TimedOut and exit -1", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the kill at 200ms took %s", d)
	}
}

func TestCommandThatCannotRun(t *testing.T) {
	if _, err := Run(filepath.Join(t.TempDir(), "missing"), "/r"); err == nil || !strings.Contains(err.Error(), "run missing") {
		t.Fatalf("err = %v, want one naming the binary", err)
	}
}

func TestCommandInANetworkNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a command in a network namespace needs root")
	}
	ns := "hv-testbed-" + "cmd"
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	r, err := Command{Bin: fakeBin(t, "readlink /proc/self/ns/net"), Root: "/r", NS: ns, Timeout: 10 * time.Second}.Run()
	if err != nil || r.Code != 0 {
		t.Fatalf("run in %s: %v %+v", ns, err, r)
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	if got := strings.TrimSpace(strings.Split(r.Out, "\n")[1]); got == "" || got == self {
		t.Fatalf("the command ran in namespace %q, this process is in %q: want another", got, self)
	}
}
