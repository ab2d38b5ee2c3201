// Package cliutil holds what the three command-line tools share: the global
// flags (accepted anywhere on the line), the mapping of errors to exit
// statuses (0 ok, 1 failed, 2 bad usage or bad config), output formats and
// the client of the local API.
package cliutil

import (
	"bytes"
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
	"haven/internal/paths"
	"haven/internal/termtext"
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

// PrintJSON writes v indented, with <, > and & as they are (not as
// \u003c...: the output is read by people and programs, not HTML pages).
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// neverSet are the times of the status object written as the zero time
// for "never" by the heartbeat's format (whose digests every release of a
// cluster must compute alike, so its JSON keeps them): the status object
// printed leaves them out, as it does every other time never set.
var neverSet = [][]byte{
	[]byte(`,"last_failure_at":"0001-01-01T00:00:00Z"`),
	[]byte(`,"state_since":"0001-01-01T00:00:00Z"`),
}

// PrintStatusJSON is PrintJSON for the status object or a part of it
// (docs/contract.md section 5): the times never set are left out. The
// patterns are removed from the compact form, where a key is always
// preceded by a comma or a brace and a quote inside a string is escaped,
// so no string's text can match them.
func PrintStatusJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	compact := b.Bytes()
	for _, p := range neverSet {
		compact = bytes.ReplaceAll(compact, p, nil)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

// Context returns a context cancelled on SIGINT/SIGTERM.
func Context() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// MainContext runs app with the contract's exit statuses and returns the
// status; ctx ends the command (e.g. on SIGINT). Flags may stand anywhere
// on the line (see Hoist). A line without a command, with an unknown one
// or a command that needs a subcommand, is bad usage (2) with one line
// saying what was expected.
func MainContext(ctx context.Context, app *cli.App, args []string) int {
	notFound := false
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return usageError(app.Name, "", err)
	}
	app.CommandNotFound = func(c *cli.Context, cmd string) {
		fmt.Fprintf(app.ErrWriter, "%s: unknown command %q (see %s --help)\n", app.Name, cmd, app.Name)
		notFound = true
	}
	app.ExitErrHandler = func(*cli.Context, error) {}
	if app.ErrWriter == nil {
		app.ErrWriter = os.Stderr
	}
	if app.Action == nil {
		app.Action = needCommand(app.Name, "", app.Commands)
	}
	for _, cmd := range app.Commands {
		setUsageHandlers(app.Name, cmd)
	}
	err := app.RunContext(ctx, Hoist(args, app))
	if notFound {
		return ExitUsage
	}
	if err == nil {
		return ExitOK
	}
	// an error may quote a peer's text: control characters made visible
	fmt.Fprintf(app.ErrWriter, "%s: %s\n", app.Name, termtext.CleanText(err.Error()))
	return StatusOf(err)
}

// needCommand is the action of a line that stops before its command (or
// subcommand): bad usage, naming what may follow.
func needCommand(path, cmd string, cmds []*cli.Command) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.Args().Present() {
			if cmd == "" {
				return Usage("unknown command %q (see %s --help)", c.Args().First(), path)
			}
			return Usage("%s: unknown subcommand %q (see %s --help)", cmd, c.Args().First(), path)
		}
		var names []string
		for _, cmd := range cmds {
			if !cmd.Hidden {
				names = append(names, cmd.Name)
			}
		}
		if cmd == "" {
			return Usage("no command given: %s (see %s --help)", strings.Join(names, " | "), path)
		}
		return Usage("%s needs a subcommand: %s (see %s --help)", cmd, strings.Join(names, " | "), path)
	}
}

func setUsageHandlers(parent string, cmd *cli.Command) {
	path := parent + " " + cmd.Name
	cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error { return usageError(path, cmd.Name, err) }
	if len(cmd.Subcommands) > 0 && cmd.Action == nil {
		cmd.Action = needCommand(path, cmd.Name, cmd.Subcommands)
	}
	for _, sub := range cmd.Subcommands {
		setUsageHandlers(path, sub)
	}
}

// usageError rewords the flag package's parse errors: a flag that the
// command does not take is named with the command and where to look.
func usageError(path, cmd string, err error) error {
	const undefined = "flag provided but not defined: "
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		name = "--" + strings.TrimLeft(name, "-")
		if len(name) == 3 {
			name = name[1:] // a one-letter flag: -x
		}
		if cmd == "" {
			return Usage("%s is not a flag of %s (see %s --help)", name, path, path)
		}
		return Usage("%s: %s is not a flag of %s (see %s --help)", cmd, name, cmd, path)
	}
	return Usage("%v", err)
}

// PrintJSONLine writes v as one line of JSON (streams: one object a
// line), unescaped as PrintJSON.
func PrintJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Named is err as said about service name: "name: err", unless the
// daemon's answer names the service already (most of its answers about a
// service do), so that no line reads "web: web: ..." or "web: web runs
// on n1".
func Named(name string, err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, name+": ") || strings.HasPrefix(msg, name+" ") {
		return msg // "web: ...", or a sentence about it: "web runs on n1: ..."
	}
	return name + ": " + msg
}

// CompleteCommands is the tools' shell completion of a command name: every
// visible command and its aliases, but not urfave/cli's own `help` (`h`),
// which `--help` covers. A flag being typed (`--ro`) completes as urfave/cli
// does.
func CompleteCommands(c *cli.Context) {
	if n := len(os.Args); n > 2 && strings.HasPrefix(os.Args[n-2], "-") {
		cli.DefaultAppComplete(c)
		return
	}
	zsh := os.Getenv("_CLI_ZSH_AUTOCOMPLETE_HACK") == "1"
	for _, cmd := range c.App.VisibleCommands() {
		if cmd.Name == "help" {
			continue
		}
		for _, name := range cmd.Names() {
			if zsh {
				fmt.Fprintf(c.App.Writer, "%s:%s\n", name, cmd.Usage)
				continue
			}
			fmt.Fprintln(c.App.Writer, name)
		}
	}
}
