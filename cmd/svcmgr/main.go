// Command svcmgr manages Haven services.
package main

import (
	"os"

	"haven/cli/cliutil"
	"haven/svcmgr"
)

func main() {
	ctx, cancel := cliutil.Context()
	app := svcmgr.App()
	code := cliutil.MainContext(ctx, app, os.Args)
	cancel()
	os.Exit(code)
}
