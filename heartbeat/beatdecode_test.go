package heartbeat

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// beatSamples are beats and needs as this release encodes them, and by
// hand.
func beatSamples() [][]byte {
	return [][]byte{
		encode(&message{Kind: kindBeat, From: "n1", Inc: 1764222000123456789, N: 42, T: 93 * time.Second, Gen: 7, Dig: 1<<63 + 5}),
		encode(&message{V: 2, Fmt: 2, Lvl: 2, Rel: "1.4.0~rc1+git20261127", Kind: kindBeat, From: "node-a.example", Inc: 9, N: 1, Gen: 3, Dig: 4,
			Unseen: []string{"n2", "n3"}, Probe: true, Twins: []string{"n4"}, Links: 2, Hear: 3, Behind: true, DHear: 2,
			Ack: echoes{{"n2", 1099511627776, 1500000}, {"n3", 7, 0}}}),
		encode(&message{Kind: kindNeed, From: "n1", Inc: 2, N: 3}),
		[]byte(`{"v":1,"k":"beat","from":"n1","inc":3,"gen":9}`),
		[]byte(" {\n\t\"v\" : 1 , \"k\":\"beat\",\"from\":\"n1\",\"unseen\":[ ],\"twins\":[\"a\" , \"b\"],\"t\":-5}\r\n"),
		[]byte(`{"v":1,"k":"beat","from":"n1","t":-0,"probe":false}`),
		[]byte(`{"v":1,"k":"beat","from":"n1","ack":{ }}`),
		[]byte(`{"v":1,"k":"beat","from":"n1","ack":{ "n2" : [ 1 , 2 ] ,"n3":[0,0]}}`),
	}
}

// Beats and needs decode by the flat path into what encoding/json makes
// of them; what the flat path does not decide falls to json, which
// decides as before.
func TestDecodeFlat(t *testing.T) {
	for _, b := range beatSamples() {
		m, ok := decodeFlat(b)
		if !ok {
			t.Fatalf("not decoded by the flat path: %s", b)
		}
		want, err := decodeJSON(b)
		if err != nil || !reflect.DeepEqual(m, want) {
			t.Fatalf("%s:\nflat %+v\njson %+v (%v)", b, m, want, err)
		}
	}
	for _, b := range []string{
		`{"v":1,"k":"beat","from":"n\u0031"}`,                       // an escape
		`{"v":1,"k":"beat","From":"n1"}`,                            // a key in another case
		`{"v":1,"k":"beat","from":"n1","from":"n2"}`,                // a key twice
		`{"v":1,"k":"beat","from":"n1","gen":null}`,                 // null
		`{"v":1,"k":"beat","from":"n1","gen":1.0}`,                  // a fraction
		`{"v":1,"k":"beat","from":"n1","gen":1e3}`,                  // an exponent
		`{"v":1,"k":"beat","from":"n1","gen":01}`,                   // a leading zero
		`{"v":1,"k":"beat","from":"n1","gen":-1}`,                   // a negative unsigned
		`{"v":1,"k":"beat","from":"n1","zz":1}`,                     // a key it does not know
		`{"v":1,"k":"beat","from":"n1"} x`,                          // trailing bytes
		`{"v":1,"k":"full","from":"n1","gen":1}`,                    // another kind
		`{"v":9,"k":"beat","from":"n1"}`,                            // a version decode refuses
		`{"v":1,"k":"beat","from":""}`,                              // no sender
		`{"v":1,"k":"beat","from":"né"}`,                            // non-ASCII
		`{"v":1,"k":"beat","from":"n1","gen":99999999999999999999}`, // 20 digits
		`{"v":1,"k":"beat","from":"n1",}`,                           // a trailing comma
		`{"v":1,"k":"beat","from":"n1","unseen":["a",]}`,
		`{"v":1,"k":"beat","from":"n1","ack":{"n2":[1,2],"n2":[3,4]}}`, // a name twice
		`{"v":1,"k":"beat","from":"n1","ack":{"n3":[1,2],"n2":[3,4]}}`, // out of order
		`{"v":1,"k":"beat","from":"n1","ack":{"n2":[1]}}`,
		`{"v":1,"k":"beat","from":"n1","ack":{"n2":[1,2,3]}}`,
		`{"v":1,"k":"beat","from":"n1","ack":{"n2":null}}`,
		`{"v":1,"k":"beat","from":"n1","ack":null}`,
	} {
		if m, ok := decodeFlat([]byte(b)); ok {
			t.Errorf("decided by the flat path: %s => %+v", b, m)
		}
	}
}

// FuzzDecodeFlat: whatever the flat path decodes, encoding/json decodes
// the same, and decode accepts.
func FuzzDecodeFlat(f *testing.F) {
	for _, b := range beatSamples() {
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"k":"need","from":"n1","n":18446744073709551615}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, ok := decodeFlat(in)
		if !ok {
			return
		}
		want, err := decodeJSON(in)
		if err != nil {
			t.Fatalf("flat path decoded %q, json refuses it: %v", in, err)
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("%q:\nflat %+v\njson %+v", in, m, want)
		}
	})
}

