package svcmgr

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/dataset"
	"haven/internal/termtext"
)

// actionFlags are the flags of each service action: --local where the
// daemon runs it on this node's instance, --wait where it sets a target.
func actionFlags(name string) []cli.Flag {
	var fs []cli.Flag
	switch name {
	case "start", "stop", "freeze", "thaw", "clear":
		fs = append(fs, &cli.BoolFlag{Name: "local", Usage: "act on this node's instance only, without orchestration"})
	}
	if name == "start" {
		fs = append(fs, &cli.BoolFlag{Name: "force", Usage: "with --local: start here even though the service runs on another node (a second copy)"})
	}
	switch name {
	case "start", "stop":
		fs = append(fs, &cli.StringFlag{Name: "node", Usage: "a flex service: that `NODE`'s instance only, through the cluster (stop: stopped and held, the count refilled elsewhere; start: let it run there again)"})
	case "clear":
		fs = append(fs, &cli.StringFlag{Name: "node", Usage: "the `NODE` whose failed state to reset (default: every node)"})
	case "switch":
		fs = append(fs, &cli.StringFlag{Name: "to", Usage: "the destination `NODE`"})
	}
	switch name {
	case "start", "stop", "freeze", "thaw", "takeover", "giveback", "switch":
		fs = append(fs,
			&cli.BoolFlag{Name: "wait", Usage: "return when the target is reached"},
			&cli.DurationFlag{Name: "time", Value: 5 * time.Minute, Usage: "bound of --wait"})
	}
	if signedVerb(name) {
		fs = append(fs, keyFlag())
	}
	if dryRunVerb[name] {
		fs = append(fs, &cli.BoolFlag{Name: "dry-run", Usage: "do nothing: print what the simulation of the live cluster says would happen (svcmgr simulate)"})
	}
	return fs
}

// action is the command of a service action, with its flags and a usage
// line made of them.
func action(name string) *cli.Command {
	fs := actionFlags(name)
	usage := "svcmgr -s SELECTOR " + name
	for _, f := range fs {
		switch f.Names()[0] {
		case "local":
			if name == "start" {
				usage += " [--local [--force]]"
			} else {
				usage += " [--local]"
			}
		case "node":
			usage += " [--node NODE]"
		case "to":
			usage += " --to NODE"
		case "wait":
			usage += " [--wait [--time 5m]]"
		case "key":
			usage += " [--key KEYFILE]"
		}
	}
	return &cli.Command{Name: name, Usage: actionUsage[name], UsageText: usage, Description: globalsHelp, Flags: fs,
		Action: func(c *cli.Context) error { return serviceAction(c, name) }}
}

var actionUsage = map[string]string{
	"delete":   "stop the service everywhere and remove its config",
	"start":    "start (orchestrated; --local: this node's instance directly, refused when the service runs on another node unless --force; --node N: N's instance of a flex service)",
	"stop":     "stop and freeze (orchestrated; --local: this node's instance directly; --node N: N's instance of a flex service, through the cluster)",
	"freeze":   "stop orchestrating the service (--local: this node's instance)",
	"thaw":     "resume orchestration (--local: this node's instance)",
	"clear":    "reset a failed monitor state (--node NODE, default every node)",
	"abort":    "drop the current target state",
	"takeover": "move the service to this node (thaws it)",
	"giveback": "move the service back to its placement leader (thaws it)",
	"switch":   "move the service to --to NODE (thaws it)",
	"restart":  "stop then start this node's instance, through this node's daemon (refused when the service runs on another node)",
}

func serviceAction(c *cli.Context, action string) error {
	if c.Args().Len() > 0 {
		return cliutil.Usage("%s: unexpected argument %q", action, c.Args().First())
	}
	if action == "switch" && c.String("to") == "" {
		return cliutil.Usage("switch needs --to NODE")
	}
	if c.String("node") != "" && c.Bool("local") && (action == "start" || action == "stop") {
		return cliutil.Usage("%s: --node and --local exclude each other (--local is this node's instance)", action)
	}
	if action == "start" && c.Bool("force") && !c.Bool("local") {
		return cliutil.Usage("start: --force goes with --local")
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		return dryRun(c, action, names)
	}
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	var failures []string
	deadline := time.Now().Add(c.Duration("time"))
	for _, name := range names {
		req := api.ActionRequest{Name: name, Action: action, Local: c.Bool("local") || action == "restart", Node: c.String("node"), Wait: c.Bool("wait"),
			Force: action == "start" && c.Bool("force")}
		if action == "switch" {
			req.Node = c.String("to")
		}
		if req.Sig, err = signOrder(c, cl, action, req); err != nil {
			return err
		}
		actx, cancel := context.WithCancel(ctx(c))
		if req.Wait {
			// the daemon answers at --time with where the target stands;
			// the margin lets that answer arrive
			req.WaitTimeout = c.Duration("time")
			actx, cancel = context.WithTimeout(ctx(c), c.Duration("time")+5*time.Second)
		}
		res, err := cl.Action(actx, req)
		timedOut := actx.Err() == context.DeadlineExceeded
		cancel()
		if timedOut {
			failures = append(failures, fmt.Sprintf("%s: timed out after %s waiting for the target (it stays in place: see print status, or abort)", name, c.Duration("time")))
			continue
		}
		if err != nil {
			if cliutil.StatusOf(err) == cliutil.ExitUsage {
				return err
			}
			failures = append(failures, cliutil.Named(name, err))
			continue
		}
		result := res.Result
		// the targets of these actions thaw every instance: say so when
		// the service was frozen (the daemon's answer says what it was)
		if note := thawNote(action, req.Local, res.WasFrozen); note != "" {
			result += "; " + note
		}
		if asJSON {
			cliutil.PrintJSON(c.App.Writer, map[string]any{"service": name, "id": res.ID, "result": result})
		} else {
			fmt.Fprintf(c.App.Writer, "%s: %s\n", name, termtext.Clean(result))
		}
		if action == "start" && req.Wait && req.Node == "" && !req.Local && res.Flex {
			// a flex service's start thaws its instances: --wait goes on
			// until the flex rules brought its count up
			if err := waitFlexUp(c, cl, name, deadline, func(*dataset.FlexStatus) bool { return true }); err != nil {
				failures = append(failures, err.Error())
			}
		}
	}
	if len(failures) > 0 {
		return cliutil.Failed("%s", strings.Join(failures, "; "))
	}
	return nil
}

// thawNote is what an orchestrated action adds to its answer about a
// service whose frozen state ("frozen" | "mixed" | "thawed") was read
// before it: the started and placed targets thaw every instance.
func thawNote(action string, local bool, frozen string) string {
	switch action {
	case "start", "takeover", "giveback", "switch":
	default:
		return ""
	}
	switch {
	case local:
		return ""
	case frozen == "frozen":
		return "the service was frozen: thawed by this action"
	case frozen == "mixed":
		return "the service was partly frozen: thawed by this action"
	}
	return ""
}
