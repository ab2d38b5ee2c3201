package view

import (
	"testing"
	"time"

	"haven/dataset"
)

func TestStatus(t *testing.T) {
	t0 := time.Unix(1000, 0)
	grace := 60 * time.Second
	maint := &dataset.Node{Monitor: dataset.NodeMaintenance}
	idle := &dataset.Node{Monitor: dataset.NodeIdle}
	shut := &dataset.Node{Monitor: dataset.NodeShutting}
	cases := []struct {
		name string
		p    Peer
		now  time.Time
		want dataset.NodeStatus
	}{
		{"never heard", Peer{}, t0, dataset.NodeStUnknown},
		{"heard, no data yet", Peer{Up: true}, t0, dataset.NodeUp},
		{"up", Peer{Data: idle, Up: true}, t0, dataset.NodeUp},
		{"silent", Peer{Data: idle}, t0, dataset.NodeDown},
		{"maintenance, heard", Peer{Data: maint, Up: true, MaintSince: t0}, t0.Add(2 * grace), dataset.NodeStMaint},
		{"maintenance, silent within grace", Peer{Data: maint, MaintSince: t0}, t0.Add(grace - time.Millisecond), dataset.NodeStMaint},
		{"maintenance, silent past grace", Peer{Data: maint, MaintSince: t0}, t0.Add(grace), dataset.NodeDown},
		{"shutting, heard", Peer{Data: shut, Up: true}, t0, dataset.NodeStShutting},
		{"shutting, silent", Peer{Data: shut}, t0, dataset.NodeDown},
	}
	for _, c := range cases {
		if got := Status(c.p, c.now, grace); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestNoteDataStartsTheGraceOnce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	maint := &dataset.Node{Monitor: dataset.NodeMaintenance}
	p := NoteData(Peer{}, maint, t0)
	p = NoteData(p, maint, t0.Add(10*time.Second))
	if !p.MaintSince.Equal(t0) {
		t.Fatalf("MaintSince %v, want %v (the first announcement)", p.MaintSince, t0)
	}
	p = NoteData(p, &dataset.Node{Monitor: dataset.NodeIdle}, t0.Add(20*time.Second))
	if !p.MaintSince.IsZero() {
		t.Fatal("MaintSince kept after the peer left maintenance")
	}
}

func TestRejoin(t *testing.T) {
	t0 := time.Unix(1000, 0)
	g := 90 * time.Second
	if got := Rejoin(0, t0, t0, g); got != RejoinDone {
		t.Errorf("all heard: got %v, want done", got)
	}
	if got := Rejoin(1, t0, t0.Add(g-time.Millisecond), g); got != StayRejoin {
		t.Errorf("missing within grace: got %v, want stay", got)
	}
	if got := Rejoin(1, t0, t0.Add(g), g); got != RejoinFreeze {
		t.Errorf("missing at grace end: got %v, want freeze", got)
	}
}

func TestCompatOK(t *testing.T) {
	peers := map[string]Peer{
		"n2": {Up: true, Data: &dataset.Node{Compat: 1}},
		"n3": {Up: false, Data: &dataset.Node{Compat: 2}}, // down: does not count
	}
	if !CompatOK(1, peers) {
		t.Fatal("a down peer's compat counted")
	}
	peers["n3"] = Peer{Up: true, Data: &dataset.Node{Compat: 2}}
	if CompatOK(1, peers) {
		t.Fatal("a live peer with compat 2 not seen as a disagreement")
	}
}

func TestActionTarget(t *testing.T) {
	cases := []struct {
		action, want string
		ok           bool
	}{
		{"start", "started", true}, {"stop", "stopped", true}, {"freeze", "frozen", true},
		{"thaw", "thawed", true}, {"takeover", "placed@n1", true}, {"switch", "placed@n2", true},
		{"giveback", "placed", true}, {"abort", "none", false}, {"clear", "none", false},
	}
	for _, c := range cases {
		got, ok := ActionTarget(c.action, "n1", "n2")
		if ok != c.ok || got.String() != c.want {
			t.Errorf("ActionTarget(%s) = %s, %v; want %s, %v", c.action, got, ok, c.want, c.ok)
		}
	}
}

func TestSnapshotViews(t *testing.T) {
	t0 := time.Unix(1000, 0)
	in := Input{
		Now:   t0,
		Local: dataset.Node{Name: "n1", Monitor: dataset.NodeMaintenance},
		Peers: map[string]Peer{
			"n2": {Up: true, Data: &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle}},
			"n3": {},
		},
		MaintenanceGrace: time.Minute,
		ClusterNodes:     []string{"n3", "n1", "n2"},
		Compat:           true,
	}
	s := Snapshot(in)
	want := map[string]dataset.NodeStatus{"n1": dataset.NodeStMaint, "n2": dataset.NodeUp, "n3": dataset.NodeStUnknown}
	for n, st := range want {
		if got := s.Nodes[n].Status; got != st {
			t.Errorf("%s: status %s, want %s", n, got, st)
		}
	}
	if s.Nodes["n3"].Data.Name != "n3" {
		t.Error("a never-heard peer has no named empty data")
	}
	if s.ClusterNodes[0] != "n1" || s.Local != "n1" || !s.Compat {
		t.Errorf("snapshot %+v: want sorted members, local n1, compat", s)
	}
}

// A peer that was lost and is heard again counts its old instances as
// unknown until its data is heard again: no node treats the
// pre-crash data of a returning node as a running instance.
func TestReturningPeerDataIsUnknownUntilHeard(t *testing.T) {
	t0 := time.Unix(1000, 0)
	old := &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Services: map[string]dataset.Instance{
		"web": {Avail: dataset.StatusUp, Overall: dataset.StatusUp, PlacementLeader: true},
	}}
	p := NoteData(Peer{}, old, t0)
	p = NoteDown(p)
	p.Up = true // heard again: the heartbeat's Up, before any new data
	in := Input{Now: t0, Local: dataset.Node{Name: "n1"}, Peers: map[string]Peer{"n2": p}, ClusterNodes: []string{"n1", "n2"}}
	s := Snapshot(in)
	if i := s.Nodes["n2"].Data.Services["web"]; i.Avail != dataset.StatusUnknown || i.PlacementLeader {
		t.Fatalf("returning peer before new data: web %s leader %v, want unknown, not leader", i.Avail, i.PlacementLeader)
	}
	if old.Services["web"].Avail != dataset.StatusUp {
		t.Fatal("the snapshot changed the peer's data in place")
	}
	p = NoteData(p, &dataset.Node{Name: "n2", Services: map[string]dataset.Instance{"web": {Avail: dataset.StatusDown}}}, t0)
	in.Peers["n2"] = p
	if i := Snapshot(in).Nodes["n2"].Data.Services["web"]; i.Avail != dataset.StatusDown {
		t.Fatalf("after new data: web %s, want down", i.Avail)
	}
}
