package svcmon

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"haven/cliutil"
	"haven/render"
	"haven/svcmgr"
	"haven/version"
)

// App returns the svcmon command.
func App() *cli.App {
	return &cli.App{
		// --version prints the release, commit, Go and compat versions; the
		// shell completions call the tool with --generate-bash-completion
		Version:              version.String(),
		EnableBashCompletion: true,

		Name:  "svcmon",
		Usage: "the Haven cluster at a glance",
		Flags: append(cliutil.GlobalFlags(),
			&cli.StringFlag{Name: "service", Aliases: []string{"s"}, Usage: "only the services matching `SELECTOR`"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh in place"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "--watch refresh period"},
			&cli.BoolFlag{Name: "color", Usage: "colour the marks"},
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
	opt := render.SvcmonOptions{Color: c.Bool("color")}
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
			return "", cliutil.PrintJSON(c.App.Writer, st)
		}
		return render.Svcmon(st, opt), nil
	}
	if !c.Bool("watch") {
		out, err := once()
		fmt.Fprint(c.App.Writer, out)
		return err
	}
	for {
		out, err := once()
		if err != nil {
			out = err.Error() + "\n"
		}
		// home, clear screen, then the view
		fmt.Fprint(c.App.Writer, "\033[H\033[2J"+out)
		select {
		case <-c.Context.Done():
			return nil
		case <-time.After(c.Duration("interval")):
		}
	}
}
