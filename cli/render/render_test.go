package render

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/NAME.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./render -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s: got\n%s\nwant\n%s", path, got, want)
	}
}

// Builders keep the fixtures short.

func node(status dataset.NodeStatus, compat int, load float64) dataset.NodeInfo {
	return dataset.NodeInfo{Status: status, Monitor: dataset.NodeIdle, Compat: compat, Load15: load}
}

func inst(avail dataset.Status, state dataset.MonitorState, localExpect string, leader bool) dataset.Instance {
	i := dataset.Instance{
		Avail: avail, Overall: avail,
		Monitor: dataset.InstanceMonitor{State: state, GlobalExpect: "none", LocalExpect: localExpect},
		Resources: map[string]dataset.Resource{
			"app#web": {Status: avail, Label: "/srv/web/bin/start", Monitor: true, RestartRemaining: 2},
			"ip#vip":  {Status: avail, Label: "192.168.10.50@eth0"},
		},
	}
	if leader {
		i.PlacementLeader = true
		i.Flags = "L"
	}
	return i
}

func svc(avail dataset.Status, nodes []string, instances map[string]dataset.Instance) dataset.ServiceStatus {
	return dataset.ServiceStatus{
		Avail: avail, Overall: avail, Frozen: "thawed", Orchestrate: "ha",
		Placement: "nodes order", PlacementState: "optimal", GlobalExpect: "none",
		Nodes: nodes, Instances: instances,
	}
}

var n123 = []string{"n1", "n2", "n3"}

func threeNodes() map[string]dataset.NodeInfo {
	return map[string]dataset.NodeInfo{
		"n1": node(dataset.NodeUp, 1, 0.3),
		"n2": node(dataset.NodeUp, 1, 0.12),
		"n3": node(dataset.NodeUp, 1, 1.75),
	}
}

