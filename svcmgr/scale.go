package svcmgr

import (
	"fmt"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/dataset"
)

// scaleCommand is "svcmgr -s S scale --to N [--wait [--time D]]": the
// flex_target of a flex service set through its config, as "set --kw
// flex_target=N" does (checked as a create is, written on every node of
// the service, durable before the answer); --wait then polls the local
// daemon's status until N instances are up. "--to all" sets the global
// mode; its --wait ends once every node where an instance belongs runs one.
func scaleCommand() *cli.Command {
	return &cli.Command{Name: "scale", Usage: "a flex service's number of instances: flex_target through its config (--wait: until that many are up)",
		UsageText: "svcmgr -s SELECTOR scale --to N|all [--wait [--time 5m]]", Description: globalsHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "the number of instances `N` (at least 1), or all: the global mode, one on every candidate node"},
			&cli.BoolFlag{Name: "wait", Usage: "wait until N instances are up, as this node sees them"},
			&cli.DurationFlag{Name: "time", Value: 5 * time.Minute, Usage: "bound of --wait"},
			keyFlag(),
		},
		Action: scale}
}

func scale(c *cli.Context) error {
	to, err := strconv.Atoi(c.String("to"))
	global := c.String("to") == "all"
	if global {
		to, err = 0, nil
	}
	if err != nil || to < 1 && !global {
		return cliutil.Usage("scale needs --to N, a number of instances of at least 1, or all (got %q)", c.String("to"))
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	k, err := adminKey(c)
	if err != nil {
		return err
	}
	for _, n := range names {
		kws := []string{"flex_target=" + c.String("to")}
		if k != nil {
			err = editSigned(c, cl, k, n, "set", kws)
		} else {
			_, err = cl.Keyword(ctx(c), api.KeywordRequest{Name: n, Op: "set", Kws: kws})
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s: flex_target %s\n", n, c.String("to"))
	}
	if !c.Bool("wait") {
		return nil
	}
	deadline := time.Now().Add(c.Duration("time"))
	for _, n := range names {
		if err := waitFlexUp(c, cl, n, deadline, func(f *dataset.FlexStatus) bool {
			return f.Global == global && (global || f.Target == to)
		}); err != nil {
			return err
		}
	}
	return nil
}

// waitFlexUp polls the local daemon's status until the flex service n has
// its target up (and ok says the status shows the change asked for), or
// deadline, when it fails with why the count is short (explain).
func waitFlexUp(c *cli.Context, cl *api.Client, n string, deadline time.Time, ok func(*dataset.FlexStatus) bool) error {
	for {
		st, err := cl.Status(ctx(c))
		if err != nil {
			return err
		}
		if f := st.Services[n].Flex; f != nil && ok(f) && f.Up == f.Target {
			fmt.Fprintf(c.App.Writer, "%s: %d instances up\n", n, f.Up)
			return nil
		}
		if time.Now().After(deadline) {
			why := ""
			if e, err := cl.Explain(ctx(c), n, false); err == nil && e.Flex != nil && e.Flex.Short != "" {
				why = ": " + e.Flex.Short
			}
			return cliutil.Failed("%s: timed out after %s waiting for its instances up%s (svcmgr -s %s explain)", n, c.Duration("time"), why, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
