package dataset

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// newerNode is a node's data as a newer release writes it: each relayed
// structure (target, config, clear) with one more field, last (the rule of
// Unknown).
const newerNode = `{"name":"n2","monitor":"idle","frozen":false,"compat":1,"load15":0.5,"mem_avail_pct":40,"labels":{"az":"a"},` +
	`"services":{"web":{"avail":"up","overall":"up","frozen":false,"monitor":{"state":"idle","global_expect":"none","local_expect":"started","state_since":"0001-01-01T00:00:00Z"},` +
	`"placement_leader":true,"flags":"","resources":{"app#main":{"status":"up","label":"sleep","monitor":true,"restart_remaining":2,"last_failure_at":"0001-01-01T00:00:00Z"}},` +
	`"config_version":{"counter":3,"origin":"n1"}}},` +
	`"targets":{"web":{"expect":"placed","node":"n2","id":"n1-4","version":{"counter":4,"origin":"n1"},"t_new":true}},` +
	`"configs":{"web":{"version":{"counter":3,"origin":"n1"},"digest":"d","raw":"[DEFAULT]\n","c_new":"z"}},` +
	`"clears":{"web":{"version":{"counter":2,"origin":"n1"},"k_new":7}},` +
	`"gen":9}`

// TestUnknownFieldsKept: the fields of a newer release are kept in the
// relayed structures and written back byte for byte (so that the digest
// of a copy matches the sender's, and what is relayed carries them); a
// value without them decodes as before.
func TestUnknownFieldsKept(t *testing.T) {
	var n Node
	if err := json.Unmarshal([]byte(newerNode), &n); err != nil {
		t.Fatal(err)
	}
	if n.Targets["web"].Unknown != `"t_new":true` || n.Configs["web"].Unknown != `"c_new":"z"` || n.Clears["web"].Unknown != `"k_new":7` {
		t.Fatalf("unknown fields not kept: %+v", n)
	}
	if n.Name != "n2" || n.Gen != 9 || n.Targets["web"].Node != "n2" || n.Services["web"].Resources["app#main"].RestartRemaining != 2 {
		t.Fatalf("known fields lost: %+v", n)
	}
	b, err := json.Marshal(&n)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != newerNode {
		t.Fatalf("written back:\n%s\nwant:\n%s", b, newerNode)
	}
	// a clone, and a target relayed alone, keep them too
	c := n.Clone()
	if tb, _ := json.Marshal(c.Targets["web"]); !bytes.Contains(tb, []byte(`"t_new":true`)) {
		t.Fatalf("relayed target: %s", tb)
	}
	// this release's own data: nothing unknown, the same bytes as before
	own := Node{Name: "n1", Monitor: NodeIdle, Services: map[string]Instance{"web": {Avail: StatusUp,
		Resources: map[string]Resource{"r": {Status: StatusUp, LastFailureAt: time.Unix(5, 0).UTC()}}}}, Gen: 1}
	ob, _ := json.Marshal(own)
	var back Node
	if err := json.Unmarshal(ob, &back); err != nil {
		t.Fatalf("own data: %v %+v", err, back)
	}
	if rb, _ := json.Marshal(back); !bytes.Equal(rb, ob) {
		t.Fatalf("own data written back:\n%s\nwant\n%s", rb, ob)
	}
}

// TestUnknownFieldsBadInput: a value that is not an object, or of the
// wrong type, is an error as before; null is no value.
func TestUnknownFieldsBadInput(t *testing.T) {
	for _, in := range []string{`[1]`, `{"expect":3}`, `{"id":"x","zz":1,"version":"v"}`, `{"version":{"counter":"a"}}`, `{"id":"x",}`} {
		var tg Target
		if err := json.Unmarshal([]byte(in), &tg); err == nil {
			t.Errorf("%s: decoded as %+v", in, tg)
		}
	}
	var tg Target
	if err := json.Unmarshal([]byte(`null`), &tg); err != nil || tg != (Target{}) {
		t.Errorf("null target: %v %+v", err, tg)
	}
	var c ClearRequest
	if err := json.Unmarshal([]byte(`{"node":"a","x":1,"x":2}`), &c); err != nil || !strings.Contains(string(c.Unknown), `"x"`) {
		t.Errorf("repeated unknown key: %v %q", err, c.Unknown)
	}
}

// The text of a config decoded from several peers' datasets is held once:
// each peer's copy of an entry shares it (a node of 16 held 15 copies of
// each of 500 configs).
func TestConfigEntryRawShared(t *testing.T) {
	raw := strings.Repeat("[app.main]\nstart = \"true\"\n", 20)
	b, err := json.Marshal(ConfigEntry{Version: Version{Counter: 3, Origin: "n1"}, Digest: "d", Raw: raw})
	if err != nil {
		t.Fatal(err)
	}
	var a, c ConfigEntry
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if a.Raw != raw || c.Raw != raw {
		t.Fatalf("decoded raw %q, %q, want %q", a.Raw, c.Raw, raw)
	}
	if unsafe.StringData(a.Raw) != unsafe.StringData(c.Raw) {
		t.Fatal("two decodes of one config hold two copies of its text")
	}
}
