// Package version holds what `--version` prints. Version and Commit are
// stamped at build time by the Makefile:
//
//	go build -ldflags "-X haven/internal/version.Version=0.1.0 -X haven/internal/version.Commit=abc123"
//
// A plain `go build` prints "dev" and "unknown".
package version

import (
	"fmt"
	"runtime"
)

// Version is the release (from git describe or the VERSION file).
var Version = "dev"

// Commit is the full git commit the binaries were built from.
var Commit = "unknown"

// Compat is the compat version of this build, announced in every heartbeat
// (docs/contract.md section 7); HAVEN_COMPAT overrides it when the daemon starts.
const Compat = 1

// String is the one-line version of a tool: its release, commit, Go version
// and the compat version of the cluster protocol (docs/contract.md section 7).
func String() string {
	return fmt.Sprintf("%s (commit %s, %s, compat %d)", Version, Commit, runtime.Version(), Compat)
}
