package termtext

import "testing"

func TestCleanMakesControlsVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é ü ✓":         "plain text, é ü ✓",
		"\x1b[2J\x1b]0;owned\x07":   `\x1b[2J\x1b]0;owned\x07`,
		"a\rb\bc\td\ne\x7f":         `a\x0db\x08c\x09d\x0ae\x7f`,
		"csi \u009b31m and \xff":    `csi \x9b31m and \xff`,
		"rtl \u202eevil\u2069 done": `rtl \u202eevil\u2069 done`,
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := CleanText("line 1\tx\nline 2 \x1b[1A\n"), "line 1\tx\nline 2 \\x1b[1A\n"; got != want {
		t.Errorf("CleanText: %q, want %q", got, want)
	}
}
