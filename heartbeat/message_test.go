package heartbeat

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"haven/config"
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
		n.Configs = map[string]dataset.ConfigEntry{}
		for i := range r.Intn(3) {
			n.Configs[fmt.Sprintf("svc%d", i)] = dataset.ConfigEntry{Raw: fmt.Sprint(r.Intn(3)),
				Version: dataset.Version{Counter: uint64(r.Intn(3)), Origin: name}}
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
		{"newer version", `{"v":3,"k":"beat","from":"n1"}`},
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
	// both versions (node/upgrade): the previous release's, and version 2
	f.Add([]byte(`{"v":1,"k":"beat","from":"n1","fmt":2,"lvl":1}`))
	f.Add(encode(&message{V: 2, Fmt: 2, Lvl: 2, Kind: kindFull, From: "n1", Gen: 2, Node: &b}))
	// a newer release's fields in the relayed structures (dataset.Unknown)
	f.Add([]byte(`{"v":2,"k":"full","from":"n1","gen":2,"node":{"name":"n1","gen":2,"targets":{"a":{"expect":"started","zz":[1,{"q":null}]}},"clears":{"a":{"k":1}},"configs":{"a":{"raw":"x","c":"d"}}}}`))
	f.Add([]byte(`{"v":1,"k":"delta","from":"n1","base":1,"gen":2,"delta":{"set":{"s":{"resources":null}},"del":["x"]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := decode(in)
		if err == nil && m.Node != nil {
			// what is kept of a newer release's fields is written back
			if _, err := json.Marshal(m.Node); err != nil {
				t.Fatalf("decoded node does not encode: %v", err)
			}
		}
		if err != nil || m.Kind != kindDelta {
			return
		}
		n := dataset.Node{Name: "n1"}
		m.Delta.apply(&n, m.Gen)
	})
}

type nullTransport struct{ frames int }

func (n *nullTransport) send(string, int, []byte) { n.frames++ }

// TestCoreReorder: deltas handed over out of order (memberlist's datagram
// queue is LIFO under load) are applied without asking for a full copy.
func TestCoreReorder(t *testing.T) {
	s, err := Config{Node: "n1", Members: []config.Member{{Name: "n1"}, {Name: "n2"}},
		Timeout: time.Second, Interval: 500 * time.Millisecond}.validate()
	if err != nil {
		t.Fatal(err)
	}
	c := newCore(s)
	c.tr = &nullTransport{}
	r := rand.New(rand.NewSource(3))
	var gens []dataset.Node
	for g := range uint64(5) {
		gens = append(gens, randomNode(r, "n2", g+1))
	}
	c.receive(encode(&message{Kind: kindFull, From: "n2", Inc: 9, Gen: 1, Node: &gens[0]}))
	for _, i := range []int{3, 2, 1} { // deltas 3->4, 2->3, 1->2
		c.receive(encode(&message{Kind: kindDelta, From: "n2", Inc: 9, Base: gens[i-1].Gen, Gen: gens[i].Gen,
			Delta: diff(&gens[i-1], &gens[i])}))
	}
	c.receive(encode(&message{Kind: kindBeat, From: "n2", Inc: 9, Gen: 4}))
	if p := c.peers["n2"]; p.gen != 4 || !sameData(p.data, &gens[3]) || len(p.pending) != 0 || !p.gapAt.IsZero() {
		t.Fatalf("gen %d pending %d gap %v", p.gen, len(p.pending), p.gapAt)
	}
	if st := c.stats(); st.NeedsSent != 0 || st.DeltasApplied != 3 {
		t.Fatalf("stats %+v", st)
	}
}
