package resource

import (
	"context"
	"time"
)

// Outcome is how a command run by Exec ended.
type Outcome struct {
	OK       bool     // exit code 0
	TimedOut bool     // killed at its timeout (the whole process group)
	Describe string   // "exit code 3: last line", "timed out", ...
	Lines    []string // its last output lines
}

// Exec runs a command line as the app resources run theirs (no shell, a
// new process group, SIGTERM then SIGKILL to the whole group at timeout)
// with env as its whole environment and stdin on its standard input: the
// daemon's event hooks. The error is for a command that could not be run.
func Exec(ctx context.Context, cmdline string, timeout time.Duration, env []string, stdin []byte) (Outcome, error) {
	if stdin == nil {
		stdin = []byte{}
	}
	res, err := run(ctx, command{cmdline: cmdline, action: "hook", timeout: timeout, env: env, keep: 5, stdin: stdin})
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{OK: res.code == 0 && !res.timedOut && !res.canceled, TimedOut: res.timedOut,
		Describe: res.describe(), Lines: res.lines}, nil
}