func cases() map[string]*dataset.ClusterStatus {
	cs := map[string]*dataset.ClusterStatus{}

	cs["one_node"] = &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   map[string]dataset.NodeInfo{"n1": node(dataset.NodeUp, 1, 0.05)},
		Services: map[string]dataset.ServiceStatus{
			"web": svc(dataset.StatusUp, []string{"n1"}, map[string]dataset.Instance{
				"n1": inst(dataset.StatusUp, dataset.Idle, "started", true),
			}),
		},
		Local: "n1",
	}

	// A failover service up on n1, n2 ready to take over (e.g. after a
	// takeover request), n3 idle down; a second service down everywhere.
	three := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"web": svc(dataset.StatusUp, n123, map[string]dataset.Instance{
				"n1": inst(dataset.StatusUp, dataset.Idle, "started", true),
				"n2": inst(dataset.StatusDown, dataset.Ready, "none", false),
				"n3": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
			"db": svc(dataset.StatusUp, []string{"n2", "n3"}, map[string]dataset.Instance{
				"n2": inst(dataset.StatusUp, dataset.Idle, "started", true),
				"n3": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
		},
		Local: "n2",
		Heartbeat: map[string]dataset.HBPeer{
			"n1": {Up: true, LastHeardMs: 300, Gen: 42},
			"n3": {Up: false, LastHeardMs: 15200, Gen: 7},
		},
	}
	cs["three_nodes_failover"] = three

	// n2 frozen, n3 down; its instance data is stale.
	frozen := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"web": svc(dataset.StatusUp, n123, map[string]dataset.Instance{
				"n1": inst(dataset.StatusUp, dataset.Idle, "started", true),
				"n2": inst(dataset.StatusDown, dataset.Idle, "none", false),
				"n3": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
		},
		Local: "n1",
	}
	n2 := frozen.Nodes["n2"]
	n2.Frozen = true
	frozen.Nodes["n2"] = n2
	n3 := frozen.Nodes["n3"]
	n3.Status, n3.Monitor = dataset.NodeDown, dataset.NodeIdle
	frozen.Nodes["n3"] = n3
	w := frozen.Services["web"]
	i2 := w.Instances["n2"]
	i2.Frozen, i2.Flags = true, "F"
	w.Instances["n2"] = i2
	w.Frozen = "mixed"
	frozen.Services["web"] = w
	cs["frozen_node"] = frozen

	// n2 froze itself at the end of its rejoin grace period: svcmon says
	// why, below the Nodes grid. db runs on n2 and n3 only: n1 is not one
	// of its nodes ("-"), and its instance on n3 has no status ("/" n/a).
	self := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"db": svc(dataset.StatusUp, []string{"n2", "n3"}, map[string]dataset.Instance{
				"n2": inst(dataset.StatusUp, dataset.Idle, "started", true),
				"n3": inst(dataset.StatusNA, dataset.Idle, "none", false),
			}),
		},
		Local: "n1",
	}
	editNode(self, "n2", func(n *dataset.NodeInfo) {
		n.Frozen = true
		n.FrozenReason = "rejoin grace period (90s) ended with nodes never heard from: n3: node frozen so that services never start twice (nodemgr thaw resumes)"
	})
	editNode(self, "n3", func(n *dataset.NodeInfo) { n.Frozen, n.FrozenReason = true, "admin freeze" })
	cs["self_frozen_na"] = self

	// n1, the owner of web, crashed: n2 took over; n1's last data is stale
	// (never a leader), and db's start failed on n2 with its cause.
	crash := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"web": svc(dataset.StatusUp, n123, map[string]dataset.Instance{
				"n1": inst(dataset.StatusUnknown, dataset.Idle, "started", false),
				"n2": inst(dataset.StatusUp, dataset.Idle, "started", true),
				"n3": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
			"db": svc(dataset.StatusDown, []string{"n2"}, map[string]dataset.Instance{
				"n2": inst(dataset.StatusDown, dataset.StartFailed, "none", false),
			}),
		},
		Local: "n2",
		Heartbeat: map[string]dataset.HBPeer{
			"n1": {Up: false, LastHeardMs: 12345, Gen: 42},
			"n3": {Up: true, LastHeardMs: 200, Gen: 7},
		},
	}
	c1 := crash.Nodes["n1"]
	c1.Status = dataset.NodeDown
	crash.Nodes["n1"] = c1
	cw := crash.Services["web"]
	s1 := cw.Instances["n1"]
	s1.Stale, s1.AgeMs = true, 12345
	s1.Resources["app#web"] = dataset.Resource{Status: dataset.StatusUp, Label: "/srv/web/bin/start", Monitor: true, Log: "web started on n1"}
	s1.Resources["ip#vip"] = dataset.Resource{Status: dataset.StatusUp, Label: "192.168.10.50@eth0"}
	cw.Instances["n1"] = s1
	crash.Services["web"] = cw
	dbi := crash.Services["db"].Instances["n2"]
	dbi.Monitor.Error = "app#web: start failed: exit code 1: /srv/web: no such file or directory"
	crash.Services["db"].Instances["n2"] = dbi
	cs["crashed_owner"] = crash

	// A rolling upgrade: n1 runs compat 2, the others 1; n2 in rejoin.
	compat := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: false},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"ha1": svc(dataset.StatusUp, n123, map[string]dataset.Instance{
				"n1": inst(dataset.StatusUp, dataset.Idle, "started", true),
				"n2": inst(dataset.StatusDown, dataset.Idle, "none", false),
				"n3": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
		},
	}
	n1 := compat.Nodes["n1"]
	n1.Compat = 2
	compat.Nodes["n1"] = n1
	n2 = compat.Nodes["n2"]
	n2.Monitor = dataset.NodeRejoin
	compat.Nodes["n2"] = n2
	cs["compat_warn"] = compat

	// Services in warn: "api" has a resource in warn (avail warn);
	// "web" is up but an optional resource is down (overall warn).
	warn := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"api": svc(dataset.StatusWarn, []string{"n1", "n2"}, map[string]dataset.Instance{
				"n1": inst(dataset.StatusWarn, dataset.Idle, "started", true),
				"n2": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
			"web": optionalDisabled(),
		},
		Local: "n1",
	}
	cs["warn_service"] = warn

	// Placement leader marks beside non-idle states: web is starting on
	// its leader n1; db failed to start on n2 and n3 (its leader) is ready
	// after an admin "start"; placement is non-optimal.
	lead := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"web": svc(dataset.StatusDown, n123, map[string]dataset.Instance{
				"n1": inst(dataset.StatusDown, dataset.Starting, "started", true),
				"n2": inst(dataset.StatusDown, dataset.Idle, "none", false),
				"n3": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
			"db": svc(dataset.StatusDown, []string{"n3", "n2"}, map[string]dataset.Instance{
				"n2": inst(dataset.StatusDown, dataset.StartFailed, "none", false),
				"n3": inst(dataset.StatusDown, dataset.Ready, "none", true),
			}),
		},
		Local: "n3",
	}
	db := lead.Services["db"]
	db.PlacementState, db.GlobalExpect = "non-optimal", "started"
	lead.Services["db"] = db
	cs["leader_non_idle"] = lead

	// n2 hears n1 but its data does not arrive (stale: web's instance
	// there is "? stale"), and two daemons run as n3 (DUPLICATE): web,
	// up nowhere known, may run on either: unknown, not down.
	trust := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
		Nodes:   threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"web": svc(dataset.StatusUnknown, n123, map[string]dataset.Instance{
				"n1": {Avail: dataset.StatusUnknown, Overall: dataset.StatusUnknown, Stale: true, AgeMs: 4200,
					Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
				"n2": inst(dataset.StatusDown, dataset.Idle, "none", false),
				"n3": {Avail: dataset.StatusUnknown, Overall: dataset.StatusUnknown, Stale: true, AgeMs: 200,
					Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
			}),
		},
		Local: "n2",
		Heartbeat: map[string]dataset.HBPeer{
			"n1": {Up: true, LastHeardMs: 300, Gen: 40, Stale: true, AnnouncedGen: 42, BehindMs: 4200},
			"n3": {Up: true, LastHeardMs: 200, Gen: 7, Duplicate: true},
		},
	}
	cs["stale_and_duplicate"] = trust

	// n1 lost the quorum (cut off, a one-vote arbitrator that no longer
	// answers): its split_action froze it, apart from an admin's freeze
	// of n3; the frozen row and the note below say which is which.
	split := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "prod", Compat: true, Quorum: true, QuorumState: &dataset.QuorumInfo{
			SplitAction: "stop", Votes: 1, Total: 4, Live: []string{"n1"}, Lost: true,
			Arbitrators: []dataset.ArbitratorState{{Name: "a1", Weight: 1, OneVote: true, Silent: true, Detail: "no answer within 1s"}},
			LastVote:    "vote again, a one-vote arbitrator's lease ended unrenewed: quorum lost: 1 of 4 votes (live n1; arbitrators answering: none; need more than 2)",
			LastVoteAt:  time.Date(2030, 1, 1, 0, 0, 9, 0, time.UTC),
			Gates:       []dataset.GateState{{Node: "n2", Blocked: "this node lost the quorum"}},
		}},
		Nodes: threeNodes(),
		Services: map[string]dataset.ServiceStatus{
			"web": svc(dataset.StatusDown, n123, map[string]dataset.Instance{
				"n1": inst(dataset.StatusDown, dataset.Idle, "none", false),
				"n2": {Avail: dataset.StatusUnknown, Overall: dataset.StatusUnknown, Stale: true, AgeMs: 9000,
					Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
				"n3": inst(dataset.StatusDown, dataset.Idle, "none", false),
			}),
		},
		Local: "n1",
	}
	editNode(split, "n1", func(n *dataset.NodeInfo) {
		n.SplitFrozen = true
		n.SplitFrozenReason = "quorum lost (1 of 4 votes): split_action stop: every local instance stopped, node frozen until it holds the quorum again or the cluster is whole (nodemgr thaw ends it sooner)"
	})
	editNode(split, "n2", func(n *dataset.NodeInfo) { n.Status = dataset.NodeDown })
	editNode(split, "n3", func(n *dataset.NodeInfo) { n.Frozen, n.FrozenReason = true, "admin freeze" })
	cs["split_frozen"] = split
	return cs
}

