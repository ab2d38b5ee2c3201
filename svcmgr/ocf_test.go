package svcmgr

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/cli/cliutil"
)

// runAt runs svcmgr in-process with --root root.
func runAt(t *testing.T, root string, args ...string) (int, string, string) {
	t.Helper()
	app := App()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	code := cliutil.MainContext(context.Background(), app, append([]string{"svcmgr", "--root", root}, args...))
	return code, out.String(), errb.String()
}

// ocfTestRoot is a --root whose node.toml points ocf_root at the fake
// agent of package resource (resource.d/haven/fake).
func ocfTestRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	ocfRoot, err := filepath.Abs("../resource/testdata/ocf")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "etc", "node.toml"), []byte("[node]\nname = \"n1\"\nocf_root = \""+ocfRoot+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestValidateOCFParams: validate refuses an unknown parameter and a
// missing required one, naming the file, the line and the key, with the
// agent's own description (exit 2); an agent not installed here is a note.
func TestValidateOCFParams(t *testing.T) {
	root := ocfTestRoot(t)
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "web.toml")
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	bad := write("[DEFAULT]\nnodes = [\"n1\"]\n\n[ocf.f]\nagent = \"haven:fake\"\nparams = { colour = \"red\" }\n")
	code, _, errs := runAt(t, root, "validate", "--config", bad)
	for _, want := range []string{
		"web.toml:6: ocf#f.params.colour: ocf:haven:fake has no parameter \"colour\"; its parameters: dir (required) [Code directory], color [A color]",
		"web.toml:6: ocf#f.params: ocf:haven:fake needs parameter \"dir\": Code directory",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if code != cliutil.ExitUsage {
		t.Errorf("exit %d, want 2", code)
	}
	// a promotable-only agent: refused by its name, installed here or not
	code, _, errs = runAt(t, root, "validate", "--config", write("[ocf.db]\nagent = \"ocf:heartbeat:galera\"\n"))
	if code != cliutil.ExitUsage || !strings.Contains(errs, "web.toml:2: ocf#db.agent: agent ocf:heartbeat:galera runs only as a promotable clone") {
		t.Errorf("galera: exit %d, %q", code, errs)
	}
	good := write("[ocf.f]\nagent = \"haven:fake\"\nparams = { dir = \"/tmp\" }\n\n[ocf.m]\nagent = \"heartbeat:NotHere\"\n")
	code, out, errs := runAt(t, root, "validate", "--config", good)
	if code != 0 || !strings.Contains(out, "valid") || !strings.Contains(errs, "ocf#m: agent ocf:heartbeat:NotHere is not installed on this node") {
		t.Errorf("good config: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestDescribeOCFAgent: describe prints the parameters and actions of an
// agent; an agent not installed says so.
func TestDescribeOCFAgent(t *testing.T) {
	root := ocfTestRoot(t)
	code, out, errs := runAt(t, root, "describe", "ocf:haven:fake")
	for _, want := range []string{"ocf:haven:fake (version 0.1): Fake agent", "A fake agent & its tests.",
		"dir* (string): Code directory", "color (select: blue|red) [blue]: A color", "start          timeout=7s", "monitor        timeout=9s interval=10s depth=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("exit %d: %s", code, errs)
	}
	code, _, errs = runAt(t, root, "describe", "heartbeat:NotHere")
	if code != cliutil.ExitFailed || !strings.Contains(errs, "cannot run here") {
		t.Errorf("missing agent: exit %d, %q", code, errs)
	}
	code, out, _ = runAt(t, root, "describe", "--list")
	if code != 0 || strings.TrimSpace(out) != "ocf:haven:fake" {
		t.Errorf("--list: exit %d, %q", code, out)
	}
}
