package cliutil

import (
	"errors"
	"reflect"
	"testing"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/config"
)

func hoistApp() *cli.App {
	return &cli.App{
		Name: "svcmgr",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format"},
			&cli.StringFlag{Name: "service", Aliases: []string{"s"}},
		},
		Commands: []*cli.Command{
			{Name: "start", Flags: []cli.Flag{&cli.BoolFlag{Name: "local"}, &cli.DurationFlag{Name: "time"}}},
			{Name: "switch", Flags: []cli.Flag{&cli.StringFlag{Name: "to"}}},
			{Name: "print", Subcommands: []*cli.Command{
				{Name: "status", Flags: []cli.Flag{&cli.BoolFlag{Name: "refresh", Aliases: []string{"r"}}}},
				{Name: "config"},
			}},
		},
	}
}

func TestHoistPutsEachFlagAfterItsCommand(t *testing.T) {
	cases := []struct{ in, want []string }{
		// app flags after the program name, command flags after the command
		{[]string{"svcmgr", "-s", "web", "print", "status", "--format", "json", "-r", "--", "--format"},
			[]string{"svcmgr", "-s", "web", "--format", "json", "print", "status", "-r", "--", "--format"}},
		// a command's flag written before the command
		{[]string{"svcmgr", "--local", "--time", "1s", "start", "-s", "web"},
			[]string{"svcmgr", "-s", "web", "start", "--local", "--time", "1s"}},
		{[]string{"svcmgr", "-r", "print", "status"},
			[]string{"svcmgr", "print", "status", "-r"}},
		// --format=json form; unknown flags stay after the path, in their
		// place among the other words (shell completion's flag stays last)
		{[]string{"svcmgr", "start", "--format=json", "--unknown", "x", "--help"},
			[]string{"svcmgr", "--format=json", "start", "--unknown", "x", "--help"}},
		{[]string{"svcmgr", "--help", "print", "-s", "web", "status", "x", "--generate-bash-completion"},
			[]string{"svcmgr", "-s", "web", "print", "status", "--help", "x", "--generate-bash-completion"}},
		// the flag of another command stays after the path, with its value
		{[]string{"svcmgr", "start", "--to", "n2", "-s", "web"},
			[]string{"svcmgr", "-s", "web", "start", "--to", "n2"}},
		// a value that names a command is a value; the first other word ends the path
		{[]string{"svcmgr", "-s", "print", "switch", "status", "--to", "n1"},
			[]string{"svcmgr", "-s", "print", "switch", "--to", "n1", "status"}},
		{[]string{"svcmgr"}, []string{"svcmgr"}},
	}
	for _, c := range cases {
		if got := Hoist(c.in, hoistApp()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Hoist(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestStatusOfMapsErrorsToContractExitCodes(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{Usage("bad"), 2},
		{&config.Error{File: "a.toml", Key: "DEFAULT.x", Msg: "unknown"}, 2},
		{&api.StatusError{Msg: "bad", Status: 2}, 2},
		{&api.StatusError{Msg: "failed", Status: 1}, 1},
	}
	for _, c := range cases {
		if got := StatusOf(c.err); got != c.want {
			t.Errorf("StatusOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestNamedPrefixesTheServiceOnce(t *testing.T) {
	cases := []struct{ name, msg, want string }{
		{"web", "web: target stopped aborted", "web: target stopped aborted"},
		{"slow", "slow: an action is already running (start)", "slow: an action is already running (start)"},
		{"web", "target placed@n2 (id x) cannot be reached: n2 down", "web: target placed@n2 (id x) cannot be reached: n2 down"},
		{"web", "webapp: x", "web: webapp: x"},
		{"web", "web", "web: web"},
		{"app1", "app1 runs on n1: starting it here would run a second copy", "app1 runs on n1: starting it here would run a second copy"},
		{"web", "webapp runs on n1", "web: webapp runs on n1"},
	}
	for _, c := range cases {
		if got := Named(c.name, errors.New(c.msg)); got != c.want {
			t.Errorf("Named(%q, %q) = %q, want %q", c.name, c.msg, got, c.want)
		}
	}
}
