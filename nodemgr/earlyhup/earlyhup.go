// Package earlyhup catches SIGHUP for `nodemgr daemon run` as early as the
// program can: in a package init that needs only os/signal, so that it
// runs before the heavy packages' inits and long before the command line
// is parsed. Without a handler, a SIGHUP (logrotate's postrotate, a
// reload) that reached the daemon in its first milliseconds ended it with
// status 129. It imports nothing of Haven and must stay that small: the
// Go runtime initializes it as soon as os/signal is.
package earlyhup

import (
	"os"
	"os/signal"
	"syscall"
)

// C receives SIGHUP from the start when the command line is `daemon run`
// (nil otherwise: the other commands keep the default, a hangup ends
// them). The daemon reads it once it is running; a signal that came
// before waits in it.
var C chan os.Signal

func init() {
	if isDaemonRun(os.Args[1:]) {
		C = make(chan os.Signal, 1)
		signal.Notify(C, syscall.SIGHUP)
	}
}

// isDaemonRun says whether args hold the words "daemon" then "run" (flags
// may stand anywhere on the line). A false positive only makes a command
// that fails anyway ignore SIGHUP.
func isDaemonRun(args []string) bool {
	for i, a := range args {
		if a == "daemon" {
			for _, b := range args[i+1:] {
				if b == "run" {
					return true
				}
			}
			return false
		}
	}
	return false
}
