// Package cliutil holds what the three command-line tools share: the global
// flags (accepted anywhere on the line), the mapping of errors to exit
// statuses (0 ok, 1 failed, 2 bad usage or bad config), output formats and
// the client of the local API.
package cliutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/config"
	"haven/paths"
)

// Exit statuses of the contract.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// Error is an error with an exit status.
type Error struct {
	Status int
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Usage returns a bad-usage error (exit 2).
func Usage(format string, a ...any) error {
	return &Error{ExitUsage, fmt.Errorf(format, a...)}
}

// Failed returns a failure (exit 1).
func Failed(format string, a ...any) error {
	return &Error{ExitFailed, fmt.Errorf(format, a...)}
}

// StatusOf maps an error to the exit status of the contract.
func StatusOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		return ExitUsage
	}
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return ExitFailed
}

// GlobalFlags are accepted by every binary, anywhere on the command line.
func GlobalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "root", Usage: "run with every path below `DIR` (also $HAVEN_ROOT)", EnvVars: []string{paths.EnvRoot}},
		&cli.StringFlag{Name: "format", Value: "human", Usage: "output format: human | json"},
	}
}

// Hoist moves the known flags (and their values) before the first
// positional word so that `svcmgr print status --format json` works like
// `svcmgr --format json print status`. Flags after "--" are left alone.
func Hoist(args []string, flags []cli.Flag) []string {
	takes := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takes[n] = !isBool
		}
	}
	if len(args) == 0 {
		return args
	}
	var front, rest []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") || name == "" {
			rest = append(rest, a)
			continue
		}
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			name = name[:eq]
			if _, ok := takes[name]; ok {
				front = append(front, a)
				continue
			}
			rest = append(rest, a)
			continue
		}
		tv, ok := takes[name]
		if !ok {
			rest = append(rest, a)
			continue
		}
		front = append(front, a)
		if tv && i+1 < len(args) {
			front = append(front, args[i+1])
			i++
		}
	}
	out := []string{args[0]}
	out = append(out, front...)
	return append(out, rest...)
}

// Paths returns the layout selected by --root / $HAVEN_ROOT.
func Paths(c *cli.Context) paths.Paths { return paths.FromEnv(c.String("root")) }

// Client returns a client of the local daemon.
func Client(c *cli.Context) *api.Client { return api.NewClient(Paths(c).Socket) }

// JSON reports whether --format json was asked; it refuses other formats.
func JSON(c *cli.Context) (bool, error) {
	switch c.String("format") {
	case "human", "":
		return false, nil
	case "json":
		return true, nil
	}
	return false, Usage("--format: unknown format %q (human | json)", c.String("format"))
}

// PrintJSON writes v indented.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Context returns a context cancelled on SIGINT/SIGTERM.
func Context() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// MainContext runs app with the contract's exit statuses and returns the
// status; ctx ends the command (e.g. on SIGINT).
func MainContext(ctx context.Context, app *cli.App, args []string) int {
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return Usage("%v", err)
	}
	app.CommandNotFound = func(c *cli.Context, cmd string) {
		fmt.Fprintf(app.ErrWriter, "%s: unknown command %q (see --help)\n", app.Name, cmd)
		os.Exit(ExitUsage)
	}
	app.ExitErrHandler = func(*cli.Context, error) {}
	if app.ErrWriter == nil {
		app.ErrWriter = os.Stderr
	}
	for _, cmd := range app.Commands {
		setUsageHandlers(cmd)
	}
	err := app.RunContext(ctx, Hoist(args, app.Flags))
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(app.ErrWriter, "%s: %v\n", app.Name, err)
	return StatusOf(err)
}

func setUsageHandlers(cmd *cli.Command) {
	cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error { return Usage("%v", err) }
	for _, sub := range cmd.Subcommands {
		setUsageHandlers(sub)
	}
}
