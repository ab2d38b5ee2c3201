package daemon

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"haven/node"
)

// nodeActionTimeout bounds a node action's command (a crash or reboot
// command that hangs must not hold a worker forever).
const nodeActionTimeout = 30 * time.Second

// runNodeActions runs the node actions of a Ready (crash, reboot): the
// core hands them over once the state that led to them is on disk (the
// counters survive the crash), each in a worker: the loop never waits on
// them. Each is logged at error level with its reason and emitted
// (node.NodeActionRun); a command that returns (a harmless test command,
// or a kernel that ignored the sysrq) is reported by node.NodeActionEnd.
func (d *Daemon) runNodeActions(acts []node.NodeAction) {
	for _, a := range acts {
		d.startNodeAction(a)
	}
}

// nodeActionCommand is node.toml's command for a node action kind.
func (d *Daemon) nodeActionCommand(kind string) string {
	switch kind {
	case node.NodeCrash:
		return d.node.CrashCommand
	case node.NodeReboot:
		return d.node.RebootCommand
	}
	return ""
}

func (d *Daemon) startNodeAction(a node.NodeAction) {
	d.logEvent(node.NodeActionRun{Action: a.Kind, Reason: a.Reason})
	cmdline := d.nodeActionCommand(a.Kind)
	if cmdline == "" {
		d.logEvent(node.NodeActionEnd{Action: a.Kind, Err: fmt.Sprintf("no command for node action %q", a.Kind)})
		return
	}
	d.goWorker(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, nodeActionTimeout)
		defer cancel()
		err := execNodeAction(ctx, cmdline)
		d.post(func() { d.logEvent(node.NodeActionEnd{Action: a.Kind, Err: errString(err)}) })
	})
}

// execNodeAction runs a node action's command with /bin/sh -c; its error
// carries the start of its output.
func execNodeAction(ctx context.Context, cmdline string) error {
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
	}
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
