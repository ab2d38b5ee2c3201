// Package termtext makes text safe to print on a terminal: Clean and
// CleanText. It imports nothing of Haven, so that every tool and view
// uses the one copy (render for its views, cliutil for errors, the
// commands for logs, events and values).
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Clean returns s with every character that a terminal may act on made
// visible as a Go escape: the C0 controls (ESC, CR, BEL, backspace,
// newline, tab...), DEL, the C1 controls (U+0080 to U+009F: CSI is one),
// the bidirectional overrides and isolates (U+202A to U+202E, U+2066 to
// U+2069), and bytes that are not UTF-8. Peers' free text (a frozen
// reason, a label, a message, a log line) goes through it before any
// human output: a peer could otherwise move the cursor, rewrite lines,
// set the window title or hide text on the operator's terminal. JSON
// output is never cleaned (it escapes controls itself and stays exact).
func Clean(s string) string { return clean(s, false) }

// CleanText is Clean for multi-line text (a log, a config file): it keeps
// newlines and tabs.
func CleanText(s string) string { return clean(s, true) }

func clean(s string, text bool) string {
	if !NeedsClean(s, text) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, text) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, text):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// NeedsClean says whether Clean (text false) or CleanText (text true)
// would change s.
func NeedsClean(s string, text bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r, text) {
			return true
		}
		i += size
	}
	return false
}

func unsafeRune(r rune, text bool) bool {
	switch {
	case text && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
