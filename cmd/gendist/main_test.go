package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
)

// The man pages name each tool and list its commands, with a synopsis of
// real usage lines, examples, and the sections urfave/cli does not write,
// and groff renders them without a warning.
func TestManPages(t *testing.T) {
	for _, app := range apps() {
		page, err := Man(app, DefaultDocDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{".TH " + app.Name + " 1", ".SH NAME\n" + app.Name + ` \- `, ".SH SYNOPSIS\n.EX\n" + app.Name + ` [\-\-root DIR]`, ".SH EXAMPLES", ".SH FILES", "/etc/haven/cluster.toml", ".SH EXIT STATUS", ".SH SEE ALSO"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s.1 lacks %q", app.Name, want)
			}
		}
		// urfave/cli's own synopsis spelled each global flag `[--root]=[value]`
		if strings.Contains(page, "]=[value]") {
			t.Errorf("%s.1 has a synopsis of bare [--flag]=[value]", app.Name)
		}
		for _, cmd := range app.Commands {
			if !cmd.Hidden && !strings.Contains(page, "\n.SH "+cmd.Name+"\n") {
				t.Errorf("%s.1 lacks the command %q", app.Name, cmd.Name)
			}
		}
		groff, err := exec.LookPath("groff")
		if err != nil {
			continue
		}
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
		cmd.Stdin = strings.NewReader(page)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("groff on %s.1: %v\n%s", app.Name, err, out)
		}
	}
}

// The bash completion asks the real binary: "nodemgr da<TAB>" completes to
// daemon, "nodemgr daemon st<TAB>" to start, status and stop, and a flag
// prefix to the global flag.
func TestBashCompletionAsksTheTool(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir, "haven/cmd/nodemgr")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := filepath.Join(dir, "nodemgr.bash")
	if err := os.WriteFile(script, []byte(Bash("nodemgr")), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ line, want string }{
		{"nodemgr da", "daemon"},
		{"nodemgr daemon st", "start status stop"},
		{"nodemgr --ro", "--root"},
		{"nodemgr --root /tmp/x print s", "status"},
	}
	for _, c := range cases {
		sh := `source "$1"; COMP_WORDS=($2); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}
_haven_nodemgr_complete; printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '`
		cmd := exec.Command(bash, "-c", sh, "bash", script, c.line)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("complete %q = %q, want %q", c.line, got, c.want)
		}
	}
}

// The zsh script at least parses (when zsh is installed).
func TestZshCompletionParses(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("no zsh on this machine: syntax not checked")
	}
	out, err := exec.Command(zsh, "-n", "-c", Zsh("svcmgr")).CombinedOutput()
	if err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
}

// The FILES section names the installed layout: the system paths and the
// doc directory make install was given (PREFIX=/usr/local puts the
// examples under /usr/local/share/doc/haven).
func TestManFilesFollowTheInstalledLayout(t *testing.T) {
	page, err := Man(apps()[0], "/usr/local/share/doc/haven")
	if err != nil {
		t.Fatal(err)
	}
	files := page[strings.Index(page, ".SH FILES"):strings.Index(page, ".SH ENVIRONMENT")]
	for _, want := range []string{`/usr/local/share/doc/haven/examples/`, `/etc/haven/node.toml`, `/var/lib/haven/`, `/run/haven/daemon.sock`, `/var/log/haven/`} {
		if !strings.Contains(strings.ReplaceAll(files, `\-`, "-"), want) {
			t.Errorf("FILES lacks %s:\n%s", want, files)
		}
	}
	if strings.Contains(files, "/usr/share/doc") {
		t.Errorf("FILES names /usr/share/doc for a /usr/local install:\n%s", files)
	}
}

// Every example of the man pages is a command line the tool accepts: run
// without a daemon it may fail (exit 1), never as bad usage (exit 2). The
// examples that would start something for real (systemctl, a daemon
// start) are left out.
func TestManExamplesAreAccepted(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("web.toml", []byte("[DEFAULT]\norchestrate = \"ha\"\n\n[app.main]\nstart = \"true\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*cli.App{}
	for _, app := range apps() {
		byName[app.Name] = app
	}
	for tool, exs := range examples {
		for _, ex := range exs {
			words := strings.Fields(ex[0])
			if words[0] != tool || strings.Contains(ex[0], "daemon start") {
				continue
			}
			app := byName[tool]
			var out, errb bytes.Buffer
			app.Writer, app.ErrWriter = &out, &errb
			argv := append([]string{tool, "--root", filepath.Join(dir, "root")}, words[1:]...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			code := cliutil.MainContext(ctx, app, argv)
			cancel()
			if code == cliutil.ExitUsage {
				t.Errorf("the example %q is refused as bad usage: %s", ex[0], strings.TrimSpace(errb.String()))
			}
		}
	}
}
