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

// runNodeActions runs the node actions of a Ready (crash, reboot) once
// the state handed to the persister is on disk (the counters that led to
// them survive the crash), each in a worker: the loop never waits on
// them. Each is logged at error level with its reason and emitted
// (node.NodeActionRun); a command that returns (a harmless test command,
// or a kernel that ignored the sysrq) is reported by node.NodeActionEnd.
func (d *Daemon) runNodeActions(acts []node.NodeAction) {
	if len(acts) == 0 {
		return
	}
	d.afterSaved(func(err error) {
		for _, a := range acts {
			if err != nil {
				d.logEvent(node.NodeActionEnd{Action: a.Kind, Err: "not run: state not saved: " + err.Error()})
				continue
			}
			d.startNodeAction(a)
		}
	})
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
		d.post(func() { d.logEvent(node.NodeActionEnd{Action: a.Kind, Err: errString(err)}) })
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
