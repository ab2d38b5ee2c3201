package config

import (
	"fmt"
	"slices"
	"strings"
)

// keyRef is a parsed keyword path of a service: DEFAULT.orchestrate,
// app#web.restart, app.web.restart (a bare "orchestrate" is DEFAULT's).
type keyRef struct {
	kind, name, key string
	kw              *Keyword
}

func (k keyRef) path() []string {
	if k.name == "" {
		return []string{k.kind}
	}
	return []string{k.kind, k.name}
}

func (k keyRef) String() string {
	if k.name == "" {
		return k.kind + "." + k.key
	}
	return k.kind + "#" + k.name + "." + k.key
}

func parseKeyRef(file, s string) (keyRef, error) {
	var k keyRef
	bad := func(msg string) (keyRef, error) {
		return keyRef{}, &Error{File: file, Key: s, Msg: msg}
	}
	if t, rest, ok := strings.Cut(s, "#"); ok {
		name, key, ok := strings.Cut(rest, ".")
		if !ok {
			return bad("want TYPE#NAME.KEY")
		}
		k = keyRef{kind: t, name: name, key: key}
	} else {
		p := strings.Split(s, ".")
		switch len(p) {
		case 1:
			k = keyRef{kind: SectionDefault, key: p[0]}
		case 2:
			k = keyRef{kind: p[0], key: p[1]}
		case 3:
			k = keyRef{kind: p[0], name: p[1], key: p[2]}
		default:
			return bad("want DEFAULT.KEY, TYPE#NAME.KEY or TYPE.NAME.KEY")
		}
	}
	switch {
	case k.kind == SectionDefault && k.name == "":
	case isResourceKind(k.kind) && k.name != "":
		if !sectionNameRE.MatchString(k.name) {
			return bad(fmt.Sprintf("invalid resource name %q", k.name))
		}
	default:
		return bad("want DEFAULT.KEY, TYPE#NAME.KEY or TYPE.NAME.KEY with TYPE app or ip")
	}
	kw, ok := Lookup(k.kind, k.key)
	if !ok {
		return keyRef{}, &Error{File: file, Key: k.String(), Msg: fmt.Sprintf("unknown keyword (known: %s)", keywordNames(k.kind))}
	}
	k.kw = kw
	return k, nil
}

// GetKeyword returns the effective value of a service keyword (its default
// when unset). Lists print as ["a", "b"], maps as {"k": "v"}, durations as
// Go durations ("30s"), and references are not expanded. Errors name file.
func (dec Decoder) GetKeyword(file string, data []byte, key string) (string, error) {
	k, err := parseKeyRef(file, key)
	if err != nil {
		return "", err
	}
	d, err := dec.decodeDoc(file, data, serviceSchema)
	if err != nil {
		return "", err
	}
	sec := d.find(k.kind, k.name)
	if sec == nil {
		if k.name != "" {
			return "", &Error{File: file, Key: k.String(), Msg: fmt.Sprintf("no section [%s.%s]", k.kind, k.name)}
		}
		sec = d.ensure(k.kind)
	}
	return formatValue(sec.value(k.key), true), nil
}

// SetKeyword sets one keyword of a service config and returns the new
// content. kw is K=V, K+=V (add to a list the elements not in it yet) or
// K-=V (remove from a list). V is written as on the command line: lists
// as ["a", "b"] or blank separated words. The result must be a valid
// service config, else the error is returned. The file is re-encoded in
// the canonical order: comments are lost.
func (dec Decoder) SetKeyword(file string, data []byte, kw string) ([]byte, error) {
	return dec.setKeyword(file, data, kw, false)
}

// AddKeyword is SetKeyword that may also add the resource it names (svcmgr
// set --add): SetKeyword refuses a resource the config does not have, so
// that a typo in its name never adds one.
func (dec Decoder) AddKeyword(file string, data []byte, kw string) ([]byte, error) {
	return dec.setKeyword(file, data, kw, true)
}

