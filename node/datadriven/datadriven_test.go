package datadriven

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `# a comment
echo a "b c" k=v
line one
line two
----
stale

# an output of several lines
count 3
----
1
2
3
`

func TestParseAndRewrite(t *testing.T) {
	cmds, err := Parse("f.txt", sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 {
		t.Fatalf("got %d commands, want 2", len(cmds))
	}
	c := cmds[0]
	if c.Pos != "f.txt:2" || c.Name != "echo" || strings.Join(c.Args, "|") != "a|b c|k=v" ||
		strings.Join(c.Input, "|") != "line one|line two" || c.Expected != "stale" {
		t.Fatalf("first command: %+v", c)
	}
	if v, ok := c.Arg("k"); !ok || v != "v" {
		t.Fatalf("Arg(k) = %q, %v", v, ok)
	}
	if _, ok := c.Arg("a"); !ok {
		t.Fatal("a bare key not found")
	}
	if cmds[1].Expected != "1\n2\n3" {
		t.Fatalf("second output %q", cmds[1].Expected)
	}
	got := rewrite(sample, cmds, []string{"fresh\nlines", "1\n2\n3"})
	want := strings.Replace(sample, "----\nstale\n", "----\nfresh\nlines\n", 1)
	if got != want {
		t.Fatalf("rewrite:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for text, want := range map[string]string{
		"echo a\n":                 "f.txt:1: echo: no ----",
		"echo \"a\n----\nx\n":      "f.txt:1: ",
		"echo a\nin\n\nmore\n----": "f.txt:3: echo: a blank line before ----",
	} {
		if _, err := Parse("f.txt", text); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want an error starting with %q", text, err, want)
		}
	}
}

// RunFile compares, and with update rewrites the file with the outputs.
func TestRunFileUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(c *Cmd) (string, error) {
		if c.Name == "echo" {
			return strings.Join(append(c.Args, c.Input...), "\n"), nil
		}
		return "1\n2\n3", nil
	}
	RunFile(t, path, true, run)
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), "----\na\nb c\nk=v\nline one\nline two\n\n# an output") {
		t.Fatalf("not rewritten:\n%s", raw)
	}
	RunFile(t, path, false, run) // passes now
}
