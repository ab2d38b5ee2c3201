package resource

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With SIGCHLD at its default disposition (QuietChildExits, nodemgr's),
// no handler of this process catches it, and run still reaps its commands
// and reads their exit status (the default is not SIG_IGN, which would
// let the kernel reap them).
func TestQuietChildExits(t *testing.T) {
	if err := QuietChildExits(); err != nil {
		t.Fatal(err)
	}
	caught := func() bool {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "SigCgt:"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				return mask&(1<<(syscall.SIGCHLD-1)) != 0
			}
		}
		t.Fatal("no SigCgt in /proc/self/status")
		return false
	}
	if caught() {
		t.Fatal("SIGCHLD is still caught by a handler")
	}
	for range 20 {
		res, err := shRun(context.Background(), `echo out; exit 3`, 10*time.Second, nil)
		if err != nil || res.code != 3 || strings.Join(res.lines, "|") != "out" {
			t.Fatalf("run = %+v, %v; want exit code 3 and the line out", res, err)
		}
	}
}
