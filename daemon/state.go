package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"

	"haven/config"
	"haven/internal/fsutil"
	"haven/node"
)

// durable is what survives a daemon restart (node.State, owned by the
// node core), written atomically to R/var/state.json on every change.
//
// The file is decoded strictly (decodeState): a field tagged without
// omitempty is required, an unknown key or a null is refused.
type durable = node.State

type durableService = node.ServiceState

// stateVersion is the first version of the state file's envelope, the one
// written at cluster feature level 1 (later ones: stateformat.go):
//
//	{"version": 1, "sha256": "<hex of the compact state>", "state": {...}}
const stateVersion = 1

// stateRemedy ends every error about a state file that cannot be used.
const stateRemedy = "the daemon does not start on a state it cannot read (it holds the frozen flags, targets and config versions of this node): " +
	"restore the file from a backup, or move it away and start with --new-state to start afresh (what it held is then forgotten)"

// loadDurable reads the state file. No file is an empty state (a node that
// never saved one); a file that does not decode strictly is an error
// (*config.Error: exit 2), never an empty state.
func loadDurable(path string) (durable, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return durable{Services: map[string]durableService{}}, nil
	}
	if err != nil {
		return durable{}, &config.Error{File: path, Msg: fmt.Sprintf("cannot read the state file: %v: %s", err, stateRemedy)}
	}
	d, err := decodeState(b)
	if err != nil {
		var se *stateError
		if errors.As(err, &se) && se.newer {
			return durable{}, &config.Error{File: path, Key: se.key, Msg: se.msg + ": " + newerStateRemedy}
		}
		if errors.As(err, &se) {
			return durable{}, &config.Error{File: path, Line: se.line, Key: se.key, Msg: se.msg + ": " + stateRemedy}
		}
		return durable{}, &config.Error{File: path, Msg: err.Error() + ": " + stateRemedy}
	}
	return d, nil
}

// stateError locates a defect of a state file.
type stateError struct {
	line int
	key  string
	msg  string
	// newer: the file is of a format (a feature level) of a newer release
	// (stateformat.go): the remedy is that release, not --new-state.
	newer bool
}

func (e *stateError) Error() string {
	if e.key != "" {
		return e.key + ": " + e.msg
	}
	return e.msg
}

// decodeState decodes a state file: the envelope, or the format before it
// (a bare state object) when it decodes strictly.
func decodeState(b []byte) (durable, error) {
	var d durable
	if len(bytes.TrimSpace(b)) == 0 {
		return d, &stateError{msg: "empty state file"}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return d, syntaxError(b, err, "want a JSON object")
	}
	if top == nil {
		return d, &stateError{msg: "null instead of the state object"}
	}
	raw := json.RawMessage(b)
	level := 0
	if hasEnvelope(top) {
		var err error
		if raw, level, err = openEnvelope(top); err != nil {
			return d, err
		}
	}
	if err := checkStrict(raw, reflect.TypeOf(d), ""); err != nil {
		return d, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, syntaxError(raw, err, "")
	}
	d.FeatureLevel = level
	return d, nil
}

// hasEnvelope reports whether a state file's top object is an envelope
// (any of its keys), not a bare state of the format before it.
func hasEnvelope(top map[string]json.RawMessage) bool {
	_, v := top["version"]
	_, s := top["sha256"]
	_, st := top["state"]
	return v || s || st
}

// openEnvelope checks the envelope and returns the state it holds.
// It returns the cluster feature level the envelope records (1 for
// version 1, which records none).
func openEnvelope(top map[string]json.RawMessage) (json.RawMessage, int, error) {
	if err := newerEnvelope(top); err != nil {
		return nil, 0, err
	}
	for _, k := range sortedKeys(top) {
		if k != "version" && k != "sha256" && k != "state" && k != levelKey {
			return nil, 0, &stateError{key: k, msg: "unknown key in the state envelope"}
		}
		if isNull(top[k]) {
			return nil, 0, &stateError{key: k, msg: "null is not allowed"}
		}
	}
	for _, k := range []string{"version", "sha256", "state"} {
		if _, ok := top[k]; !ok {
			return nil, 0, &stateError{key: k, msg: "missing from the state envelope"}
		}
	}
	var version int
	if err := json.Unmarshal(top["version"], &version); err != nil {
		return nil, 0, &stateError{key: "version", msg: "want a number"}
	}
	level, err := envelopeLevel(version, top)
	if err != nil {
		return nil, 0, err
	}
	var sum string
	if err := json.Unmarshal(top["sha256"], &sum); err != nil {
		return nil, 0, &stateError{key: "sha256", msg: "want a string"}
	}
	if got := stateSum(top["state"]); got != sum {
		return nil, 0, &stateError{key: "sha256", msg: fmt.Sprintf("the state does not match its checksum (file says %.12s…, content is %.12s…): the file was changed or damaged", sum, got)}
	}
	return top["state"], level, nil
}

