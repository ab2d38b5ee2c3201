package svcmon

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
	"haven/cli/render"
	"haven/internal/version"
	"haven/svcmgr"
)

// App returns the svcmon command.
func App() *cli.App {
	return &cli.App{
		// --version prints the release, commit, Go and compat versions; the
		// shell completions call the tool with --generate-bash-completion
		Version:              version.String(),
		EnableBashCompletion: true,
		BashComplete:         cliutil.CompleteCommands,

		Name:            "svcmon",
		Usage:           "the Haven cluster at a glance",
		UsageText:       "svcmon [-s SELECTOR] [--watch [--interval 1s]] [--format json]",
		Description:     render.SvcmonLegend,
		HideHelpCommand: true,
		Flags: append(cliutil.GlobalFlags(),
			&cli.StringFlag{Name: "service", Aliases: []string{"s"}, Usage: "only the services matching `SELECTOR`"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh in place"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "--watch refresh period"},
			cliutil.ColorFlag(),
		),
		Action: show,
	}
}

func show(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	if c.Args().Len() > 0 {
		return cliutil.Usage("unexpected argument %q", c.Args().First())
	}
	cl := cliutil.Client(c)
	sel := c.String("service")
	w := c.App.Writer
	opt := render.SvcmonOptions{Color: cliutil.Color(c, w)}
	if sel != "" {
		opt.Selector = func(name string) bool { return len(svcmgr.Select(sel, []string{name})) == 1 }
	}
	once := func() (string, error) {
		st, err := cl.Status(c.Context)
		if err != nil {
			return "", err
		}
		if asJSON {
			if opt.Selector != nil {
				for n := range st.Services {
					if !opt.Selector(n) {
						delete(st.Services, n)
					}
				}
			}
			var b strings.Builder
			err := cliutil.PrintStatusJSON(&b, st)
			return b.String(), err
		}
		return render.Svcmon(st, opt), nil
	}
	if !c.Bool("watch") {
		out, err := once()
		fmt.Fprint(w, out)
		return err
	}
	// on a terminal each view replaces the last; elsewhere (a pipe, a
	// file) the views follow each other, without escapes: JSON objects
	// back to back, human views separated by a blank line
	tty := cliutil.IsTerminal(w)
	for i := 0; ; i++ {
		out, err := once()
		if err != nil {
			out = err.Error() + "\n"
		}
		switch {
		case tty:
			fmt.Fprint(w, "\033[H\033[2J"+out) // home, clear screen, then the view
		case i > 0 && !asJSON:
			fmt.Fprint(w, "\n"+out)
		default:
			fmt.Fprint(w, out)
		}
		select {
		case <-c.Context.Done():
			return nil
		case <-time.After(c.Duration("interval")):
		}
	}
}
