package sim

import (
	"reflect"
	"testing"
	"time"
)

// svcmgr simulate of a flex service: a node hosting an instance killed,
// its slot goes to the candidate without one; the others stay.
func TestWhatIfFlexKillAHost(t *testing.T) {
	s := threeNodes()
	in := func(running bool) SnapshotInstance { return SnapshotInstance{Running: running, Monitor: "idle"} }
	s.Services["app"] = SnapshotService{
		Config:    "[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = 2\n",
		Instances: map[string]SnapshotInstance{"n1": in(true), "n2": in(true), "n3": in(false)}}
	res := whatIf(t, s, nil, 30*time.Second)
	if got := upOn(res, "app"); !reflect.DeepEqual(got, []string{"n1", "n2"}) {
		t.Fatalf("nothing happening: app up on %v, want [n1 n2]\n%s", got, dump(res))
	}
	res = whatIf(t, s, mustEvents(t, "kill", "n1"), 30*time.Second)
	if got := upOn(res, "app"); !reflect.DeepEqual(got, []string{"n2", "n3"}) {
		t.Fatalf("n1 killed: app up on %v, want [n2 n3]\n%s", got, dump(res))
	}
}
