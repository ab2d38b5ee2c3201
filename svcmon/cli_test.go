package svcmon

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"haven/cli/cliutil"
)

func TestHelpListsNoPhantomCommand(t *testing.T) {
	app := App()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	if code := cliutil.MainContext(context.Background(), app, []string{"svcmon", "--help"}); code != 0 {
		t.Fatalf("svcmon --help: exit %d, stderr %q", code, errb.String())
	}
	if strings.Contains(out.String(), "COMMANDS") || strings.Contains(out.String(), "help, h") {
		t.Fatalf("svcmon --help lists commands, svcmon has none:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "-  not a node of the service") || !strings.Contains(out.String(), "/  n/a") {
		t.Fatalf("svcmon --help has no legend of the marks:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "--watch") {
		t.Fatalf("svcmon --help lacks its flags:\n%s", out.String())
	}
}
