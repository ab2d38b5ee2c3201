package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// schema says which section kinds a file may hold.
type schema struct {
	single []string // [KIND]
	named  []string // [KIND.NAME]
}

var (
	nodeSchema    = schema{single: []string{SectionNode, SectionHB, SectionHBDisk}, named: []string{SectionHook}}
	clusterSchema = schema{single: []string{SectionCluster, SectionNodes, SectionNodeKeys, SectionAdminKeys}, named: []string{SectionArbitrator, SectionStonith}}
	serviceSchema = schema{single: []string{SectionDefault}, named: []string{SectionApp, SectionIP, SectionFS, SectionOCF, SectionContainer}}
)

func (s schema) sectionNames() string {
	var out []string
	for _, k := range s.single {
		out = append(out, "["+k+"]")
	}
	for _, k := range s.named {
		out = append(out, "["+k+".NAME]")
	}
	return strings.Join(out, ", ")
}

// section is one section of a decoded file.
type section struct {
	kind string
	name string         // "" for a single section
	keys []string       // the keys set, in file order
	raw  map[string]any // TOML values as decoded
	vals map[string]any // Go values of the keys set
}

// id prefixes the keys of the section in errors: "hb", "DEFAULT",
// "app#web" (a resource id), "arbitrator.a1".
func (s *section) id() string {
	switch {
	case s.name == "":
		return s.kind
	case isResourceKind(s.kind):
		return s.kind + "#" + s.name
	}
	return s.kind + "." + s.name
}

func (s *section) path() []string {
	if s.name == "" {
		return strings.Split(s.kind, ".") // [hb.disk]: a table in [hb]
	}
	return []string{s.kind, s.name}
}

// value returns the value of key, or its default.
func (s *section) value(key string) any {
	if v, ok := s.vals[key]; ok {
		return v
	}
	kw, ok := Lookup(s.kind, key)
	if !ok {
		return nil
	}
	return defaultValue(kw)
}

func (s *section) isSet(key string) bool {
	_, ok := s.vals[key]
	return ok
}

// document is a decoded and type-checked file.
type document struct {
	file     string
	tree     map[string]any
	order    map[string]int // key path -> rank of first appearance
	lines    *lineIndex
	sections []*section
	dec      Decoder // decoded it; decodes the inline values of edits
}

// errAt builds the error of key in sec ("" for the section itself).
func (d *document) errAt(sec *section, key, format string, args ...any) *Error {
	e := &Error{File: d.file, Key: sec.id(), Msg: fmt.Sprintf(format, args...)}
	if key != "" {
		e.Key += "." + key
	}
	e.Line = d.lines.find(sec.path(), key)
	return e
}

func (d *document) find(kind, name string) *section {
	for _, s := range d.sections {
		if s.kind == kind && s.name == name {
			return s
		}
	}
	return nil
}

var sectionNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// decodeDoc decodes data, checks the sections and keys against sc and the
// keyword table, and converts the values. The first error wins; sections
// and keys are visited in file order.
func (dec Decoder) decodeDoc(file string, data []byte, sc schema) (*document, error) {
	text := string(data)
	d := &document{file: file, order: map[string]int{}, dec: dec}
	tree, err := dec(text)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			key := se.LastKey
			if p := strings.SplitN(key, ".", 3); len(p) == 3 && slices.Contains(sc.named, p[0]) && isResourceKind(p[0]) {
				key = p[0] + "#" + p[1] + "." + p[2]
			}
			return nil, &Error{File: file, Line: se.Line, Key: key, Msg: "syntax error: " + se.Msg}
		}
		return nil, &Error{File: file, Msg: "syntax error: " + err.Error()}
	}
	d.tree = tree.Values
	if d.tree == nil {
		d.tree = map[string]any{}
	}
	for i, k := range tree.Keys {
		d.order[pathKey(k)] = i
	}
	d.lines = indexLines(text)
	for _, top := range d.sortedKeys(d.tree, nil) {
		v := d.tree[top]
		topSec := &section{kind: top}
		switch {
		case slices.Contains(sc.single, top):
			m, ok := v.(map[string]any)
			if !ok {
				return nil, d.errAt(topSec, "", "must be a section [%s]", top)
			}
			topSec.raw = m
			d.sections = append(d.sections, topSec)
			// a sub-section ([hb.disk]) is a section of its own
			for _, k := range d.sortedKeys(m, []string{top}) {
				if !slices.Contains(sc.single, top+"."+k) {
					continue
				}
				sub := &section{kind: top + "." + k}
				sm, ok := m[k].(map[string]any)
				if !ok {
					return nil, d.errAt(sub, "", "must be a section [%s]", sub.kind)
				}
				sub.raw = sm
				rest := make(map[string]any, len(m))
				for kk, vv := range m {
					if kk != k {
						rest[kk] = vv
					}
				}
				topSec.raw, m = rest, rest
				d.sections = append(d.sections, sub)
			}
		case slices.Contains(sc.named, top):
			m, ok := v.(map[string]any)
			if !ok {
				return nil, d.errAt(topSec, "", "must be sections [%s.NAME]", top)
			}
			for _, name := range d.sortedKeys(m, []string{top}) {
				sec := &section{kind: top, name: name}
				sm, ok := m[name].(map[string]any)
				if !ok {
					return nil, &Error{File: file, Line: d.lines.find([]string{top}, name), Key: top + "." + name,
						Msg: fmt.Sprintf("keywords of %s go in sections [%s.NAME]", top, top)}
				}
				if !sectionNameRE.MatchString(name) {
					return nil, d.errAt(sec, "", "invalid section name %q: want letters, digits, _ and -", name)
				}
				sec.raw = sm
				d.sections = append(d.sections, sec)
			}
		default:
			if _, isTable := v.(map[string]any); !isTable {
				return nil, &Error{File: file, Line: d.lines.find(nil, top), Key: top,
					Msg: "keyword outside of any section: want " + sc.sectionNames()}
			}
			return nil, d.errAt(topSec, "", "unknown section [%s]: want %s", top, sc.sectionNames())
		}
	}
	// every keyword error of the file, not the first only
	var errs []*Error
	for _, sec := range d.sections {
		sec.vals = map[string]any{}
		for _, key := range d.sortedKeys(sec.raw, sec.path()) {
			kw, ok := Lookup(sec.kind, key)
			if !ok {
				errs = append(errs, d.errAt(sec, key, "unknown keyword (known: %s)", keywordNames(sec.kind)))
				continue
			}
			v, err := fromTOML(kw, sec.raw[key])
			if err != nil {
				errs = append(errs, d.errAt(sec, key, "%v", err))
				continue
			}
			if err := notYet(kw, v); err != nil {
				errs = append(errs, d.errAt(sec, key, "%v", err))
				continue
			}
			sec.keys = append(sec.keys, key)
			sec.vals[key] = v
		}
	}
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	return d, nil
}

// sortedKeys returns the keys of m (a table at path) in file order.
func (d *document) sortedKeys(m map[string]any, path []string) []string {
	keys := slices.Sorted(maps.Keys(m))
	rank := func(k string) int {
		if r, ok := d.order[pathKey(append(append([]string{}, path...), k))]; ok {
			return r
		}
		return len(d.order)
	}
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	return keys
}

// checkRequired reports the first required keyword of sec left unset.
func (d *document) checkRequired(sec *section) error {
	for _, kw := range SectionKeywords(sec.kind) {
		if kw.Required && !sec.isSet(kw.Key) {
			return d.errAt(sec, kw.Key, "required keyword missing")
		}
	}
	return nil
}

// fill stores the values of sec (defaults included) into the fields of the
// struct dst points to, as the keyword table says.
func fill(dst any, sec *section) {
	rv := reflect.ValueOf(dst).Elem()
	for _, kw := range SectionKeywords(sec.kind) {
		if kw.Field == "" {
			continue
		}
		f := rv.FieldByName(kw.Field)
		if !f.IsValid() {
			panic("config: no field " + kw.Field + " for " + kw.Section + "." + kw.Key)
		}
		f.Set(reflect.ValueOf(sec.value(kw.Key)))
	}
}

// fieldValue reads the field of kw from the struct src points to.
func fieldValue(src any, kw *Keyword) any {
	return reflect.ValueOf(src).Elem().FieldByName(kw.Field).Interface()
}
