package config

import (
	"strconv"
	"strings"
)

// lineIndex finds the line of a table header or of a key in a TOML text.
// It is a light scanner, not a parser: it only has to be right on files
// the TOML decoder accepted, and it answers 0 (unknown) when in doubt.
type lineIndex struct {
	headers map[string]int // table path -> line of its header
	keys    map[string]int // table path + key -> line of the key
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

func indexLines(text string) *lineIndex {
	x := &lineIndex{headers: map[string]int{}, keys: map[string]int{}}
	var cur []string
	inML := "" // the closing delimiter of an open multi-line string
	for n, line := range strings.Split(text, "\n") {
		lineNo := n + 1
		if inML != "" {
			if strings.Contains(line, inML) {
				inML = ""
			}
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == '#':
			continue
		case strings.HasPrefix(t, "[[") || t[0] == '[':
			inner := strings.TrimLeft(t, "[")
			path, _, ok := parseDottedKey(inner, ']')
			if !ok {
				continue
			}
			cur = path
			// [a.b.c] also opens a and a.b, implicitly
			for i := 1; i <= len(cur); i++ {
				if _, seen := x.headers[pathKey(cur[:i])]; !seen {
					x.headers[pathKey(cur[:i])] = lineNo
				}
			}
		default:
			pieces, rest, ok := parseDottedKey(t, '=')
			if !ok {
				continue
			}
			full := append(append([]string{}, cur...), pieces...)
			k := pathKey(full)
			if _, seen := x.keys[k]; !seen {
				x.keys[k] = lineNo
			}
			// dotted keys open implicit tables
			for i := 1; i < len(pieces); i++ {
				p := pathKey(append(append([]string{}, cur...), pieces[:i]...))
				if _, seen := x.headers[p]; !seen {
					x.headers[p] = lineNo
				}
			}
			rest = strings.TrimSpace(rest)
			for _, d := range []string{`"""`, `'''`} {
				if strings.HasPrefix(rest, d) && !strings.Contains(rest[3:], d) {
					inML = d
				}
			}
		}
	}
	return x
}

// parseDottedKey reads a dotted key (bare or quoted pieces) at the start of
// s up to the byte end, and returns its pieces and what follows end.
func parseDottedKey(s string, end byte) ([]string, string, bool) {
	var pieces []string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return nil, "", false
		}
		switch s[i] {
		case '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, "", false
			}
			p, err := strconv.Unquote(s[i : j+1])
			if err != nil {
				p = s[i+1 : j]
			}
			pieces = append(pieces, p)
			i = j + 1
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, "", false
			}
			pieces = append(pieces, s[i+1:i+1+j])
			i += j + 2
		default:
			j := i
			for j < len(s) && isBareKeyChar(s[j]) {
				j++
			}
			if j == i {
				return nil, "", false
			}
			pieces = append(pieces, s[i:j])
			i = j
		}
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return nil, "", false
		}
		switch s[i] {
		case '.':
			i++
		case end:
			return pieces, s[i+1:], true
		default:
			return nil, "", false
		}
	}
}

func isBareKeyChar(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// find returns the line of key in the table path, else of the nearest
// enclosing key or header, else 0. key "" asks for the header itself.
func (x *lineIndex) find(path []string, key string) int {
	if key != "" {
		if l, ok := x.keys[pathKey(append(append([]string{}, path...), key))]; ok {
			return l
		}
	}
	for p := path; len(p) > 0; p = p[:len(p)-1] {
		if l, ok := x.headers[pathKey(p)]; ok {
			return l
		}
		if l, ok := x.keys[pathKey(p)]; ok {
			return l
		}
	}
	return 0
}