func (dec Decoder) setKeyword(file string, data []byte, kw string, add bool) ([]byte, error) {
	i := strings.IndexByte(kw, '=')
	if i <= 0 {
		return nil, &Error{File: file, Key: kw, Msg: "want K=V, K+=V or K-=V"}
	}
	key, val, op := kw[:i], kw[i+1:], byte('=')
	if c := key[len(key)-1]; c == '+' || c == '-' {
		key, op = key[:len(key)-1], c
	}
	k, err := parseKeyRef(file, strings.TrimSpace(key))
	if err != nil {
		return nil, err
	}
	d, err := dec.decodeDoc(file, data, serviceSchema)
	if err != nil {
		return nil, err
	}
	raw, err := dec.fromText(k.kw, val)
	if err == nil {
		_, err = fromTOML(k.kw, raw)
	}
	if err != nil {
		return nil, &Error{File: file, Line: d.lines.find(k.path(), k.key), Key: k.String(), Msg: err.Error()}
	}
	if !add && k.name != "" && d.table(k.path(), false) == nil {
		return nil, &Error{File: file, Key: k.String(), Msg: fmt.Sprintf("no resource %s#%s in this config (a typo? `svcmgr set --add --kw %s=...` adds one)", k.kind, k.name, k.String())}
	}
	sec := d.table(k.path(), true)
	if op != '=' {
		if k.kw.Type != TypeList {
			return nil, &Error{File: file, Key: k.String(), Msg: fmt.Sprintf("%c= applies to lists only", op)}
		}
		cur := []string{}
		if sec[k.key] != nil {
			v, err := fromTOML(k.kw, sec[k.key])
			if err != nil {
				return nil, err
			}
			cur = v.([]string)
		} else {
			cur = append(cur, defaultValue(k.kw).([]string)...)
		}
		elems, _ := fromTOML(k.kw, raw)
		raw = editList(cur, elems.([]string), op == '+')
	}
	sec[k.key] = raw
	return d.reencode(file)
}

func editList(cur, elems []string, add bool) []any {
	out := []any{}
	for _, e := range cur {
		if add || !slices.Contains(elems, e) {
			out = append(out, e)
		}
	}
	if add {
		for _, e := range elems {
			if !slices.Contains(cur, e) {
				out = append(out, e)
				cur = append(cur, e)
			}
		}
	}
	return out
}

// UnsetKeyword removes one keyword from a service config (so that its
// default applies) and returns the new content; data is returned as is
// when the keyword is not set. The result must be valid.
func (dec Decoder) UnsetKeyword(file string, data []byte, key string) ([]byte, error) {
	key = strings.TrimSpace(key)
	if t, name, ok := strings.Cut(key, "#"); ok && !strings.Contains(name, ".") {
		return dec.removeResource(file, data, t, name)
	}
	k, err := parseKeyRef(file, key)
	if err != nil {
		return nil, err
	}
	d, err := dec.decodeDoc(file, data, serviceSchema)
	if err != nil {
		return nil, err
	}
	sec := d.table(k.path(), false)
	if sec == nil {
		return data, nil
	}
	if _, ok := sec[k.key]; !ok {
		return data, nil
	}
	delete(sec, k.key)
	return d.reencode(file)
}

// removeResource removes the resource TYPE#NAME (unset --kw app#web): an
// error when the config has none of that name.
func (dec Decoder) removeResource(file string, data []byte, kind, name string) ([]byte, error) {
	id := kind + "#" + name
	if !isResourceKind(kind) || !sectionNameRE.MatchString(name) {
		return nil, &Error{File: file, Key: id, Msg: "want TYPE#NAME (a resource) or a keyword"}
	}
	d, err := dec.decodeDoc(file, data, serviceSchema)
	if err != nil {
		return nil, err
	}
	kinds, _ := d.tree[kind].(map[string]any)
	if _, ok := kinds[name]; !ok {
		return nil, &Error{File: file, Key: id, Msg: "no resource " + id + " in this config"}
	}
	delete(kinds, name)
	if len(kinds) == 0 {
		delete(d.tree, kind)
	}
	return d.reencode(file)
}

// table returns the TOML table at path in the decoded tree, created when
// create is set.
func (d *document) table(path []string, create bool) map[string]any {
	m := d.tree
	for _, p := range path {
		sub, ok := m[p].(map[string]any)
		if !ok {
			if !create {
				return nil
			}
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	return m
}

// reencode writes the tree back and validates the result.
func (d *document) reencode(file string) ([]byte, error) {
	out, err := encodeService(d.tree)
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	name := ServiceNameFromFile(file)
	if ValidServiceName(name) != nil {
		name = "svc"
	}
	if _, err := d.dec.ParseService(file, name, out); err != nil {
		// Locate the error in the file as it was, not as re-encoded.
		if e, ok := err.(*Error); ok {
			e.Line = 0
			if e.Key != "" {
				e.Line = d.lines.find(errorKeyPath(e.Key))
			}
		}
		return nil, err
	}
	return out, nil
}

// errorKeyPath splits an Error.Key into its table path and keyword.
func errorKeyPath(key string) ([]string, string) {
	if t, rest, ok := strings.Cut(key, "#"); ok {
		name, kw, _ := strings.Cut(rest, ".")
		return []string{t, name}, kw
	}
	t, kw, _ := strings.Cut(key, ".")
	return []string{t}, kw
}
