package resource

import (
	"os"
	"strings"
)

// daemonOnlyEnv are the variables systemd hands the daemon for itself: the
// notify socket (a service that wrote READY=1 or WATCHDOG=1 there would
// speak for the daemon; systemd accepts them from any process of the unit
// with NotifyAccess=all) and socket activation. The commands the daemon
// runs never see them.
var daemonOnlyEnv = []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"}

// BaseEnv is the environment of the commands the daemon runs (resource
// actions, hooks): the daemon's, without the variables systemd gave the
// daemon alone.
func BaseEnv() []string { return filterEnv(os.Environ()) }

func filterEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, d := range daemonOnlyEnv {
			drop = drop || name == d
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
