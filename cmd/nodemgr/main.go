// The runtime's monitor thread re-reads the CPU limits (affinity, cgroup
// cpu.max) once a second when it is awake to adjust GOMAXPROCS: two system
// calls and a file read at each beat of an idle daemon, for a limit that a
// cluster node does not change under a running daemon (GOMAXPROCS is still
// set from them at start; docs/benchmarks.md).
//
//go:debug updatemaxprocs=0

// Command nodemgr manages the Haven daemon and this node.
package main

import (
	"os"
	"runtime"

	"haven/cli/cliutil"
	"haven/nodemgr"
	"haven/resource"
)

func main() {
	oneProcessor(os.Getenv)
	_ = resource.QuietChildExits() // a cost only, when it fails: the runtime's handler stays
	ctx, cancel := cliutil.Context()
	code := cliutil.MainContext(ctx, nodemgr.App(), os.Args)
	cancel()
	os.Exit(code)
}

// oneProcessor runs Go code on one processor unless GOMAXPROCS says
// otherwise: an idle daemon spends a tenth less CPU (no second thread spun
// up to look for work at each wake-up), and a busy one does little that
// several processors would speed up (one decision loop; checks and
// heartbeat wait on the kernel; a thread blocked in a system call still
// hands the processor on). docs/operations.md, docs/benchmarks.md.
func oneProcessor(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
