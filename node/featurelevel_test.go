package node

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// levelNode is a core of the new release (Format 2) in a 3-node cluster.
func levelNode(t *testing.T, st State) *Core {
	t.Helper()
	c := New(Config{Name: "n1", ClusterNodes: []string{"n1", "n2", "n3"}, Compat: 1, Format: 2,
		RejoinGrace: time.Minute, MaintenanceGrace: time.Minute, WriteThrough: true}, st)
	c.start(t0)
	c.Ready()
	return c
}

// hearFormat gives the core peer's data as announced by a node reading
// formats up to max at level (0, 0: a node of the first release).
func hearFormat(c *Core, peer string, max, level int, now time.Time) {
	d := dataset.Node{Name: peer, Monitor: dataset.NodeIdle, Compat: 1, Services: map[string]dataset.Instance{},
		Format: dataset.Format{Max: max, Level: level}}
	c.heartbeat(PeerEvent{Node: peer, Kind: PeerUp}, now)
	c.heartbeat(PeerEvent{Node: peer, Kind: PeerData, Data: &d}, now)
}

func levelEvents(r Ready) []string {
	var out []string
	for _, e := range r.Events {
		if e.Kind() == "feature_level" || e.Kind() == "compat" {
			out = append(out, e.String())
		}
	}
	return out
}

// TestFeatureLevelMovesAfterTheLastNode: a rolling upgrade seen from n1
// (already on the new release): the level stays 1 while n2 or n3 runs the
// previous release, ha stays on throughout (one version step), and the
// level moves to 2 once the last one announces the new release: an
// event, a write of the state, and the announced level.
func TestFeatureLevelMovesAfterTheLastNode(t *testing.T) {
	c := levelNode(t, State{})
	now := t0.Add(time.Second)
	hearFormat(c, "n2", 0, 0, now) // previous release
	hearFormat(c, "n3", 0, 0, now)
	if r := c.Ready(); c.FeatureLevel() != 1 || !c.Compat() || len(levelEvents(r)) > 0 {
		t.Fatalf("all previous: level %d compat %v events %q, want 1, true, none", c.FeatureLevel(), c.Compat(), levelEvents(r))
	}
	hearFormat(c, "n2", 2, 1, now) // n2 upgraded
	if r := c.Ready(); c.FeatureLevel() != 1 || !c.Compat() || len(levelEvents(r)) > 0 {
		t.Fatalf("n3 previous: level %d compat %v events %q", c.FeatureLevel(), c.Compat(), levelEvents(r))
	}
	if v := c.UpgradeVerdict(""); !v.Safe || !strings.Contains(v.Reason, "n3") {
		t.Fatalf("verdict %+v, want safe, waiting for n3", v)
	}
	hearFormat(c, "n3", 2, 1, now) // the last one
	r := c.Ready()
	ev := levelEvents(r)
	if c.FeatureLevel() != 2 || len(ev) != 1 || !strings.Contains(ev[0], "cluster feature level 1 -> 2: every member (n1, n2, n3) reads formats up to 2") {
		t.Fatalf("after the last node: level %d, events %q", c.FeatureLevel(), ev)
	}
	if r.Persist == nil || r.Persist.FeatureLevel != 2 || !r.Publish {
		t.Fatalf("level move not written or not announced: persist %+v publish %v", r.Persist, r.Publish)
	}
	if f := c.Dataset(dataset.Node{Name: "n1"}).Format; f != (dataset.Format{Max: 2, Level: 2}) {
		t.Fatalf("announced %+v, want 2/2", f)
	}
	// never down by itself: n3 taken back to the previous release
	hearFormat(c, "n3", 0, 0, now.Add(time.Second))
	r = c.Ready()
	ev = levelEvents(r)
	if c.FeatureLevel() != 2 || c.Compat() || len(ev) != 1 || !strings.Contains(ev[0], "disable ha orchestration (n3 reads formats up to 1, below the cluster feature level 2)") {
		t.Fatalf("old binary back: level %d compat %v events %q", c.FeatureLevel(), c.Compat(), ev)
	}
}

// TestFeatureLevelPersistedAndAdopted: a restarted node keeps its level
// (State.FeatureLevel); a node that was away adopts the level its peers
// moved to, and a member more than one version step away disables ha.
func TestFeatureLevelPersistedAndAdopted(t *testing.T) {
	c := levelNode(t, State{FeatureLevel: 2})
	if c.FeatureLevel() != 2 {
		t.Fatalf("persisted level 2 read as %d", c.FeatureLevel())
	}
	c2 := levelNode(t, State{})
	hearFormat(c2, "n2", 2, 2, t0.Add(time.Second)) // n3 never heard: only adoption can move it
	if c2.FeatureLevel() != 2 {
		t.Fatalf("level not adopted from n2: %d", c2.FeatureLevel())
	}
	if ev := levelEvents(c2.Ready()); len(ev) != 1 || !strings.Contains(ev[0], "1 -> 2: n2 already runs at feature level 2 (the level moved while this node was away)") {
		t.Fatalf("adoption events %q", ev)
	}
	hearFormat(c2, "n3", 4, 2, t0.Add(time.Second))
	if c2.Compat() {
		t.Fatal("a member two version steps ahead left ha on")
	}
}

// TestFeatureLevelOffInTheSimulation: a core without Config.Format takes
// no part (announces nothing, stays at 1).
func TestFeatureLevelOffInTheSimulation(t *testing.T) {
	c := New(Config{Name: "n1", ClusterNodes: []string{"n1", "n2"}, Compat: 1, WriteThrough: true}, State{})
	c.start(t0)
	hearFormat(c, "n2", 2, 2, t0)
	if c.FeatureLevel() != 1 || c.Dataset(dataset.Node{}).Format != (dataset.Format{}) || !c.Compat() {
		t.Fatalf("level %d format %+v compat %v", c.FeatureLevel(), c.Dataset(dataset.Node{}).Format, c.Compat())
	}
}

// TestFeatureLevelAlone: a node alone in its cluster runs at the newest
// level from its start.
func TestFeatureLevelAlone(t *testing.T) {
	c := New(Config{Name: "n1", ClusterNodes: []string{"n1"}, Compat: 1, Format: 2, WriteThrough: true}, State{})
	c.start(t0)
	if r := c.Ready(); c.FeatureLevel() != 2 || r.Persist == nil || r.Persist.FeatureLevel != 2 {
		t.Fatalf("alone: level %d", c.FeatureLevel())
	}
}
