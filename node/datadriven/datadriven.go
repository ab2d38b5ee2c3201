// Package datadriven runs the test files of the cores in the manner of
// etcd raft's testdata: each file is a list of commands, each followed by
// the output it must produce, written inline. A file reads:
//
//	# a comment (lines starting with # and blank lines between commands)
//	name word key=value "a quoted word"
//	an input line
//	another input line
//	----
//	the expected output
//	on as many lines as needed
//
// A command is one line of words (split by cmdline.Split: quotes keep
// blanks); the lines up to "----" are its input; the expected output runs
// from "----" to the next blank line or the end of the file (an output
// has no blank line). The test runs the commands in order, and compares
// each output with the expected one; with update, it writes the outputs
// it got in place of the expected ones instead (review the diff).
package datadriven

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/internal/cmdline"
)

// Cmd is one command of a test file.
type Cmd struct {
	// Pos is "file:line" of the command line.
	Pos string
	// Name is its first word, Args the others.
	Name string
	Args []string
	// Input are the lines between the command and "----".
	Input []string
	// Expected is the output written in the file, lines joined by "\n".
	Expected string

	line int // of "----", to rewrite the output
	end  int // the line after the output
}

// Arg returns the value of key=value among the arguments, or "", true
// for a bare key; false when absent.
func (c *Cmd) Arg(key string) (string, bool) {
	for _, a := range c.Args {
		if a == key {
			return "", true
		}
		if v, ok := strings.CutPrefix(a, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// Errorf returns an error naming the command's place in its file.
func (c *Cmd) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", c.Pos, c.Name, fmt.Sprintf(format, args...))
}

// Parse reads the commands of a test file's text; name prefixes their
// Pos. A malformed file is an error naming the line.
func Parse(name, text string) ([]*Cmd, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var cmds []*Cmd
	for i := 0; i < len(lines); {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			i++
			continue
		}
		words, err := cmdline.Split(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
		}
		c := &Cmd{Pos: fmt.Sprintf("%s:%d", name, i+1), Name: words[0], Args: words[1:]}
		i++
		for ; i < len(lines) && lines[i] != "----"; i++ {
			if strings.TrimSpace(lines[i]) == "" {
				return nil, fmt.Errorf("%s:%d: %s: a blank line before ----", name, i+1, c.Name)
			}
			c.Input = append(c.Input, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s: %s: no ---- after the command", c.Pos, c.Name)
		}
		c.line = i
		i++
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		c.Expected, c.end = strings.Join(out, "\n"), i
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// RunFile runs the commands of the file at path in order through run,
// and compares each output with the expected one (an error is an output
// too: "error: ..."). With update, the file is rewritten with the outputs.
func RunFile(t *testing.T, path string, update bool, run func(*Cmd) (string, error)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Parse(path, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	outs := make([]string, len(cmds))
	for k, c := range cmds {
		out, err := run(c)
		if err != nil {
			out = "error: " + err.Error()
		}
		out = strings.TrimRight(out, "\n")
		if out == "" {
			out = "ok"
		}
		if strings.Contains(out, "\n\n") {
			t.Fatalf("%s: %s: the output has a blank line, which ends it in the file:\n%s", c.Pos, c.Name, out)
		}
		outs[k] = out
		if !update && out != c.Expected {
			t.Errorf("%s: %s: output differs (go test -run %s -update, then review the diff)\ngot:\n%s\nwant:\n%s",
				c.Pos, c.Name, t.Name(), out, c.Expected)
		}
	}
	if update {
		if err := os.WriteFile(path, []byte(rewrite(string(raw), cmds, outs)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// RunDir runs every file that pattern matches (a filepath.Glob, such as
// "testdata/persistence/*.txt") as a subtest named after the file, each
// with the run that start returns for it (a fresh machine per file).
func RunDir(t *testing.T, pattern string, update bool, start func(t *testing.T) func(*Cmd) (string, error)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no test file matches %s (%v)", pattern, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			RunFile(t, f, update, start(t))
		})
	}
}

// rewrite is text with the outputs of cmds in place of the expected ones.
func rewrite(text string, cmds []*Cmd, outs []string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var b strings.Builder
	from := 0
	for k, c := range cmds {
		for _, l := range lines[from : c.line+1] {
			b.WriteString(l + "\n")
		}
		b.WriteString(outs[k] + "\n")
		from = c.end
	}
	for _, l := range lines[from:] {
		b.WriteString(l + "\n")
	}
	return b.String()
}
