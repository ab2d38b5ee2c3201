package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// checkExactJSON checks what encoding/json lets through: a field name
// that matches v's field only case-insensitively ("Local" for "local"),
// and a field given twice (encoding/json keeps the last one, so
// `{"local":true,"local":false}` was a cluster-wide action). data is one
// JSON value that t (the type decoded into) describes; the error names
// the field. Syntax errors are left to the decoder.
func checkExactJSON(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walkExactJSON(dec, t, "")
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func walkExactJSON(dec *json.Decoder, t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler)) {
		t = nil // its own decoding: duplicates are still refused
	}
	tok, err := dec.Token()
	if err != nil {
		return nil // the decoder reports it
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil
			}
			key, _ := k.(string)
			name := at + key
			if seen[key] {
				return fmt.Errorf("duplicate field %q", name)
			}
			seen[key] = true
			var sub reflect.Type
			switch {
			case fields != nil:
				ft, ok := fields[key]
				if !ok {
					for f := range fields {
						if strings.EqualFold(f, key) {
							return fmt.Errorf("unknown field %q (field names are case-sensitive: %q)", name, at+f)
						}
					}
					return fmt.Errorf("unknown field %q", name)
				}
				sub = ft
			case t != nil && t.Kind() == reflect.Map:
				sub = t.Elem()
			}
			if err := walkExactJSON(dec, sub, name+"."); err != nil {
				return err
			}
		}
		dec.Token() // '}'
	case json.Delim('['):
		var sub reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			sub = t.Elem()
		}
		for dec.More() {
			if err := walkExactJSON(dec, sub, at); err != nil {
				return err
			}
		}
		dec.Token() // ']'
	}
	return nil
}

// jsonFields maps the JSON names of t's exported fields to their types,
// as encoding/json names them (the tag's name, else the Go name).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			continue // its fields are promoted
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
