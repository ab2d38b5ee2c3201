package svcmgr

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/dataset"
	"haven/monitor"
)

// rolloutCommand is "svcmgr -s S rollout [--wait [--time D]]" and
// "svcmgr -s S rollout status": the running instances restarted on the
// config the local daemon holds, batch by batch, as cluster state
// (docs/behaviour.md 11). --wait polls the local daemon's status until the
// rollout is done (exit 0), paused or ended with failures (exit 1, naming
// the nodes and causes), or replaced by a newer one.
func rolloutCommand() *cli.Command {
	return &cli.Command{Name: "rollout", Usage: "restart the running instances on the current config, batch by batch (update_* keywords)",
		UsageText: "svcmgr -s SELECTOR rollout [--wait [--time 10m]] | rollout --dry-run | rollout status", Description: globalsHelp,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "simulate the rollout (svcmgr simulate --rollout): its batches, each turn's times, the instances up it keeps; nothing is sent"},
			&cli.BoolFlag{Name: "wait", Usage: "wait until the rollout is done, paused or failed"},
			&cli.DurationFlag{Name: "time", Value: 10 * time.Minute, Usage: "bound of --wait"},
		},
		Subcommands: []*cli.Command{{Name: "status", Usage: "which config each instance runs, and where the rollout stands",
			UsageText: "svcmgr -s SELECTOR rollout status", Action: rolloutStatus}},
		Action: rollout}
}

// rollbackCommand is "svcmgr -s S rollback [--wait [--time D]]": the
// previous config installed again as a new version and rolled out to the
// instances that run another one (docs/behaviour.md 11).
func rollbackCommand() *cli.Command {
	return &cli.Command{Name: "rollback", Usage: "install the previous config again and roll it out (a rollout marked as a rollback)",
		UsageText: "svcmgr -s SELECTOR rollback [--wait [--time 10m]]", Description: globalsHelp,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "wait", Usage: "wait until the rollback is done, or paused"},
			&cli.DurationFlag{Name: "time", Value: 10 * time.Minute, Usage: "bound of --wait"},
		},
		Action: func(c *cli.Context) error { return startRollout(c, "rollback") }}
}

func rollout(c *cli.Context) error { return startRollout(c, "rollout") }

// startRollout asks the local daemon for a rollout or a rollback of the
// selected services, and waits for them with --wait.
func startRollout(c *cli.Context, action string) error {
	if c.Args().Len() > 0 {
		return cliutil.Usage("%s: unexpected %q (svcmgr -s S %s [--wait])", action, c.Args().First(), action)
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	if action == "rollout" && c.Bool("dry-run") {
		if c.Bool("wait") {
			return cliutil.Usage("rollout --dry-run: simulates the rollout (without --wait)")
		}
		return rolloutDryRun(c, names)
	}
	return rolloutNames(c, cl, names, action)
}

// rolloutFlags are the flags of set, unset and edit config that roll the
// change out at once (--rollout [--wait [--time D]]).
func rolloutFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "rollout", Usage: "once the change is installed on every live node, roll it out (svcmgr rollout)"},
		&cli.BoolFlag{Name: "wait", Usage: "with --rollout: wait until the rollout is done, paused, failed or rolled back"},
		&cli.DurationFlag{Name: "time", Value: 10 * time.Minute, Usage: "bound of --wait"},
	}
}

// checkRolloutFlags refuses --wait or --time without --rollout.
func checkRolloutFlags(c *cli.Context) error {
	if !c.Bool("rollout") && (c.IsSet("wait") || c.IsSet("time")) {
		return cliutil.Usage("--wait and --time go with --rollout")
	}
	return nil
}

// rolloutAfterEdit is --rollout of set, unset and edit config.
func rolloutAfterEdit(c *cli.Context, cl *api.Client, names []string) error {
	if !c.Bool("rollout") {
		return nil
	}
	return rolloutNames(c, cl, names, "rollout")
}

// rolloutNames asks for the rollout or rollback of names and, with
// --wait, waits for each.
func rolloutNames(c *cli.Context, cl *api.Client, names []string, action string) error {
	ids := map[string]string{}
	for _, n := range names {
		resp, err := cl.Action(ctx(c), api.ActionRequest{Name: n, Action: action})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s: %s\n", n, resp.Result)
		ids[n] = resp.ID
	}
	if !c.Bool("wait") {
		return nil
	}
	deadline := time.Now().Add(c.Duration("time"))
	for _, n := range names {
		if ids[n] == "" {
			continue // nothing to do there
		}
		if err := waitRollout(c, cl, n, ids[n], deadline); err != nil {
			return err
		}
	}
	return nil
}

