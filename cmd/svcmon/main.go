// Command svcmon shows the Haven cluster at a glance.
package main

import (
	"os"

	"haven/cli/cliutil"
	"haven/svcmon"
)

func main() {
	ctx, cancel := cliutil.Context()
	code := cliutil.MainContext(ctx, svcmon.App(), os.Args)
	cancel()
	os.Exit(code)
}