// BenchmarkDecodeBeat: a beat by decode (the flat path) and by json.
func BenchmarkDecodeBeat(b *testing.B) {
	beat := beatSamples()[0]
	b.Run("flat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decode(beat); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJSON(beat); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBeatRound: the beat of a node of a 3-node cluster that heard
// both peers (an idle node's work each beat period), encoded once and
// decoded.
func BenchmarkBeatRound(b *testing.B) {
	s, err := Config{Node: "n1", Members: []config.Member{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}},
		Timeout: 3 * time.Second, Interval: time.Second}.validate()
	if err != nil {
		b.Fatal(err)
	}
	c := newCore(s)
	c.tr = &nullTransport{}
	for _, p := range []string{"n2", "n3"} {
		c.receive([]byte(`{"v":1,"k":"beat","from":"` + p + `","inc":9,"n":5,"t":1000,"gen":1}`))
	}
	b.ReportAllocs()
	for b.Loop() {
		c.mu.Lock()
		beat := c.encode(c.beatMessage(false, nil))
		c.mu.Unlock()
		if _, err := decode(beat); err != nil {
			b.Fatal(err)
		}
	}
}

// Beats and needs encode by hand into the bytes json.Marshal makes of
// them; what the flat path does not encode (another kind, a string json
// escapes) goes through json.Marshal.
func TestEncodeFlat(t *testing.T) {
	msgs := []*message{
		{V: 1, Kind: kindBeat, From: "n1", Inc: 1764222000123456789, N: 42, T: 93 * time.Second, Gen: 7, Dig: 1<<63 + 5},
		{V: 2, Fmt: 2, Lvl: 2, Rel: "1.4.0~rc1+git20261127", Kind: kindBeat, From: "node-a.example", Inc: 9, N: 1, Gen: 3, Dig: 4,
			Unseen: []string{"n2", "n3"}, Probe: true, Twins: []string{"n4"}, Links: 2, Hear: 3, Behind: true, DHear: 1,
			Ack: echoes{{"a", 1<<64 - 1, 1}, {"n2", 7, 0}, {"n3", 1099511627776, 1500000}}},
		{V: 1, Kind: kindNeed, From: "n1", Inc: 2, N: 3},
		{V: 1, Kind: kindBeat, From: "n1", T: -5, Unseen: []string{}, Twins: []string{}, Ack: echoes{}},
		{V: 1, Kind: kindBeat, From: "n<1>", Inc: 1},                              // escaped by json
		{V: 1, Kind: kindBeat, From: "n1", Rel: "é"},                              // non-ASCII
		{V: 1, Kind: kindBeat, From: "n1", Ack: echoes{{Name: "&"}}},              // escaped by json
		{V: 1, Kind: kindBeat, From: "n1", Ack: echoes{{Name: "b"}, {Name: "a"}}}, // not sorted
		{V: 1, Kind: kindFull, From: "n1", Node: &dataset.Node{Name: "n1"}},       // another kind
		{V: 1, Kind: kindBeat, From: "n1", ID: 3},                                 // a field of another kind
	}
	for i, m := range msgs {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := encodeFlat(m)
		if ok != (i < 4) {
			t.Errorf("%s: flat %v, want %v", want, ok, i < 4)
		}
		if ok && string(got) != string(want) {
			t.Errorf("flat %s\njson %s", got, want)
		}
		if string(encode(m)) != string(want) {
			t.Errorf("encode %s\njson %s", encode(m), want)
		}
		if back, err := decode(want); ok && (err != nil || string(encode(back)) != string(want)) {
			t.Errorf("%s decodes to %+v (%v)", want, back, err)
		}
	}
}

// FuzzEncodeFlat: whatever the flat path encodes, json.Marshal encodes
// the same, and the flat decoder reads it back.
func FuzzEncodeFlat(f *testing.F) {
	f.Add("n1", "1.0", "n2", uint64(1), uint64(2), int64(3), uint64(4), uint64(5), true, 2)
	f.Fuzz(func(t *testing.T, from, rel, peer string, inc, n uint64, tt int64, a, h uint64, probe bool, v int) {
		m := &message{V: v, Kind: kindBeat, From: from, Rel: rel, Inc: inc, N: n, T: time.Duration(tt), Gen: a, Dig: h,
			Probe: probe, Unseen: []string{peer}, Ack: echoes{{from, h, a}, {peer, a, h}}}
		got, ok := encodeFlat(m)
		if !ok {
			return
		}
		want, err := json.Marshal(m)
		if err != nil || string(got) != string(want) {
			t.Fatalf("flat %s\njson %s (%v)", got, want, err)
		}
	})
}

// Every field a beat may carry is written by the flat encoder: a message
// with every field of a beat set encodes flat as json.Marshal does (a
// field added to the message and not to encodeFlat fails here).
func TestEncodeFlatEveryBeatField(t *testing.T) {
	m := &message{}
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch v.Type().Field(i).Name {
		case "Node", "Delta", "ID", "Op", "Body", "Err", "Base":
			continue // not a beat's
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Uint64:
			f.SetUint(9)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			if f.Type() == reflect.TypeOf(echoes{}) {
				f.Set(reflect.ValueOf(echoes{{"a", 1, 2}}))
			} else {
				f.Set(reflect.ValueOf([]string{"a"}))
			}
		default:
			t.Fatalf("field %s of kind %s: teach this test and encodeFlat", v.Type().Field(i).Name, f.Kind())
		}
	}
	m.Kind = kindBeat
	got, ok := encodeFlat(m)
	want, _ := json.Marshal(m)
	if !ok || string(got) != string(want) {
		t.Fatalf("flat %s (%v)\njson %s", got, ok, want)
	}
}
