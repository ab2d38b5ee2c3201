package cliutil

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// cmdLevel is one level of the command path: the app, then each command.
type cmdLevel struct {
	flags map[string]bool // names (and aliases) defined at this level
	subs  []*cli.Command
}

func levelOf(flags []cli.Flag, subs []*cli.Command) cmdLevel {
	l := cmdLevel{flags: map[string]bool{}, subs: subs}
	for _, f := range flags {
		for _, n := range f.Names() {
			l.flags[n] = true
		}
	}
	return l
}

func (l cmdLevel) sub(word string) *cli.Command {
	for _, c := range l.subs {
		if c.HasName(word) {
			return c
		}
	}
	return nil
}

// takesValue maps every flag name of app (at any level) to whether it
// takes a value. The tools never give one name two kinds.
func takesValue(app *cli.App) map[string]bool {
	m := map[string]bool{}
	add := func(flags []cli.Flag) {
		for _, f := range flags {
			tv := true
			if d, ok := f.(interface{ TakesValue() bool }); ok {
				tv = d.TakesValue()
			}
			for _, n := range f.Names() {
				m[n] = tv
			}
		}
	}
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			add(c.Flags)
			walk(c.Subcommands)
		}
	}
	add(app.Flags)
	walk(app.Commands)
	return m
}

// Hoist reorders a command line so that each flag stands right after the
// command that defines it (the app's own flags after the program name),
// wherever the user wrote it: `svcmgr print status -s web --format json
// -r` works like `svcmgr -s web --format json print status -r`, and so
// does `svcmgr -r print status -s web`. The command path is the leading
// words that name commands; the first other word ends it. A flag that no
// command of the path defines (--help, or the flag of another command)
// is left after the path, where the last command refuses it. Everything
// after "--" is left alone.
func Hoist(args []string, app *cli.App) []string {
	if len(args) == 0 {
		return args
	}
	tv := takesValue(app)
	levels := []cmdLevel{levelOf(app.Flags, app.Commands)}
	words := []string{}  // the command path
	var flags [][]string // each flag with its value
	var rest []string    // positional words and unknown flags
	positional := false  // the path has ended
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") || name == "" {
			if !positional {
				if cmd := levels[len(levels)-1].sub(a); cmd != nil {
					words = append(words, a)
					levels = append(levels, levelOf(cmd.Flags, cmd.Subcommands))
					continue
				}
				positional = true
			}
			rest = append(rest, a)
			continue
		}
		group := []string{a}
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			name = name[:eq]
		} else if tv[name] && i+1 < len(args) {
			group = append(group, args[i+1])
			i++
		}
		flags = append(flags, group)
	}
	// each flag goes to the deepest level of the path that defines it
	placed := make([][]string, len(levels))
	var unknown []string
	for _, g := range flags {
		name := strings.TrimLeft(g[0], "-")
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			name = name[:eq]
		}
		at := -1
		for l := len(levels) - 1; l >= 0; l-- {
			if levels[l].flags[name] {
				at = l
				break
			}
		}
		if at < 0 {
			unknown = append(unknown, g...)
			continue
		}
		placed[at] = append(placed[at], g...)
	}
	out := []string{args[0]}
	out = append(out, placed[0]...)
	for l, w := range words {
		out = append(out, w)
		out = append(out, placed[l+1]...)
	}
	out = append(out, unknown...)
	return append(out, rest...)
}
