// Package cmdline splits the command lines of app resources into words,
// like a POSIX shell does for quoting only. The app driver runs the words
// without a shell; the config validation refuses a line that does not split.
package cmdline

import (
	"errors"
	"strings"
)

// Split splits a command line into words the way a POSIX shell does
// for quoting only: blanks separate words; single quotes keep everything
// literally; double quotes keep everything but a backslash followed by
// one of \ " $ ` or a newline; outside quotes a backslash keeps the next
// character literally (a backslash-newline pair is removed). There is no
// expansion of any kind ($VAR, globs, ~) and no operator (|, ;, >, &): use
// `sh -c '...'` for those. An unbalanced quote or a trailing backslash is
// an error.
func Split(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word has begun (possibly empty, as in '')
	)
	end := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	r := []rune(s)
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			end()
		case c == '\\':
			if i+1 >= len(r) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if r[i] != '\n' {
				cur.WriteRune(r[i])
				in = true
			}
		case c == '\'':
			j := i + 1
			for j < len(r) && r[j] != '\'' {
				j++
			}
			if j >= len(r) {
				return nil, errors.New("unbalanced single quote")
			}
			cur.WriteString(string(r[i+1 : j]))
			in = true
			i = j
		case c == '"':
			j := i + 1
			closed := false
			for ; j < len(r); j++ {
				if r[j] == '"' {
					closed = true
					break
				}
				if r[j] == '\\' && j+1 < len(r) && strings.ContainsRune("\\\"$`\n", r[j+1]) {
					j++
					if r[j] != '\n' {
						cur.WriteRune(r[j])
					}
					continue
				}
				cur.WriteRune(r[j])
			}
			if !closed {
				return nil, errors.New("unbalanced double quote")
			}
			in = true
			i = j
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	end()
	return words, nil
}
