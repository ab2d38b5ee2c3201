package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// refRE matches a reference: {nodename}, {name}, {var}, {rid},
// {DEFAULT.KEY}, {TYPE.NAME.KEY}, {TYPE#NAME.KEY}. Braces around anything
// else ({print $1}) are left alone, and so is ${...} (a shell variable).
var refRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*(?:[.#][A-Za-z0-9_-]+)*)\}`)

// maxRefDepth bounds the expansion of references to references.
const maxRefDepth = 10

// refErr is an expansion error at one keyword (kind, name, kw).
type refErr struct {
	kind, name, kw string
	key            string // "DEFAULT.nodes", "app#web.start"
	msg            string
}

func (e *refErr) Error() string { return e.key + ": " + e.msg }

// ForNode returns a copy of s whose string values have their references
// expanded for the node nodename; varDir is the service's private dir
// ({var}). The constraints keep their source text.
func (s *ServiceConfig) ForNode(nodename, varDir string) (*ServiceConfig, error) {
	c, err := s.expand(nodename, varDir, true)
	if err != nil {
		var re *refErr
		if errors.As(err, &re) {
			e := &Error{File: s.File, Key: re.key, Msg: re.msg}
			path := []string{re.kind}
			if re.name != "" {
				path = append(path, re.name)
			}
			e.Line = indexLines(string(s.Raw)).find(path, re.kw)
			return nil, e
		}
		return nil, &Error{File: s.File, Msg: err.Error()}
	}
	return c, nil
}

// refCtx is the section a value is expanded in.
type refCtx struct {
	kind, name string
}

func (c refCtx) key(kw string) string {
	if c.name == "" {
		return c.kind + "." + kw
	}
	return c.kind + "#" + c.name + "." + kw
}

type expander struct {
	svc      *ServiceConfig
	nodename string
	varDir   string
	done     map[string]string // expanded keyword values, by reference
	active   map[string]bool   // references being expanded (loop detection)
}

// maxExpanded bounds the length of one expanded value.
const maxExpanded = 64 << 10

func (s *ServiceConfig) expand(nodename, varDir string, final bool) (*ServiceConfig, error) {
	x := &expander{svc: s, nodename: nodename, varDir: varDir, done: map[string]string{}, active: map[string]bool{}}
	c := *s
	c.Resources = append([]ResourceConfig(nil), s.Resources...)
	if err := x.expandStruct(&c, s, refCtx{kind: SectionDefault}); err != nil {
		return nil, err
	}
	for i := range c.Resources {
		r := &c.Resources[i]
		ctx := refCtx{kind: r.Type, name: r.Name}
		if err := x.expandStruct(r, &s.Resources[i], ctx); err != nil {
			return nil, err
		}
		if final && r.Type == SectionIP {
			if fe := checkIP(*r); fe != nil {
				return nil, &refErr{kind: ctx.kind, name: ctx.name, kw: fe.key, key: ctx.key(fe.key), msg: fe.msg + " (expanded)"}
			}
		}
		if final && r.Type == SectionOCF {
			if fe := checkOCF(*r); fe != nil {
				return nil, &refErr{kind: ctx.kind, name: ctx.name, kw: fe.key, key: ctx.key(fe.key), msg: fe.msg + " (expanded)"}
			}
		}
		if final && r.Type == SectionContainer {
			if fe := checkContainer(*r); fe != nil {
				return nil, &refErr{kind: ctx.kind, name: ctx.name, kw: fe.key, key: ctx.key(fe.key), msg: fe.msg + " (expanded)"}
			}
		}
		if final && r.Type == SectionFS {
			if fe := checkFS(*r); fe != nil {
				return nil, &refErr{kind: ctx.kind, name: ctx.name, kw: fe.key, key: ctx.key(fe.key), msg: fe.msg + " (expanded)"}
			}
		}
	}
	if final {
		if re := portsClash(c.Resources); re != nil {
			re.msg += " (expanded)"
			return nil, re
		}
	}
	return &c, nil
}

// expandStruct expands the string and list keywords of src into dst.
func (x *expander) expandStruct(dst, src any, ctx refCtx) error {
	dv := reflect.ValueOf(dst).Elem()
	for _, kw := range SectionKeywords(ctx.kind) {
		if kw.NoExpand || kw.Field == "" {
			continue
		}
		var out any
		x.active[ctx.key(kw.Key)] = true
		switch v := fieldValue(src, kw).(type) {
		case string:
			if kw.Type != TypeString {
				break
			}
			s, err := x.expandString(v, ctx, 0)
			if err != nil {
				return &refErr{kind: ctx.kind, name: ctx.name, kw: kw.Key, key: ctx.key(kw.Key), msg: err.Error()}
			}
			out = s
		case []string:
			if v == nil {
				break
			}
			l := make([]string, len(v))
			for i, e := range v {
				s, err := x.expandString(e, ctx, 0)
				if err != nil {
					return &refErr{kind: ctx.kind, name: ctx.name, kw: kw.Key, key: ctx.key(kw.Key), msg: err.Error()}
				}
				l[i] = s
			}
			out = l
		case map[string]string:
			if v == nil || kw.Type != TypeMap {
				break
			}
			m := make(map[string]string, len(v))
			for _, k := range slices.Sorted(maps.Keys(v)) {
				s, err := x.expandString(v[k], ctx, 0)
				if err != nil {
					return &refErr{kind: ctx.kind, name: ctx.name, kw: kw.Key, key: ctx.key(kw.Key + "." + k), msg: err.Error()}
				}
				m[k] = s
			}
			out = m
		}
		delete(x.active, ctx.key(kw.Key))
		if out != nil {
			dv.FieldByName(kw.Field).Set(reflect.ValueOf(out))
		}
	}
	return nil
}

func (x *expander) expandString(s string, ctx refCtx, depth int) (string, error) {
	if !strings.Contains(s, "{") {
		return s, nil
	}
	var b strings.Builder
	last := 0
	for _, m := range refRE.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > 0 && s[m[0]-1] == '$' {
			continue
		}
		v, err := x.resolve(s[m[2]:m[3]], ctx, depth)
		if err != nil {
			return "", err
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(v)
		last = m[1]
		if b.Len() > maxExpanded {
			return "", fmt.Errorf("expanded value longer than %d bytes", maxExpanded)
		}
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// resolve returns the value of the reference ref seen from ctx.
func (x *expander) resolve(ref string, ctx refCtx, depth int) (string, error) {
	switch ref {
	case "nodename":
		return x.nodename, nil
	case "name", "svcname":
		return x.svc.Name, nil
	case "var":
		return x.varDir, nil
	case "rid":
		if ctx.name == "" {
			return "", fmt.Errorf("reference {rid} outside of a resource section")
		}
		return ctx.kind + "#" + ctx.name, nil
	}
	if depth >= maxRefDepth {
		return "", fmt.Errorf("reference {%s}: references nested too deep", ref)
	}
	var kind, name, key string
	if t, rest, ok := strings.Cut(ref, "#"); ok {
		kind = t
		if name, key, ok = strings.Cut(rest, "."); !ok || strings.Contains(key, ".") {
			return "", fmt.Errorf("unknown reference {%s}: want {TYPE#NAME.KEY}", ref)
		}
	} else {
		p := strings.Split(ref, ".")
		switch {
		case len(p) == 2 && p[0] == SectionDefault:
			kind, key = p[0], p[1]
		case len(p) == 3 && isResourceKind(p[0]):
			kind, name, key = p[0], p[1], p[2]
		default:
			return "", fmt.Errorf("unknown reference {%s}: want {nodename}, {name}, {var}, {rid}, {DEFAULT.KEY} or {TYPE.NAME.KEY}", ref)
		}
	}
	var src any
	switch {
	case kind == SectionDefault && name == "":
		src = x.svc
	case isResourceKind(kind):
		for i := range x.svc.Resources {
			if r := &x.svc.Resources[i]; r.Type == kind && r.Name == name {
				src = r
			}
		}
		if src == nil {
			return "", fmt.Errorf("unknown reference {%s}: no section [%s.%s]", ref, kind, name)
		}
	default:
		return "", fmt.Errorf("unknown reference {%s}", ref)
	}
	kw, ok := Lookup(kind, key)
	if !ok || kw.Field == "" {
		return "", fmt.Errorf("unknown reference {%s}: no keyword %q in [%s]", ref, key, kind)
	}
	v := formatValue(fieldValue(src, kw), false)
	if kw.NoExpand {
		return v, nil
	}
	id := refCtx{kind: kind, name: name}.key(key)
	if out, ok := x.done[id]; ok {
		return out, nil
	}
	if x.active[id] {
		return "", fmt.Errorf("reference {%s}: reference loop", ref)
	}
	x.active[id] = true
	out, err := x.expandString(v, refCtx{kind: kind, name: name}, depth+1)
	delete(x.active, id)
	if err != nil {
		return "", err
	}
	x.done[id] = out
	return out, nil
}
