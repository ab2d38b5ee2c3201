package daemon

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"haven/dataset"
	"haven/internal/clock"
	"haven/node"
	"haven/quorum"
)

// The counters and durations come from the events, at the times the loop
// gives (fake clock here); a stop that ends twice (ok, then a resource
// still up) is one stop, one failure, one duration.
func TestMetricsFromEvents(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	m := newMetrics("n1", "c", 1)
	ev := func(e node.Event, after time.Duration) {
		clk.Advance(after)
		m.observe(e, clk.Now())
	}
	ev(node.ActionBegin{Svc: "web", Action: "start"}, 0)
	ev(node.ActionEnd{Svc: "web", Action: "start"}, 2*time.Second)
	ev(node.Failover{Svc: "web", From: "n2"}, 0)
	ev(node.ActionBegin{Svc: "web", Action: "stop"}, time.Minute)
	ev(node.ActionEnd{Svc: "web", Action: "stop"}, 500*time.Millisecond)
	ev(node.ActionEnd{Svc: "web", Action: "stop", Err: "app#main: its check still says up after its stop"}, 0)
	ev(node.ResourceFailed{Svc: "web", RID: "app#main", Remaining: 1}, 0)
	ev(node.ActionBegin{Svc: "web", Action: "restart app#main"}, 0) // the restart ladder's
	ev(node.ActionEnd{Svc: "web", Action: "restart", Err: "boom"}, time.Second)
	ev(node.LadderGaveUp{Svc: "web", Reason: "app#main: restarts spent"}, 0)
	ev(node.MonitorActionTaken{Svc: "web", Action: "switch"}, 0)
	ev(node.ActionBegin{Svc: "web", Action: "restart"}, time.Minute) // svcmgr restart: the whole instance
	ev(node.ActionEnd{Svc: "web", Action: "restart"}, time.Second)
	for _, c := range []struct {
		name string
		want float64
	}{
		{"haven_service_starts_total", 1}, {"haven_service_start_failures_total", -1},
		{"haven_service_stops_total", 1}, {"haven_service_stop_failures_total", 1},
		{"haven_service_restarts_total", 2}, {"haven_service_restart_failures_total", 1},
		{"haven_service_failovers_total", 1},
		{"haven_service_start_duration_seconds", 1}, {"haven_service_stop_duration_seconds", 1},
		{"haven_service_restart_duration_seconds", 2}, {"haven_service_restarts_spent_total", 1},
	} {
		if got := metricValue(t, m, c.name, "service", "web"); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"haven_events_total", []string{"kind", "action_end"}, 5},
		{"haven_resource_restarts_total", []string{"service", "web", "rid", "app#main"}, 1},
		{"haven_resource_failures_total", []string{"service", "web", "rid", "app#main"}, 1},
		{"haven_service_monitor_actions_total", []string{"service", "web", "action", "switch"}, 1},
	} {
		if got := metricValue(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	mfs, _ := m.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "haven_service_start_duration_seconds" {
			if s := mf.GetMetric()[0].GetHistogram().GetSampleSum(); s != 2 {
				t.Errorf("start duration sum %v, want 2 (s)", s)
			}
		}
	}
}