// waitRollout polls the local daemon's status until the rollout id of
// service n is done (nil), paused or ended with failures (exit 1, naming
// the nodes and causes), rolled back (exit 1 once the rollback ended,
// naming the failed nodes, their causes and the rollback), or replaced.
func waitRollout(c *cli.Context, cl *api.Client, n, id string, deadline time.Time) error {
	var failed *dataset.Rollout // the rollout id, once its rollback replaced it
	for {
		st, err := cl.Status(ctx(c))
		if err != nil {
			return err
		}
		r, marks := rolloutOf(st.Services[n])
		switch {
		case r == nil:
		case r.ID != id && r.Rollback && r.Undoes == id && failed == nil:
			failed = r
			fmt.Fprintf(c.App.Writer, "%s: %s\n", n, r.Cause)
			fmt.Fprintf(c.App.Writer, "%s: rolling back: rollback %s of config %s on %s\n", n, r.ID, dataset.ShortDigest(r.Digest), strings.Join(r.Nodes, ", "))
		case failed != nil && r.ID == failed.ID:
			p := monitor.RolloutState(r, marks)
			if p.Succeeded() {
				return cliutil.Failed("%s: %s: rolled back: every instance restarted on config %s (rollback %s)", n, r.Cause, dataset.ShortDigest(r.Digest), r.ID)
			}
			if p.Halted() || p.Done {
				return cliutil.Failed("%s: %s; rollback %s %s", n, r.Cause, r.ID, p)
			}
		case r.ID != id:
			return cliutil.Failed("%s: rollout %s replaced by rollout %s", n, id, r.ID)
		default:
			p := monitor.RolloutState(r, marks)
			if p.Succeeded() {
				fmt.Fprintf(c.App.Writer, "%s: %s %s done: %s on %s\n", n, kindOf(r), r.ID, dataset.ShortDigest(r.Digest), strings.Join(r.Nodes, ", "))
				return nil
			}
			if p.Paused || p.Done {
				return cliutil.Failed("%s: %s %s %s", n, kindOf(r), r.ID, p)
			}
		}
		if time.Now().After(deadline) {
			what := "no record"
			if r != nil {
				what = fmt.Sprintf("%s %s %s", kindOf(r), r.ID, monitor.RolloutState(r, marks))
			}
			return cliutil.Failed("%s: timed out after %s: %s (svcmgr -s %s rollout status)", n, c.Duration("time"), what, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kindOf says "rollback" or "rollout".
func kindOf(r *dataset.Rollout) string {
	if r.Rollback {
		return "rollback"
	}
	return "rollout"
}

// rolloutOf finds the newest rollout record among the instances of a
// service, and the marks of the instances of nodes that are not stale.
func rolloutOf(s dataset.ServiceStatus) (*dataset.Rollout, map[string]*dataset.RolloutMark) {
	var r *dataset.Rollout
	marks := map[string]*dataset.RolloutMark{}
	for n, i := range s.Instances {
		if i.Rollout != nil && (r == nil || i.Rollout.Version.Newer(r.Version)) {
			r = i.Rollout
		}
		if !i.Stale {
			marks[n] = i.RolloutMark
		}
	}
	return r, marks
}

func rolloutStatus(c *cli.Context) error {
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	st, err := cl.Status(ctx(c))
	if err != nil {
		return err
	}
	for _, n := range names {
		writeRolloutStatus(c.App.Writer, n, st.Services[n])
	}
	return nil
}

// writeRolloutStatus prints where the rollout of one service stands and,
// for each node, its instance, the config it runs and its turn.
func writeRolloutStatus(w io.Writer, name string, s dataset.ServiceStatus) {
	r, marks := rolloutOf(s)
	if r == nil {
		fmt.Fprintf(w, "%s: no rollout\n", name)
	} else {
		fmt.Fprintf(w, "%s: %s %s of config %s, %d at a time over %s: %s\n", name, kindOf(r), r.ID, dataset.ShortDigest(r.Digest),
			max(1, r.Parallelism), strings.Join(r.Nodes, " "), monitor.RolloutState(r, marks))
		if r.Rollback {
			fmt.Fprintf(w, "  rolled back: %s\n", r.Cause)
		}
	}
	nodes := slices.Sorted(func(yield func(string) bool) {
		for n := range s.Instances {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range nodes {
		i := s.Instances[n]
		cfg := "-"
		if i.RunDigest != "" {
			cfg = dataset.ShortDigest(i.RunDigest)
			if r != nil && i.RunDigest != r.Digest || i.OldConfig() {
				cfg += " (old)"
			}
		}
		turn := "-"
		if m := i.RolloutMark; m != nil && r != nil && m.ID == r.ID {
			turn = m.State
			if m.Cause != "" {
				turn += ": " + m.Cause
			}
		}
		fmt.Fprintf(w, "  %-12s %-8s runs %-20s turn %s\n", n, i.Avail, cfg, turn)
	}
}
