package constraints

import (
	"fmt"
	"strconv"
	"strings"
)

// openSVCBody returns the inside of a "$( ... )" expression when code is one.
func openSVCBody(code string) (string, bool) {
	if !strings.HasPrefix(code, "$(") || !strings.HasSuffix(code, ")") {
		return "", false
	}
	return code[2 : len(code)-1], true
}

// translate turns the body of an OpenSVC $(...) expression into the expr
// form:
//
//	"{nodename}"            -> nodename
//	"{node.env}"            -> node.env   (also load15, mem_avail_pct, labels)
//	"{node.X}"              -> node.labels["X"]
//	"pre-{nodename}"        -> ("pre-" + nodename)
//	in (DEV, "TST", 3)      -> in ["DEV", "TST", "3"]  (bare words are strings)
//	not A == B              -> not (A == B)  (Python precedence)
//	True / False            -> true / false
//
// and, or, ==, != are the same in both forms.
func translate(src string) (string, error) {
	var b strings.Builder
	// nots holds the paren depth of each "not (" still open: in Python, not
	// applies to a whole comparison, in expr to the next operand only.
	var nots []int
	depth := 0
	closeNots := func(d int) {
		for len(nots) > 0 && nots[len(nots)-1] >= d {
			b.WriteByte(')')
			nots = nots[:len(nots)-1]
		}
	}
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"' || c == '\'':
			lit, n, err := readString(src[i:])
			if err != nil {
				return "", err
			}
			s, err := stringExpr(lit)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			i += n
		case c == '{':
			end := strings.IndexByte(src[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated reference at %q", src[i:])
			}
			s, err := refExpr(src[i+1 : i+end])
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			i += end + 1
		case isWordChar(c):
			j := i
			for j < len(src) && isWordChar(src[j]) {
				j++
			}
			word := src[i:j]
			i = j
			switch word {
			case "True":
				b.WriteString("true")
			case "False":
				b.WriteString("false")
			case "not":
				b.WriteString("not (")
				nots = append(nots, depth)
			case "and", "or":
				closeNots(depth)
				b.WriteString(word)
			case "in":
				b.WriteString("in")
				k := i
				for k < len(src) && (src[k] == ' ' || src[k] == '\t') {
					k++
				}
				if k < len(src) && src[k] == '(' {
					list, n, err := listExpr(src[k:])
					if err != nil {
						return "", err
					}
					b.WriteByte(' ')
					b.WriteString(list)
					i = k + n
				}
			default:
				b.WriteString(word)
			}
		case c == '(':
			depth++
			b.WriteByte(c)
			i++
		case c == ')':
			closeNots(depth)
			depth--
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	closeNots(0)
	return b.String(), nil
}

func isWordChar(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// readString reads a quoted string at the start of s and returns its
// content (escapes resolved) and the number of bytes consumed.
func readString(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case q:
			return b.String(), i + 1, nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("unterminated string %s", s)
}

// stringExpr translates the content of a quoted string: a string made of
// one reference becomes that reference; references inside other text become
// a concatenation.
func stringExpr(lit string) (string, error) {
	var parts []string
	rest := lit
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			break
		}
		ref, err := refExpr(rest[open+1 : open+end])
		if err != nil {
			return "", err
		}
		if rest[:open] != "" {
			parts = append(parts, strconv.Quote(rest[:open]))
		}
		if len(parts) == 0 && open+end+1 == len(rest) {
			return ref, nil // the whole string is one reference
		}
		parts = append(parts, "string("+ref+")")
		rest = rest[open+end+1:]
	}
	if len(parts) == 0 {
		return strconv.Quote(lit), nil
	}
	if rest != "" {
		parts = append(parts, strconv.Quote(rest))
	}
	return "(" + strings.Join(parts, " + ") + ")", nil
}

// refExpr translates the name inside {...}.
func refExpr(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch name {
	case "nodename", "node.name", "node.nodename":
		return "nodename", nil
	case "node.env", "node.load15", "node.mem_avail_pct", "node.labels":
		return name, nil
	}
	if label, ok := strings.CutPrefix(name, "node.labels."); ok && label != "" {
		return "node.labels[" + strconv.Quote(label) + "]", nil
	}
	if label, ok := strings.CutPrefix(name, "node."); ok && label != "" {
		return "node.labels[" + strconv.Quote(label) + "]", nil
	}
	return "", fmt.Errorf("unknown reference {%s}: use {nodename} or {node.KEY}", name)
}

// listExpr translates a parenthesized list "(A, "b", 3)" at the start of s
// into an expr array and returns the number of bytes consumed.
func listExpr(s string) (string, int, error) {
	var elems []string
	var cur strings.Builder
	flush := func() error {
		e := strings.TrimSpace(cur.String())
		cur.Reset()
		if e == "" {
			return nil
		}
		switch {
		case e[0] == '{' && e[len(e)-1] == '}':
			r, err := refExpr(e[1 : len(e)-1])
			if err != nil {
				return err
			}
			elems = append(elems, r)
		default:
			elems = append(elems, strconv.Quote(e))
		}
		return nil
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			lit, n, err := readString(s[i:])
			if err != nil {
				return "", 0, err
			}
			se, err := stringExpr(lit)
			if err != nil {
				return "", 0, err
			}
			if strings.TrimSpace(cur.String()) != "" {
				return "", 0, fmt.Errorf("unexpected string in list %s", s)
			}
			cur.Reset()
			elems = append(elems, se)
			i += n - 1
		case ',':
			if err := flush(); err != nil {
				return "", 0, err
			}
		case ')':
			if err := flush(); err != nil {
				return "", 0, err
			}
			return "[" + strings.Join(elems, ", ") + "]", i + 1, nil
		case '(':
			return "", 0, fmt.Errorf("nested parenthesis in list %s", s)
		default:
			cur.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated list %s", s)
}
