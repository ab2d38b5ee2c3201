package dataset

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestSinceFields: a field tagged since:"N" is left out of the view of an
// earlier level, and kept at N; the others are untouched.
func TestSinceFields(t *testing.T) {
	type later struct {
		A string `json:"a"`
		B int64  `json:"b,omitempty" since:"2"`
		C bool   `json:"c,omitempty" since:"3"`
	}
	fs := sinceFields(reflectTypeOf[later]())
	if len(fs) != 2 || fs[0] != (sinceField{1, 2}) || fs[1] != (sinceField{2, 3}) {
		t.Fatalf("tagged fields %v", fs)
	}
	for level, want := range map[int]string{1: `{"a":"x"}`, 2: `{"a":"x","b":5}`, 3: `{"a":"x","b":5,"c":true}`} {
		v := later{A: "x", B: 5, C: true}
		zeroSince(&v, fs, level)
		if b, _ := json.Marshal(v); string(b) != want {
			t.Errorf("level %d: %s, want %s", level, b, want)
		}
	}
	// no field of the dataset is tagged today: the view is the node itself
	n := &Node{Name: "n1", Services: map[string]Instance{"web": {Avail: StatusUp}}}
	if n.AtLevel(1) != n {
		t.Fatal("AtLevel copied a node with no field of a later format")
	}
}

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// A node's capacity is a format 2 field: left out of the data at level 1.
func TestCapacityIsFormat2(t *testing.T) {
	n := &Node{Name: "n1", Capacity: &Capacity{CPUMilli: 4000, MemBytes: 1 << 30}}
	if n.AtLevel(1).Capacity != nil {
		t.Fatal("capacity kept at level 1")
	}
	if n.AtLevel(2).Capacity == nil {
		t.Fatal("capacity dropped at level 2")
	}
}
