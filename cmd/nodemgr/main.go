// The runtime's monitor thread re-reads the CPU limits (affinity, cgroup
// cpu.max) once a second when it is awake to adjust GOMAXPROCS: two system
// calls and a file read at each beat of an idle daemon, for a limit that a
// cluster node does not change under a running daemon (GOMAXPROCS is still
// set from them at start). docs/benchmarks.md, issue 26.
//
//go:debug updatemaxprocs=0

// Command nodemgr manages the Haven daemon and this node.
package main

import (
	"os"

	"haven/cli/cliutil"
	"haven/nodemgr"
)

func main() {
	ctx, cancel := cliutil.Context()
	code := cliutil.MainContext(ctx, nodemgr.App(), os.Args)
	cancel()
	os.Exit(code)
}
