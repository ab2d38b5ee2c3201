package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// encodeService writes a decoded service tree in the canonical order:
// [DEFAULT], then the resources (ip first, then app, by name); keys in the
// keyword table order. Comments and the original layout are not kept.
func encodeService(tree map[string]any) ([]byte, error) {
	var b strings.Builder
	tops := slices.Sorted(maps.Keys(tree))
	rank := func(k string) int {
		if k == SectionDefault {
			return -1
		}
		return resourceTypeRank(k)
	}
	sort.SliceStable(tops, func(i, j int) bool { return rank(tops[i]) < rank(tops[j]) })
	for _, top := range tops {
		m, ok := tree[top].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a section", top)
		}
		if top == SectionDefault {
			if err := writeTable(&b, []string{top}, top, m); err != nil {
				return nil, err
			}
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			sm, ok := m[name].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s.%s: not a section", top, name)
			}
			if err := writeTable(&b, []string{top, name}, top, sm); err != nil {
				return nil, err
			}
		}
	}
	return []byte(b.String()), nil
}

func writeTable(b *strings.Builder, path []string, kind string, m map[string]any) error {
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	hdr := make([]string, len(path))
	for i, p := range path {
		hdr[i] = encodeKey(p)
	}
	b.WriteString("[" + strings.Join(hdr, ".") + "]\n")
	var keys []string
	for _, kw := range SectionKeywords(kind) {
		if _, ok := m[kw.Key]; ok {
			keys = append(keys, kw.Key)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		v, err := encodeValue(m[k])
		if err != nil {
			return fmt.Errorf("%s.%s: %v", strings.Join(path, "."), k, err)
		}
		b.WriteString(encodeKey(k) + " = " + v + "\n")
	}
	return nil
}

func encodeKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		if !isBareKeyChar(k[i]) {
			return encodeString(k)
		}
	}
	return k
}

// encodeValue writes a TOML value as decoded by BurntSushi/toml.
func encodeValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return "", errors.New("invalid UTF-8 in string")
		}
		return encodeString(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return encodeFloat(x), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := encodeValue(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			s, err := encodeValue(x[k])
			if err != nil {
				return "", err
			}
			parts = append(parts, encodeKey(k)+" = "+s)
		}
		if len(parts) == 0 {
			return "{}", nil
		}
		return "{ " + strings.Join(parts, ", ") + " }", nil
	}
	return "", fmt.Errorf("cannot write a value of type %T", v)
}

// encodeString writes a TOML string: a literal string ('...') when that
// needs no escape and the text holds a double quote, else a basic string.
func encodeString(s string) string {
	if strings.Contains(s, `"`) && !strings.Contains(s, "'") && literalOK(s) {
		return "'" + s + "'"
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func literalOK(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// encodeFloat writes a TOML float: always with a fraction or an exponent
// (2.0, not 2, which would read back as an integer), nan and inf as TOML
// spells them.
func encodeFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	t := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(t, ".e") {
		t += ".0"
	}
	return t
}
