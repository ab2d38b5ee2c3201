package main

import (
	"maps"
	"slices"
	"testing"
)

// noteUp follows the instance_status events: an instance up on a node
// joins the service's set, one that leaves up leaves it, and the other
// transitions change nothing; flexWant says how many nodes a service of
// the bench may run on. Together they find a failover service up on two
// nodes in the middle of a window (a false down with the quorum off),
// which the check at the window's end missed.
func TestNoteUpFindsAnOverlapInTheWindow(t *testing.T) {
	upOn := map[string]map[string]bool{"s001": {"n1": true}}
	noteUp(upOn, "s001", "n2", "avail down -> up")
	if got := slices.Sorted(maps.Keys(upOn["s001"])); len(got) <= flexWant("s001", 3) || !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("n2 up beside n1: %v (want %d at most, and the overlap seen)", got, flexWant("s001", 3))
	}
	noteUp(upOn, "s001", "n1", "avail up -> down")
	noteUp(upOn, "s001", "n3", "avail down -> warn")
	noteUp(upOn, "s002", "n3", "garbage")
	if got := slices.Sorted(maps.Keys(upOn["s001"])); !slices.Equal(got, []string{"n2"}) || len(upOn["s002"]) != 0 {
		t.Fatalf("after n1 down: %v, s002 %v", got, upOn["s002"])
	}
	if flexWant("s002", 3) != 3 || flexWant("s001", 3) != 1 {
		t.Fatal("flexWant: even services are flex")
	}
}
