package cliutil

import (
	"io"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// EnvNoColor disables colours when set and not empty (https://no-color.org).
const EnvNoColor = "NO_COLOR"

// IsTerminal reports whether w is a terminal: only there do the tools
// write ANSI escapes (colours, clearing the screen).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// ColorFlag is the --color flag of the tools that colour their output.
func ColorFlag() cli.Flag {
	return &cli.BoolFlag{Name: "color", Usage: "colour the output (--color=false: never)", DefaultText: "on a terminal, unless $NO_COLOR is set"}
}

// Color reports whether to colour what is written to w: as --color says
// when given (a per-command choice overrides NO_COLOR), else only on a
// terminal and when NO_COLOR is unset or empty.
func Color(c *cli.Context, w io.Writer) bool {
	return WantColor(c.IsSet("color"), c.Bool("color"), os.Getenv(EnvNoColor), IsTerminal(w))
}

// WantColor is the rule of Color.
func WantColor(flagSet, flag bool, noColor string, terminal bool) bool {
	if flagSet {
		return flag
	}
	return terminal && noColor == ""
}
