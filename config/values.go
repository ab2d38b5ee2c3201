package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Go types of the keyword values, by Type: string, int, bool,
// time.Duration, []string, map[string]string, string (enum).

// fromTOML converts a decoded TOML value into the Go value of kw.
func fromTOML(kw *Keyword, raw any) (any, error) {
	switch kw.Type {
	case TypeString, TypeEnum:
		s, ok := raw.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", tomlTypeName(raw))
		}
		if kw.Type == TypeEnum && !slices.Contains(kw.Allowed, s) {
			return nil, fmt.Errorf("invalid value %q: want one of %s", s, quoteList(kw.Allowed))
		}
		return s, nil
	case TypeInt:
		i, ok := raw.(int64)
		if !ok {
			return nil, fmt.Errorf("want an integer, got %s", tomlTypeName(raw))
		}
		if i > math.MaxInt32 || i < math.MinInt32 {
			return nil, fmt.Errorf("integer %d out of range", i)
		}
		return int(i), nil
	case TypeCount:
		if str, ok := raw.(string); ok {
			if strings.TrimSpace(str) == "all" {
				return CountAll, nil
			}
			return nil, fmt.Errorf("invalid value %q: want an integer or \"all\"", str)
		}
		i, ok := raw.(int64)
		if !ok {
			return nil, fmt.Errorf("want an integer or \"all\", got %s", tomlTypeName(raw))
		}
		if i > math.MaxInt32 || i < 0 {
			return nil, fmt.Errorf("integer %d out of range", i)
		}
		return int(i), nil
	case TypeBool:
		b, ok := raw.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, got %s", tomlTypeName(raw))
		}
		return b, nil
	case TypeDuration:
		return toDuration(raw)
	case TypeCPU:
		return cpuFromTOML(raw)
	case TypeSize:
		return sizeFromTOML(raw)
	case TypeList:
		switch v := raw.(type) {
		case string:
			return strings.Fields(v), nil
		case []any:
			out := make([]string, 0, len(v))
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("want a list of strings, got an element of type %s", tomlTypeName(e))
				}
				out = append(out, s)
			}
			return out, nil
		}
		return nil, fmt.Errorf("want a list of strings, got %s", tomlTypeName(raw))
	case TypeMap:
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want a table of strings, got %s", tomlTypeName(raw))
		}
		out := make(map[string]string, len(m))
		for k, e := range m {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("want a table of strings, got %s for %q", tomlTypeName(e), k)
			}
			out[k] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported keyword type %v", kw.Type)
}

const maxDuration = 100 * 365 * 24 * time.Hour

func toDuration(raw any) (time.Duration, error) {
	var d time.Duration
	switch v := raw.(type) {
	case int64:
		if v < 0 || v > int64(maxDuration/time.Second) {
			return 0, fmt.Errorf("duration %d out of range", v)
		}
		d = time.Duration(v) * time.Second
	case string:
		s := strings.TrimSpace(v)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return toDuration(n)
		}
		var err error
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: want a Go duration like \"30s\" or an integer of seconds", v)
		}
	default:
		return 0, fmt.Errorf("want a duration (\"30s\" or an integer of seconds), got %s", tomlTypeName(raw))
	}
	if d < 0 || d > maxDuration {
		return 0, fmt.Errorf("duration %v out of range", d)
	}
	return d, nil
}

// fromText converts a command line value ("svcmgr set --kw K=V", the
// defaults of the table) into the TOML value to store in the file.
// Lists: `["a", "b"]` or blank separated words. Maps: `{ k = "v" }` or
// blank separated k=v words.
func (dec Decoder) fromText(kw *Keyword, text string) (any, error) {
	switch kw.Type {
	case TypeString, TypeEnum:
		return text, nil
	case TypeInt:
		i, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid integer %q", text)
		}
		return i, nil
	case TypeCount:
		t := strings.TrimSpace(text)
		if t == "all" {
			return t, nil
		}
		i, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid value %q: want an integer or \"all\"", text)
		}
		return i, nil
	case TypeBool:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("invalid boolean %q: want true or false", text)
		}
		return b, nil
	case TypeDuration:
		if i, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err == nil {
			return i, nil
		}
		return text, nil
	case TypeCPU, TypeSize:
		// an integer stays one (cores, bytes); anything else is kept as
		// a string ("0.5", "500m", "512MiB"), checked by fromTOML
		t := strings.TrimSpace(text)
		if i, err := strconv.ParseInt(t, 10, 64); err == nil {
			return i, nil
		}
		return t, nil
	case TypeList:
		t := strings.TrimSpace(text)
		if strings.HasPrefix(t, "[") {
			return dec.decodeInline(t)
		}
		out := []any{}
		for _, f := range strings.Fields(t) {
			out = append(out, f)
		}
		return out, nil
	case TypeMap:
		t := strings.TrimSpace(text)
		if strings.HasPrefix(t, "{") {
			return dec.decodeInline(t)
		}
		out := map[string]any{}
		for _, f := range strings.Fields(t) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("invalid map element %q: want k=v", f)
			}
			out[k] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported keyword type %v", kw.Type)
}

// notYet refuses a value other than the default of a keyword that nothing
// acts on yet (Keyword.NotYet).
func notYet(kw *Keyword, v any) error {
	if kw.NotYet == "" {
		return nil
	}
	if !kw.Required && fmt.Sprint(v) == fmt.Sprint(defaultValue(kw)) {
		return nil
	}
	if kw.Required {
		return fmt.Errorf("not implemented yet (%s): leave the [%s.NAME] sections out for now", kw.NotYet, kw.Section)
	}
	return fmt.Errorf("not implemented yet (%s): only the default %s is accepted for now", kw.NotYet, strconv.Quote(kw.Default))
}

// defaultValue returns the Go value of kw's default (written without
// inline TOML, so that no decoder is needed).
func defaultValue(kw *Keyword) any {
	raw, err := Decoder(nil).fromText(kw, kw.Default)
	if err == nil {
		var v any
		if v, err = fromTOML(kw, raw); err == nil {
			return v
		}
	}
	if kw.Type == TypeEnum && kw.Default == "" {
		return ""
	}
	panic(fmt.Sprintf("config: bad default of %s.%s: %v", kw.Section, kw.Key, err))
}

// formatValue prints a Go value of kw: lists and maps in the JSON-ish form
// `["a", "b"]`, `{"k": "v"}` when quoted, else blank separated (references).
func formatValue(v any, quoted bool) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case time.Duration:
		return x.String()
	case []string:
		if !quoted {
			return strings.Join(x, " ")
		}
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case map[string]string:
		keys := slices.Sorted(maps.Keys(x))
		var parts []string
		for _, k := range keys {
			if quoted {
				parts = append(parts, strconv.Quote(k)+": "+strconv.Quote(x[k]))
			} else {
				parts = append(parts, k+"="+x[k])
			}
		}
		if quoted {
			return "{" + strings.Join(parts, ", ") + "}"
		}
		return strings.Join(parts, " ")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func tomlTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	return "a date"
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
