package heartbeat

import (
	"reflect"
	"testing"
	"time"
)

// beatSamples are beats and needs as this release encodes them, and by
// hand.
func beatSamples() [][]byte {
	return [][]byte{
		encode(&message{Kind: kindBeat, From: "n1", Inc: 1764222000123456789, N: 42, T: 93 * time.Second, Gen: 7, Dig: 1<<63 + 5}),
		encode(&message{V: 2, Fmt: 2, Lvl: 2, Rel: "1.4.0~rc1+git20261127", Kind: kindBeat, From: "node-a.example", Inc: 9, N: 1, Gen: 3, Dig: 4,
			Unseen: []string{"n2", "n3"}, Probe: true, Twins: []string{"n4"}, Links: 2, Hear: 3}),
		encode(&message{Kind: kindNeed, From: "n1", Inc: 2, N: 3}),
		[]byte(`{"v":1,"k":"beat","from":"n1","inc":3,"gen":9}`),
		[]byte(" {\n\t\"v\" : 1 , \"k\":\"beat\",\"from\":\"n1\",\"unseen\":[ ],\"twins\":[\"a\" , \"b\"],\"t\":-5}\r\n"),
		[]byte(`{"v":1,"k":"beat","from":"n1","t":-0,"probe":false}`),
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