// The states are one-hot gauges over the known states, from the copy the
// loop keeps when it publishes; a state outside the list shows too.
func TestMetricsOneHotStates(t *testing.T) {
	m := newMetrics("n1", "c", 1)
	m.setLocal(dataset.Node{Monitor: dataset.NodeRejoin, Services: map[string]dataset.Instance{
		"web": {Avail: dataset.StatusUp, Monitor: dataset.InstanceMonitor{State: dataset.Idle}, Frozen: true},
		"db":  {Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: "wait fence"}},
	}}, noFlex)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"haven_service_avail", []string{"service", "web", "state", "up"}, 1},
		{"haven_service_avail", []string{"service", "web", "state", "down"}, 0},
		{"haven_service_avail", []string{"service", "db", "state", "down"}, 1},
		{"haven_service_monitor_state", []string{"service", "web", "state", "idle"}, 1},
		{"haven_service_monitor_state", []string{"service", "web", "state", "start failed"}, 0},
		{"haven_service_monitor_state", []string{"service", "db", "state", "wait fence"}, 1},
		{"haven_service_monitor_state", []string{"service", "db", "state", "idle"}, 0},
		{"haven_service_frozen", []string{"service", "web"}, 1},
		{"haven_node_monitor_state", []string{"state", "rejoin"}, 1},
		{"haven_node_monitor_state", []string{"state", "idle"}, 0},
		{"haven_node_frozen", nil, 0},
		{"haven_node_split_frozen", nil, 0},
		{"haven_node_info", []string{"node", "n1", "cluster", "c", "compat", "1"}, 1},
		{"haven_heartbeat_peers_up", nil, 0}, // no heartbeat (a lone node): 0
		{"haven_heartbeat_frames_sent_total", nil, -1},
	} {
		if got := metricValue(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// a service gone from the dataset goes from the metrics
	m.setLocal(dataset.Node{Monitor: dataset.NodeIdle, Services: map[string]dataset.Instance{}}, noFlex)
	if got := metricValue(t, m, "haven_service_avail", "service", "web"); got != -1 {
		t.Errorf("haven_service_avail of a deleted service = %v, want absent", got)
	}
}

func noFlex(string) bool { return false }

// A flex service shows its instances up and its target, from its
// flex_instances events, while it has an instance here; a failover
// service has neither.
func TestMetricsFlexCounts(t *testing.T) {
	m := newMetrics("n1", "c", 1)
	isFlex := func(svc string) bool { return svc == "app" }
	n := dataset.Node{Monitor: dataset.NodeIdle, Services: map[string]dataset.Instance{
		"app": {Avail: dataset.StatusUp}, "db": {Avail: dataset.StatusUp},
	}}
	m.setLocal(n, isFlex)
	if got := metricValue(t, m, "haven_service_instances_up", "service", "app"); got != -1 {
		t.Fatalf("before any count: %v, want absent", got)
	}
	m.observe(node.FlexInstances{Svc: "app", Up: 2, Target: 3, Nodes: []string{"n1", "n2"}}, time.Now())
	m.observe(node.FlexInstances{Svc: "db", Up: 1, Target: 1}, time.Now()) // not flex here: ignored
	for _, c := range []struct {
		name, svc string
		want      float64
	}{
		{"haven_service_instances_up", "app", 2},
		{"haven_service_instances_target", "app", 3},
		{"haven_service_instances_up", "db", -1},
		{"haven_service_instances_target", "db", -1},
	} {
		if got := metricValue(t, m, c.name, "service", c.svc); got != c.want {
			t.Errorf("%s{service=%s} = %v, want %v", c.name, c.svc, got, c.want)
		}
	}
	m.setLocal(dataset.Node{Monitor: dataset.NodeIdle, Services: map[string]dataset.Instance{}}, isFlex)
	if got := metricValue(t, m, "haven_service_instances_up", "service", "app"); got != -1 {
		t.Errorf("a deleted flex service: %v, want absent", got)
	}
}

// BenchmarkScrape100Services: the cost of one scrape (text format) of a
// node hosting 100 services, and of the loop's copy of their states.
func BenchmarkScrape100Services(b *testing.B) {
	m := newMetrics("n1", "c", 1)
	n := dataset.Node{Monitor: dataset.NodeIdle, Services: map[string]dataset.Instance{}}
	for i := 0; i < 100; i++ {
		n.Services[fmt.Sprintf("svc%03d", i)] = dataset.Instance{Avail: dataset.StatusUp, Monitor: dataset.InstanceMonitor{State: dataset.Idle}}
	}
	m.setLocal(n, noFlex)
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	b.Run("scrape", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
			b.SetBytes(int64(w.Body.Len()))
		}
	})
	b.Run("setLocal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m.setLocal(n, noFlex)
		}
	})
}

