// Package version holds what `--version` prints. Version and Commit are
// stamped at build time by the Makefile:
//
//	go build -ldflags "-X haven/version.Version=0.1.0 -X haven/version.Commit=abc123"
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

// String is the one-line version of a tool: its release, commit, Go version
// and the compat version of the cluster protocol (contract section 7).
func String(compat int) string {
	return fmt.Sprintf("%s (commit %s, %s, compat %d)", Version, Commit, runtime.Version(), compat)
}
