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