// The quorum's metrics: the last vote (absent before the first), the votes
// by verdict, the arbitrators' answers, the fences and the stalls.
func TestMetricsOfTheQuorum(t *testing.T) {
	m := newMetrics("n1", "c", 1)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := metricValue(t, m, "haven_quorum_last_vote_survive"); got != -1 {
		t.Fatalf("last vote before any vote: %v, want absent", got)
	}
	m.observe(node.QuorumVote{Verdict: quorum.Verdict{Survive: true, Votes: 2, Total: 3}, Lost: []string{"n3"}}, now)
	m.observe(node.QuorumVote{Verdict: quorum.Verdict{Votes: 1, Total: 3}, Lost: []string{"n2", "n3"}, SplitAction: "stop"}, now.Add(time.Minute))
	m.observe(node.ArbitratorStatus{Name: "a1", OK: true}, now)
	m.observe(node.ArbitratorStatus{Name: "a2"}, now)
	m.observe(node.Fenced{Node: "n3"}, now)
	m.observe(node.FenceFailed{Node: "n3", Err: "exit status 1"}, now)
	m.observe(node.FenceFailed{Node: "n3", Err: "exit status 1"}, now)
	m.observe(node.QuorumStall{Gap: "5s"}, now)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"haven_quorum_last_vote_survive", nil, 0},
		{"haven_quorum_last_vote_votes", nil, 1},
		{"haven_quorum_last_vote_total", nil, 3},
		{"haven_quorum_last_vote_timestamp_seconds", nil, float64(now.Add(time.Minute).Unix())},
		{"haven_quorum_votes_total", []string{"verdict", "survive"}, 1},
		{"haven_quorum_votes_total", []string{"verdict", "lost"}, 1},
		{"haven_arbitrator_up", []string{"arbitrator", "a1"}, 1},
		{"haven_arbitrator_up", []string{"arbitrator", "a2"}, 0},
		{"haven_fence_total", []string{"node", "n3", "result", "ok"}, 1},
		{"haven_fence_total", []string{"node", "n3", "result", "failed"}, 2},
		{"haven_quorum_stalls_total", nil, 1},
	} {
		if got := metricValue(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// A service's rollout shows as a one-hot state and its turns by how they
// stand, and its running instances on this node's config or an older
// one, from its rollout_progress events; a service that never had one
// shows only the counts of configs, once said.
func TestMetricsRollout(t *testing.T) {
	m := newMetrics("n1", "c", 1)
	m.setLocal(dataset.Node{Monitor: dataset.NodeIdle, Services: map[string]dataset.Instance{
		"app": {Avail: dataset.StatusUp}, "db": {Avail: dataset.StatusUp}, "web": {Avail: dataset.StatusUp},
	}}, noFlex)
	m.observe(node.RolloutProgress{Svc: "app", ID: "n1-4", State: dataset.RolloutPaused, OK: 1, Failed: 1, Pending: 1, Current: 1, Old: 2}, time.Now())
	m.observe(node.RolloutProgress{Svc: "db", Current: 1, Old: 1}, time.Now())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"haven_service_rollout_state", []string{"service", "app", "state", "paused"}, 1},
		{"haven_service_rollout_state", []string{"service", "app", "state", "in_progress"}, 0},
		{"haven_service_rollout_state", []string{"service", "app", "state", "done"}, 0},
		{"haven_service_rollout_turns", []string{"service", "app", "turn", "failed"}, 1},
		{"haven_service_rollout_turns", []string{"service", "app", "turn", "pending"}, 1},
		{"haven_service_instances_config", []string{"service", "app", "config", "current"}, 1},
		{"haven_service_instances_config", []string{"service", "app", "config", "old"}, 2},
		{"haven_service_rollout_state", []string{"service", "db", "state", "paused"}, -1},
		{"haven_service_instances_config", []string{"service", "db", "config", "old"}, 1},
		{"haven_service_instances_config", []string{"service", "web", "config", "old"}, -1},
	} {
		if got := metricValue(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	m.observe(node.RolloutProgress{Svc: "app", ID: "n1-4", State: dataset.RolloutDone, OK: 3, Current: 3}, time.Now())
	if got := metricValue(t, m, "haven_service_rollout_state", "service", "app", "state", "done"); got != 1 {
		t.Errorf("done: %v", got)
	}
}
