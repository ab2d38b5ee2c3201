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
	words := []string{} // the command path
	// the other words, in their order: flags (with their value) and
	// positional words
	type token struct {
		words []string
		flag  string // the flag's name; "" for a positional word
	}
	var toks []token
	var tail []string   // "--" and what follows
	positional := false // the path has ended
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			tail = args[i:]
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
			toks = append(toks, token{words: []string{a}})
			continue
		}
		t := token{words: []string{a}, flag: name}
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			t.flag = name[:eq]
		} else if tv[name] && i+1 < len(args) {
			t.words = append(t.words, args[i+1])
			i++
		}
		toks = append(toks, t)
	}
	// each flag goes to the deepest level of the path that defines it;
	// the rest stays in its order after the path
	placed := make([][]string, len(levels))
	var rest []string
	for _, t := range toks {
		at := -1
		for l := len(levels) - 1; l >= 0 && t.flag != ""; l-- {
			if levels[l].flags[t.flag] {
				at = l
				break
			}
		}
		if at < 0 {
			rest = append(rest, t.words...)
			continue
		}
		placed[at] = append(placed[at], t.words...)
	}
	out := []string{args[0]}
	out = append(out, placed[0]...)
	for l, w := range words {
		out = append(out, w)
		out = append(out, placed[l+1]...)
	}
	out = append(out, rest...)
	return append(out, tail...)
}