// editNode changes the node name of st through edit.
func editNode(st *dataset.ClusterStatus, name string, edit func(*dataset.NodeInfo)) {
	n := st.Nodes[name]
	edit(&n)
	st.Nodes[name] = n
}

// optionalDisabled is a service up on n1 whose optional resource is down
// and whose disabled resource is n/a.
func optionalDisabled() dataset.ServiceStatus {
	s := svc(dataset.StatusUp, []string{"n1", "n2"}, map[string]dataset.Instance{
		"n1": inst(dataset.StatusUp, dataset.Idle, "started", true),
		"n2": inst(dataset.StatusDown, dataset.Idle, "none", false),
	})
	s.Overall = dataset.StatusWarn
	i := s.Instances["n1"]
	i.Overall = dataset.StatusWarn
	i.Resources["fs#cache"] = dataset.Resource{Status: dataset.StatusDown, Label: "/srv/cache", Optional: true,
		Log: "mount: /srv/cache: special device /dev/vg/cache does not exist"}
	i.Resources["app#batch"] = dataset.Resource{Status: dataset.StatusNA, Label: "/srv/batch/bin/run", Disabled: true}
	s.Instances["n1"] = i
	return s
}

func TestGolden(t *testing.T) {
	for name, st := range cases() {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("$ svcmon\n")
			b.WriteString(Svcmon(st, SvcmonOptions{}))
			for _, s := range slices.Sorted(maps.Keys(st.Services)) {
				b.WriteString("\n$ svcmgr -s " + s + " print status\n")
				b.WriteString(StatusTree(s, st.Services[s], st.Local))
			}
			golden(t, name, b.String())
		})
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Colours must not move a single column.
func TestColorKeepsLayout(t *testing.T) {
	for name, st := range cases() {
		plain := Svcmon(st, SvcmonOptions{})
		col := Svcmon(st, SvcmonOptions{Color: true})
		if strings.Contains(plain, "\x1b") {
			t.Errorf("%s: escape codes with colours off", name)
		}
		if !strings.Contains(col, "\x1b") {
			t.Errorf("%s: no escape codes with colours on", name)
		}
		if got := ansi.ReplaceAllString(col, ""); got != plain {
			t.Errorf("%s: coloured layout differs:\n%s\nwant\n%s", name, got, plain)
		}
	}
}

