package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What a command printed (and peers' text) reaches the
// terminal with its control characters made visible in `svcmgr logs`;
// `--format json` keeps it exact (JSON escapes it).
func TestLogsPrintControlCharactersVisibly(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	n.startDaemon()
	conf := filepath.Join(t.TempDir(), "web.toml")
	writeFile(t, conf, "[DEFAULT]\norchestrate = \"no\"\n\n[app.main]\n"+
		"start = \"sh -c 'printf \\\"boot\\\\033[2J\\\\033]0;owned\\\\007done\\\\n\\\"; touch started'\"\n"+
		"stop = \"true\"\ncheck = \"sh -c 'test -f started'\"\n")
	n.must("svcmgr", "-s", "web", "create", "--config", conf)
	n.must("svcmgr", "-s", "web", "start", "--local")
	var out string
	waitFor(t, 20*time.Second, "the start's output in the log", func() bool {
		out = n.must("svcmgr", "-s", "web", "logs")
		return strings.Contains(out, "boot")
	})
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `boot\x1b[2J\x1b]0;owned\x07done`) {
		t.Fatalf("svcmgr logs: want the escapes made visible, got %q", out)
	}
	if js := n.must("svcmgr", "-s", "web", "logs", "--format", "json"); !strings.Contains(js, `boot\u001b[2J\u001b]0;owned\u0007done`) {
		t.Fatalf("svcmgr logs --format json: want the exact text, JSON-escaped, got %q", js)
	}
}
