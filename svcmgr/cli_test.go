package svcmgr

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"haven/cli/cliutil"
)

// runCLI runs svcmgr in-process against a root without a daemon and
// returns its exit status, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	app := App()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	argv := append([]string{"svcmgr", "--root", t.TempDir()}, args...)
	code := cliutil.MainContext(context.Background(), app, argv)
	return code, out.String(), errb.String()
}

func TestNoActionIsBadUsage(t *testing.T) {
	for _, args := range [][]string{{"-s", "web"}, {}, {"-s", "web", "json"}, {"-s", "web", "print"}, {"-s", "web", "edit"}} {
		code, out, errs := runCLI(t, args...)
		if code != cliutil.ExitUsage {
			t.Errorf("svcmgr %q: exit %d, want 2 (stdout %q, stderr %q)", args, code, out, errs)
			continue
		}
		if !strings.Contains(errs, "svcmgr") || !strings.Contains(errs, "--help") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("svcmgr %q: want one usage line naming --help on stderr, got %q", args, errs)
		}
	}
}

func TestUnknownCommandIsBadUsage(t *testing.T) {
	code, _, errs := runCLI(t, "-s", "web", "frobnicate")
	if code != cliutil.ExitUsage || !strings.Contains(errs, `"frobnicate"`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the command", code, errs)
	}
	code, _, errs = runCLI(t, "-s", "web", "json", "stat")
	if code != cliutil.ExitUsage || !strings.Contains(errs, `"stat"`) {
		t.Fatalf("json stat: exit %d, stderr %q; want 2 naming the word", code, errs)
	}
}

// optionsOf returns the OPTIONS part of a help text.
func optionsOf(help string) string {
	_, opts, _ := strings.Cut(help, "OPTIONS:")
	return opts
}

func TestEachActionHelpListsItsFlags(t *testing.T) {
	cases := []struct {
		args      []string
		want, not []string
	}{
		{[]string{"set", "--help"}, []string{"--kw"}, []string{"--local", "--to", "--follow"}},
		{[]string{"get", "--help"}, []string{"--kw"}, []string{"--local"}},
		{[]string{"switch", "--help"}, []string{"--to", "--wait", "--time"}, []string{"--local", "--kw", "--node"}},
		{[]string{"start", "--help"}, []string{"--local", "--wait", "--time"}, []string{"--to", "--kw"}},
		{[]string{"clear", "--help"}, []string{"--node", "--local"}, []string{"--to", "--wait"}},
		{[]string{"takeover", "--help"}, []string{"--wait", "--time"}, []string{"--local", "--to"}},
		{[]string{"abort", "--help"}, nil, []string{"--local", "--wait", "--to", "--kw"}},
		{[]string{"logs", "--help"}, []string{"--follow", "--lines"}, []string{"--local", "--kw"}},
		{[]string{"create", "--help"}, []string{"--config", "--replace"}, []string{"--local", "--kw"}},
		{[]string{"validate", "--help"}, []string{"--config"}, []string{"--local"}},
		{[]string{"print", "status", "--help"}, []string{"--refresh"}, []string{"--local", "--kw"}},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, c.args...)
		if code != 0 {
			t.Errorf("svcmgr %q: exit %d, stderr %q", c.args, code, errs)
			continue
		}
		opts := optionsOf(out)
		for _, w := range c.want {
			if !strings.Contains(opts, w) {
				t.Errorf("svcmgr %q: options lack %s:\n%s", c.args, w, out)
			}
		}
		for _, n := range c.not {
			if strings.Contains(opts, n) {
				t.Errorf("svcmgr %q: options list %s, which it does not take:\n%s", c.args, n, out)
			}
		}
	}
}

func TestFlagOfAnotherActionIsBadUsage(t *testing.T) {
	code, _, errs := runCLI(t, "-s", "web", "switch", "--to", "n2", "--local")
	if code != cliutil.ExitUsage || !strings.Contains(errs, "--local") || !strings.Contains(errs, "switch --help") {
		t.Fatalf("switch --local: exit %d, stderr %q; want 2 naming --local and switch --help", code, errs)
	}
}

func TestFlagsStandAnywhere(t *testing.T) {
	// no daemon: the command gets past the parsing and fails to connect (1)
	for _, args := range [][]string{
		{"--local", "-s", "web", "start"},
		{"start", "-s", "web", "--wait", "--time", "1s", "--local"},
		{"-r", "print", "status", "-s", "web"},
		{"print", "--format", "json", "status", "--refresh", "-s", "web"},
		{"--kw", "DEFAULT.priority=3", "set", "-s", "web"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != cliutil.ExitFailed || !strings.Contains(errs, "not running") {
			t.Errorf("svcmgr %q: exit %d, stderr %q; want 1, the daemon not running", args, code, errs)
		}
	}
}

func TestThawNoteOfTheActionsThatThaw(t *testing.T) {
	cases := []struct {
		action string
		local  bool
		frozen string
		want   string
	}{
		{"switch", false, "frozen", "the service was frozen: thawed by this action"},
		{"takeover", false, "frozen", "the service was frozen: thawed by this action"},
		{"giveback", false, "mixed", "the service was partly frozen: thawed by this action"},
		{"start", false, "frozen", "the service was frozen: thawed by this action"},
		{"start", true, "frozen", ""}, // start --local leaves the freeze
		{"switch", false, "thawed", ""},
		{"stop", false, "frozen", ""},
		{"freeze", false, "frozen", ""},
		{"switch", false, "", ""}, // not known
	}
	for _, c := range cases {
		if got := thawNote(c.action, c.local, c.frozen); got != c.want {
			t.Errorf("thawNote(%s, local %v, %q) = %q, want %q", c.action, c.local, c.frozen, got, c.want)
		}
	}
}

// The shell completion offers the actions, not urfave/cli's `help h`.
func TestCompletionOffersActionsOnly(t *testing.T) {
	// urfave/cli reads the word being completed from os.Args
	defer func(a []string) { os.Args = a }(os.Args)
	os.Args = []string{"svcmgr", "--generate-bash-completion"}
	code, out, errs := runCLI(t, "--generate-bash-completion")
	words := strings.Fields(out)
	if code != 0 || len(words) < 10 || !strings.Contains(" "+out, "\nswitch\n") {
		t.Fatalf("completion: exit %d, out %q, err %q", code, out, errs)
	}
	for _, w := range words {
		if w == "help" || w == "h" {
			t.Fatalf("completion offers %q: %q", w, out)
		}
	}
}