// stateSum is the SHA-256 of the compact form of a state, so that the
// indentation of the file does not matter but every value does.
func stateSum(state json.RawMessage) string {
	var c bytes.Buffer
	if err := json.Compact(&c, state); err != nil {
		return ""
	}
	h := sha256.Sum256(c.Bytes())
	return hex.EncodeToString(h[:])
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// checkStrict walks raw against the Go type t: objects for structs and
// maps, arrays for slices; keys compared exactly (encoding/json would
// accept "Services" for "services"); no null anywhere; a struct field
// without omitempty is required.
func checkStrict(raw json.RawMessage, t reflect.Type, path string) error {
	if isNull(raw) {
		if path == "" {
			return &stateError{msg: "null instead of the state object"}
		}
		return &stateError{key: path, msg: "null is not allowed"}
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()) {
		return nil
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkStrict(raw, t.Elem(), path)
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return &stateError{key: path, msg: "want a JSON object"}
		}
		// an unknown key first: a renamed key is reported as such
		for _, k := range sortedKeys(obj) {
			if _, ok := structKey(t, k); !ok {
				return &stateError{key: join(k), msg: "unknown key"}
			}
		}
		return checkFields(obj, t, join)
	case reflect.Map:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return &stateError{key: path, msg: "want a JSON object"}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := checkStrict(obj[k], t.Elem(), join(k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return &stateError{key: path, msg: "want a JSON array"}
		}
		for i, v := range arr {
			if err := checkStrict(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFields checks the keys of obj against the fields of struct t, the
// fields of an embedded struct (a sub-machine of the state, its fields at
// the same level in the file) as t's own.
func checkFields(obj map[string]json.RawMessage, t reflect.Type, join func(string) string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			if err := checkFields(obj, f.Type, join); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		v, ok := obj[name]
		if !ok {
			if !strings.Contains(","+opts+",", ",omitempty,") {
				return &stateError{key: join(name), msg: "missing"}
			}
			continue
		}
		delete(obj, name)
		if err := checkStrict(v, f.Type, join(name)); err != nil {
			return err
		}
	}
	return nil
}

// structKey finds the field of struct type t whose JSON key is k, exactly.
func structKey(t reflect.Type, k string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			// an embedded struct's fields are at t's level
			if sf, ok := structKey(f.Type, k); ok {
				return sf, true
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == k {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// syntaxError turns a decoding error into a stateError with its line.
func syntaxError(b []byte, err error, want string) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &stateError{line: 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n")), msg: "not valid JSON: " + se.Error()}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" && want != "" {
		return &stateError{msg: fmt.Sprintf("%s, not a JSON %s", want, te.Value)}
	}
	if errors.As(err, &te) {
		return &stateError{key: te.Field, msg: fmt.Sprintf("want a %s, not a JSON %s", te.Type, te.Value)}
	}
	if want != "" {
		return &stateError{msg: want + ": " + err.Error()}
	}
	return &stateError{msg: err.Error()}
}

// encodeDurable writes the state in its envelope.
func encodeDurable(d durable) ([]byte, error) {
	if d.Services == nil {
		d.Services = map[string]durableService{}
	}
	d = withoutUnknown(d)
	st, err := json.MarshalIndent(d, "  ", "  ")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	writeEnvelopeHead(&b, d.FeatureLevel, stateSum(st))
	b.Write(st)
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// persister writes the durable state off the event loop, so that a slow
// fsync never stalls heartbeats, decisions or the API. The loop hands it
// each new state (already encoded) with a sequence number; only the newest
// pending one is written. Every write is reported, in order, to onResult
// (from the writer goroutine), with the state the file holds after it.
//
// After a failed write the persister refuses every state (they were built
// on the one that failed) until the loop has rolled back and calls resume.
type persister struct {
	path     string
	onResult func(seq uint64, err error, good []byte)

	mu      sync.Mutex
	cond    *sync.Cond
	pending []byte
	seq     uint64 // of pending
	blocked bool
	good    []byte // what the file holds (nil: no file)
	written uint64 // seq of the last state written
	lastErr error  // of the last write
	closed  bool
	done    chan struct{}
}

func newPersister(path string, good []byte, onResult func(seq uint64, err error, good []byte)) *persister {
	p := &persister{path: path, good: good, onResult: onResult, done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.run()
	return p
}

// submit queues state number seq for writing (called by the loop).
func (p *persister) submit(seq uint64, data []byte) {
	p.mu.Lock()
	if p.blocked || p.closed {
		p.mu.Unlock()
		return
	}
	p.pending, p.seq = data, seq
	p.mu.Unlock()
	p.cond.Broadcast()
}

// resume accepts states again after a failed write.
func (p *persister) resume() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

// close writes what is pending, then stops. It returns the seq of the last
// state written and the error of the last write.
func (p *persister) close() (uint64, error) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written, p.lastErr
}

func (p *persister) run() {
	defer close(p.done)
	for {
		p.mu.Lock()
		for p.pending == nil && !p.closed {
			p.cond.Wait()
		}
		data, seq := p.pending, p.seq
		p.pending = nil
		p.mu.Unlock()
		if data == nil {
			return // closed, nothing pending
		}
		err := writeState(p.path, data)
		p.mu.Lock()
		p.lastErr = err
		if err == nil {
			p.good, p.written = data, seq
		} else {
			p.blocked, p.pending = true, nil
		}
		good := p.good
		p.mu.Unlock()
		p.onResult(seq, err, good)
	}
}

// writeState writes the state file; its error names the file (not the
// temporary one) and the cause, in one line.
func writeState(path string, data []byte) error {
	err := fsutil.WriteAtomic(path, data, 0o600)
	if err == nil {
		return nil
	}
	cause := err
	for u := errors.Unwrap(cause); u != nil; u = errors.Unwrap(cause) {
		cause = u
	}
	return fmt.Errorf("write %s: %w", path, cause)
}
