package node

import (
	"errors"
	"testing"

	"haven/dataset"
	"haven/dataset/datasettest"
)

// A peer's data with changes based on the copy held is looked at for the
// entries listed only: a target listed is adopted, one not listed is not
// looked at (the heartbeat says it did not change), and the services
// marked dirty are those listed that differ; data without changes, or
// based on another copy, is taken as a whole.
func TestPeerDataChangesListedOnly(t *testing.T) {
	c := maNode(t, "n1", "", false, t0)
	d0 := maPeer("n2", false, false)
	d0.Targets = map[string]dataset.Target{}
	maHear(c, d0, t0)
	maHear(c, maPeer("n3", false, false), t0)
	maPass(c, t0)

	v := func(n uint64) dataset.Version { return dataset.Version{Counter: n, Origin: "n2"} }
	d1, ch1 := datasettest.Next(d0, func(n *dataset.Node) {
		n.Targets["web"] = dataset.Target{Expect: dataset.ExpectStopped, ID: "a", Version: v(10)}
	}, nil, nil, []string{"web"})
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: d1, Changes: ch1}, t0)
	if got := c.Target("web"); got.ID != "a" {
		t.Fatalf("a target listed in the changes was not adopted: %+v", got)
	}

	// the target differs, but the changes do not list it: not looked at;
	// the instance listed changed: dirty
	d2, ch2 := datasettest.Next(d1, func(n *dataset.Node) {
		n.Targets["web"] = dataset.Target{Expect: dataset.ExpectStarted, ID: "b", Version: v(20)}
		n.Services["web"] = dataset.Instance{Avail: dataset.StatusUp}
	}, []string{"web"}, nil, nil)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: d2, Changes: ch2}, t0)
	if got := c.Target("web"); got.ID != "a" {
		t.Fatalf("a target not listed in the changes was looked at: %+v", got)
	}
	if !c.inc.Dirty["web"] || len(c.inc.Dirty) != 1 {
		t.Fatalf("dirty %v, want web", c.inc.Dirty)
	}

	// changes based on a copy the core does not hold: whole
	d3, ch3 := datasettest.Next(d1, func(n *dataset.Node) {}, nil, nil, nil)
	d3.Targets = d2.Targets
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: d3, Changes: ch3}, t0)
	if got := c.Target("web"); got.ID != "b" {
		t.Fatalf("data based on another copy was not taken whole: target %+v", got)
	}
}

// An entry of a peer that did not change merges again once this node's
// state changed so that it may now apply (the merge era): a target of a
// service this node did not know is adopted once it knows it, and a
// target adopted, then rolled back with a failed write, is adopted again
// on the peer's next change, though neither is listed.
func TestPeerDataMergesWholeAfterStateChange(t *testing.T) {
	c := maNode(t, "n1", "", false, t0)
	v := func(n uint64) dataset.Version { return dataset.Version{Counter: n, Origin: "n2"} }
	d0 := maPeer("n2", false, false)
	d0.Targets = map[string]dataset.Target{
		"db":  {Expect: dataset.ExpectStopped, ID: "db1", Version: v(10)},
		"web": {Expect: dataset.ExpectStopped, ID: "web1", Version: v(11)},
	}
	maHear(c, d0, t0)
	maHear(c, maPeer("n3", false, false), t0)
	c.Ready()
	if c.Target("db").ID != "" || c.Target("web").ID != "web1" {
		t.Fatalf("targets db %+v web %+v, want web's only (db is not known here)", c.Target("db"), c.Target("web"))
	}
	c.install("db")
	d1, ch1 := datasettest.Next(d0, func(n *dataset.Node) { n.Services["web"] = dataset.Instance{Avail: dataset.StatusUp} }, []string{"web"}, nil, nil)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: d1, Changes: ch1}, t0)
	if c.Target("db").ID != "db1" {
		t.Fatalf("the target of a service known since was not adopted: %+v", c.Target("db"))
	}
	// a failed write rolls the state back before the adoption
	c.Ready()
	st := State{Services: map[string]ServiceState{"web": {}, "db": {}}}
	c.restore(st, nil)
	if c.Target("web").ID != "" {
		t.Fatal("the state was not rolled back")
	}
	d2, ch2 := datasettest.Next(d1, func(n *dataset.Node) { n.Services["web"] = dataset.Instance{Avail: dataset.StatusDown} }, []string{"web"}, nil, nil)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: d2, Changes: ch2}, t0)
	if c.Target("web").ID != "web1" || c.Target("db").ID != "db1" {
		t.Fatalf("after the roll back: web %+v db %+v, want both adopted again", c.Target("web"), c.Target("db"))
	}
}

// A peer's config whose write failed here is written again at the peer's
// next change, though the config did not change (the merge era).
func TestPeerConfigWrittenAgainAfterFailedWrite(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	d.fail = errors.New("disk full")
	d0 := &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1, Services: map[string]dataset.Instance{},
		Configs: map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), "a", map[string]uint64{"n2": 5})}}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerUp}, t0)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: d0}, t0)
	if rd := d.drive(t0); len(rd.Configs) != 1 || d.svcs["web"] != nil {
		t.Fatalf("got configs %+v, want one write of web, failed", rd.Configs)
	}
	d.fail = nil
	d1, ch1 := datasettest.Next(d0, func(n *dataset.Node) { n.Services["db"] = dataset.Instance{Avail: dataset.StatusDown} }, []string{"db"}, nil, nil)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: d1, Changes: ch1}, t0)
	if rd := d.drive(t0); len(rd.Configs) != 1 || d.svcs["web"] == nil {
		t.Fatalf("got configs %+v, want web written again", rd.Configs)
	}
}
