package placement

import (
	"math/rand"
	"reflect"
	"testing"
)

// TestNoExcludedRanksAlike: Rank with NoExcluded (no Excluded map, the
// reasons aligned with Natural in Buf) ranks exactly as without, and
// Reason gives for every node what Excluded gives, over random rankings
// (with and without Members, a Buf too short or large enough); and its
// natural order is Order's.
func TestNoExcludedRanksAlike(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	reasons := 0
	for iter := 0; iter < 3000; iter++ {
		in, m := randomRankInput(r)
		if r.Intn(2) == 0 {
			in.Members = m
		}
		want := Rank(in)
		if o := Order(in.Config.Placement, in.Service, in.Nodes, in.Views); !reflect.DeepEqual(want.Natural, o) {
			t.Fatalf("iter %d: %s: Rank's natural order %v, Order's %v", iter, in.Config.Placement, want.Natural, o)
		}
		in.NoExcluded = true
		in.Buf = make([]string, 0, r.Intn(4*len(in.Nodes)))
		got := Rank(in)
		if got.Excluded != nil {
			t.Fatalf("iter %d: NoExcluded, yet Excluded %v", iter, got.Excluded)
		}
		lean := got
		lean.why = nil
		want.Excluded = nil
		if !reflect.DeepEqual(lean, want) {
			t.Fatalf("iter %d: with NoExcluded\n%+v\nwithout\n%+v", iter, lean, want)
		}
		want = Rank(Input{Service: in.Service, Config: in.Config, ClusterNodes: in.ClusterNodes, Nodes: in.Nodes,
			Views: in.Views, Cluster: in.Cluster, Instances: in.Instances, ConstraintOK: in.ConstraintOK})
		for _, n := range append(in.Nodes, "ghost") {
			if g, w := got.Reason(n), want.Excluded[n]; g != w {
				t.Fatalf("iter %d: reason of %s: got %q, want %q", iter, n, g, w)
			}
			if want.Reason(n) != want.Excluded[n] {
				t.Fatalf("iter %d: Reason without NoExcluded: got %q, want %q", iter, want.Reason(n), want.Excluded[n])
			}
			if want.Excluded[n] != "" {
				reasons++
			}
		}
	}
	if reasons < 1000 {
		t.Fatalf("only %d exclusions compared", reasons)
	}
}
