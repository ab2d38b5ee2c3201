package heartbeat

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"haven/dataset"
)

// sameData compares two nodes by their JSON form (maps nil vs empty and
// monotonic clock readings do not count).
func sameData(a, b *dataset.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, _ := json.Marshal(a.Clone()) // Clone turns nil maps into empty ones
	jb, _ := json.Marshal(b.Clone())
	return string(ja) == string(jb)
}

// randomNode builds a node dataset from r.
func randomNode(r *rand.Rand, name string, gen uint64) dataset.Node {
	n := dataset.Node{
		Name: name, Monitor: dataset.NodeIdle, Compat: 1 + r.Intn(2), Load15: float64(r.Intn(100)) / 10,
		Labels:   map[string]string{"env": []string{"PRD", "DEV"}[r.Intn(2)]},
		Services: map[string]dataset.Instance{},
		Gen:      gen,
	}
	if r.Intn(3) == 0 {
		n.Frozen = true
	}
	for i := range r.Intn(6) {
		st := []dataset.Status{dataset.StatusUp, dataset.StatusDown, dataset.StatusWarn}[r.Intn(3)]
		n.Services[fmt.Sprintf("svc%d", i)] = dataset.Instance{
			Avail: st, Overall: st,
			Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: "none",
				StateSince: time.Unix(int64(r.Intn(1000)), 0).UTC()},
			Resources: map[string]dataset.Resource{"app#a": {Status: st, Label: "a"}},
		}
	}
	if r.Intn(2) == 0 {
		n.Targets = map[string]dataset.Target{"svc0": {Expect: dataset.ExpectStarted, ID: "x",
			Version: dataset.Version{Counter: uint64(r.Intn(5)), Origin: name}}}
	}
	return n
}

// TestDiffApply: applying diff(prev, next) to a decoded copy of prev gives next.
func TestDiffApply(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := range 500 {
		prev := randomNode(r, "n1", uint64(i))
		next := randomNode(r, "n1", uint64(i+1))
		b := encode(&message{Kind: kindDelta, From: "n1", Inc: 7, Base: prev.Gen, Gen: next.Gen, Delta: diff(&prev, &next)})
		m, err := decode(b)
		if err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
		}
		got := roundTrip(t, prev)
		m.Delta.apply(&got, m.Gen)
		if !sameData(&got, &next) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(next)
			t.Fatalf("case %d: got %s, want %s", i, gj, wj)
		}
	}
}

func roundTrip(t *testing.T, n dataset.Node) dataset.Node {
	t.Helper()
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	var out dataset.Node
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"not json", `hello`},
		{"old version", `{"v":0,"k":"beat","from":"n1"}`},
		{"no sender", `{"v":1,"k":"beat"}`},
		{"unknown kind", `{"v":1,"k":"boom","from":"n1"}`},
		{"full without node", `{"v":1,"k":"full","from":"n1","gen":1}`},
		{"full of another node", `{"v":1,"k":"full","from":"n1","gen":1,"node":{"name":"n2","gen":1}}`},
		{"delta backwards", `{"v":1,"k":"delta","from":"n1","base":3,"gen":2,"delta":{}}`},
		{"delta head with services", `{"v":1,"k":"delta","from":"n1","base":1,"gen":2,"delta":{"head":{"name":"n1","services":{}}}}`},
		{"delta without delta", `{"v":1,"k":"delta","from":"n1","base":1,"gen":2}`},
	} {
		if _, err := decode([]byte(tc.in)); err == nil {
			t.Errorf("%s: decode(%s) accepted", tc.name, tc.in)
		}
	}
	if _, err := decode([]byte(`{"v":1,"k":"beat","from":"n1","inc":3,"gen":9}`)); err != nil {
		t.Errorf("valid beat rejected: %v", err)
	}
}

// FuzzDecode: hostile frames are rejected or accepted, never a panic, and
// an accepted delta applies without panicking.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewSource(2))
	a, b := randomNode(r, "n1", 1), randomNode(r, "n1", 2)
	f.Add(encode(&message{Kind: kindDelta, From: "n1", Base: 1, Gen: 2, Delta: diff(&a, &b)}))
	f.Add(encode(&message{Kind: kindFull, From: "n1", Gen: 2, Node: &b}))
	f.Add([]byte(`{"v":1,"k":"beat","from":"n1"}`))
	f.Add([]byte(`{"v":1,"k":"delta","from":"n1","base":1,"gen":2,"delta":{"set":{"s":{"resources":null}},"del":["x"]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := decode(in)
		if err != nil || m.Kind != kindDelta {
			return
		}
		n := dataset.Node{Name: "n1"}
		m.Delta.apply(&n, m.Gen)
	})
}