func TestSelector(t *testing.T) {
	st := cases()["three_nodes_failover"]
	out := Svcmon(st, SvcmonOptions{Selector: func(n string) bool { return n == "db" }})
	if strings.Contains(out, " web ") || !strings.Contains(out, " db ") {
		t.Errorf("selector db: got\n%s", out)
	}
}

func TestNodeStatus(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	d := &api.DaemonStatus{
		Node: "n1", Pid: 4242, Started: now.Add(-(3*time.Hour + 25*time.Minute + 7*time.Second)),
		Compat: 1, Monitor: "idle",
		HB: api.HBStatus{Addr: "0.0.0.0:10000", Listening: true, Timeout: "15s", Interval: "5s", Sent: 12034, Received: 24011},
		Peers: []api.PeerStatus{
			{Name: "n3", Addr: "10.0.0.3:10000", Status: "down", LastHeard: now.Add(-2*time.Minute - 5*time.Second), Gen: 88},
			{Name: "n2", Addr: "10.0.0.2:10000", Status: "up", LastHeard: now.Add(-1200 * time.Millisecond), Gen: 1504},
			{Name: "n4", Addr: "10.0.0.4:10000", Status: "unknown"},
		},
	}
	golden(t, "node_status", "$ nodemgr print status\n"+NodeStatus(d, now))
	// frozen by an admin, and by its split_action: two lines, each with
	// its reason
	d.Frozen, d.FrozenReason = true, "admin freeze"
	d.SplitFrozen, d.SplitFrozenReason = true, "quorum lost (1 of 3 votes): split_action stop"
	out := NodeStatus(d, now)
	for _, want := range []string{"frozen        yes: admin freeze (nodemgr thaw ends it)",
		"split freeze  yes: quorum lost (1 of 3 votes): split_action stop"} {
		if !strings.Contains(out, want) {
			t.Errorf("frozen node's status lacks %q:\n%s", want, out)
		}
	}
	// a node alone in its cluster runs no heartbeat: its address is not
	// shown as if something listened there
	alone := &api.DaemonStatus{Node: "n1", HB: api.HBStatus{Addr: "0.0.0.0:10000", Timeout: "15s", Interval: "5s"}}
	if out := NodeStatus(alone, now); !strings.Contains(out, "addr                  off: a single node") {
		t.Errorf("a single node's heartbeat:\n%s", out)
	}
	// two links: each listens on its own address, not hb.addr's wildcard
	two := &api.DaemonStatus{Node: "n1", HB: api.HBStatus{Addr: "10.0.0.1:10000", Links: []string{"10.0.0.1:10000", "10.1.0.1:10000"},
		Listening: true, Timeout: "15s", Interval: "5s"}}
	if out := NodeStatus(two, now); !strings.Contains(out, "addr                  10.0.0.1:10000, 10.1.0.1:10000 (a link each)") {
		t.Errorf("a node of two links:\n%s", out)
	}
	// per-node keys: frames that claim a member without its node key are
	// said apart from the other rejected ones
	two.HB.Rejected, two.HB.NotOwnKey = 7, 3
	if out := NodeStatus(two, now); !strings.Contains(out, "rejected              7 (3 NOT SEALED WITH THEIR SENDER'S NODE KEY)") {
		t.Errorf("frames not sealed with their sender's key:\n%s", out)
	}
}

func TestServiceList(t *testing.T) {
	got := ServiceList([]api.ServiceEntry{
		{Name: "web", Avail: "up", Overall: "warn", Nodes: n123},
		{Name: "db", Avail: "down", Overall: "down", Nodes: []string{"n2", "n3"}},
		{Name: "batch", Avail: "n/a", Overall: "n/a"},
	})
	golden(t, "service_list", "$ svcmgr ls\n"+got)
}

func TestAge(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{1200 * time.Millisecond, "1.2s ago"},
		{-time.Second, "0.0s ago"},
		{65 * time.Second, "1m05s ago"},
		{2*time.Hour + 3*time.Minute, "2h03m ago"},
		{50 * time.Hour, "2d2h ago"},
	} {
		if got := Age(now.Add(-tc.ago), now); got != tc.want {
			t.Errorf("Age(-%v) = %q, want %q", tc.ago, got, tc.want)
		}
	}
	if got := Age(time.Time{}, now); got != "never" {
		t.Errorf("Age(zero) = %q, want never", got)
	}
}
