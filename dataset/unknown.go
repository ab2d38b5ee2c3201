package dataset

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"unique"
)

// Unknown holds the JSON fields of a value that this release does not know:
// fields a newer release added, from a newer peer's data. The structures a
// node relays and persists (targets, clears, configs: a node adopts its
// peers' and passes them on) keep them, in the order received, and write
// them back after the known fields, so that they reach every node and
// what a node holds of a peer keeps the digest its beats check
// (heartbeat/message.go). It is the members' raw JSON text (`"k":v`): a
// string, so that the types holding it stay comparable. Rules for a
// release that adds a field (docs/design-notes.md): in these structures
// the new field goes last, so that an older node writes the value back
// byte for byte; a new field of a node's own data (Node, Instance,
// Resource: large, encoded on every change, so not kept, which would cost
// a second pass over them) is tagged since:"N" (since.go): the digests
// leave it out until the cluster feature level reaches N.
type Unknown string

// decodeKeeping decodes b into a new T (a plain copy of the type, without
// its methods) and returns the members whose keys known does not hold.
// The common case (no unknown field) decodes once.
func decodeKeeping[T any](b []byte, known map[string]bool) (T, Unknown, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err == nil {
		return v, "", nil
	}
	var w T
	if err := json.Unmarshal(b, &w); err != nil {
		return w, "", err
	}
	members := json.NewDecoder(bytes.NewReader(b))
	if t, err := members.Token(); err != nil || t != json.Delim('{') {
		return w, "", err
	}
	var out strings.Builder
	for members.More() {
		t, err := members.Token()
		if err != nil {
			return w, "", err
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := members.Decode(&raw); err != nil {
			return w, "", err
		}
		if known[key] {
			continue
		}
		k, _ := json.Marshal(key)
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return w, "", err
		}
		if out.Len() > 0 {
			out.WriteByte(',')
		}
		out.Write(k)
		out.WriteByte(':')
		out.Write(c.Bytes())
	}
	return w, Unknown(out.String()), nil
}

// encodeKeeping encodes v (a plain copy of the type) with the unknown
// members after the known ones.
func encodeKeeping(v any, unk Unknown) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || unk == "" || len(b) < 2 || b[len(b)-1] != '}' {
		return b, err
	}
	b = b[:len(b)-1]
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, unk...)
	return append(b, '}'), nil
}

// jsonKeys are the JSON keys of struct type t's fields.
func jsonKeys(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for _, f := range reflect.VisibleFields(t) {
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out[name] = true
	}
	return out
}

func isNullJSON(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

var (
	targetKeys = jsonKeys(reflect.TypeFor[Target]())
	configKeys = jsonKeys(reflect.TypeFor[ConfigEntry]())
	clearKeys  = jsonKeys(reflect.TypeFor[ClearRequest]())
)

type (
	plainTarget Target
	plainConfig ConfigEntry
	plainClear  ClearRequest
)

func (t Target) MarshalJSON() ([]byte, error) { return encodeKeeping(plainTarget(t), t.Unknown) }
func (t *Target) UnmarshalJSON(b []byte) error {
	if isNullJSON(b) {
		return nil
	}
	v, unk, err := decodeKeeping[plainTarget](b, targetKeys)
	if err == nil {
		*t = Target(v)
		t.Unknown = unk
	}
	return err
}

func (e ConfigEntry) MarshalJSON() ([]byte, error) { return encodeKeeping(plainConfig(e), e.Unknown) }
func (e *ConfigEntry) UnmarshalJSON(b []byte) error {
	if isNullJSON(b) {
		return nil
	}
	v, unk, err := decodeKeeping[plainConfig](b, configKeys)
	if err == nil {
		*e = ConfigEntry(v)
		e.Unknown = unk
		// one copy of a config's text however many peers' datasets hold
		// it (16 nodes of 500 services: 15 copies of each, 9.5 MB of a
		// daemon's 106 MB heap)
		e.Raw = unique.Make(e.Raw).Value()
	}
	return err
}

func (c ClearRequest) MarshalJSON() ([]byte, error) { return encodeKeeping(plainClear(c), c.Unknown) }
func (c *ClearRequest) UnmarshalJSON(b []byte) error {
	if isNullJSON(b) {
		return nil
	}
	v, unk, err := decodeKeeping[plainClear](b, clearKeys)
	if err == nil {
		*c = ClearRequest(v)
		c.Unknown = unk
	}
	return err
}
