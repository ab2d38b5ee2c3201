package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"haven/config"
	"haven/dataset"
	"haven/guard"
	"haven/heartbeat"
	"haven/heartbeat/disk"
	"haven/internal/clock"
	"haven/internal/version"
	"haven/node"
)

// The metrics (docs/metrics.md) live in the daemon's own Prometheus
// registry. They are fed two ways, and never read the loop's fields:
//   - the loop hands them what it does: the typed events (counters,
//     durations), the decision pass's duration, and a copy of the local
//     instances' states each time it publishes its dataset (setLocal);
//   - a scrape reads that copy and the heartbeat's own counters
//     (heartbeat.Heartbeat is safe for concurrent use).
//
// So a scrape never waits on the loop, and the loop never waits on a
// scrape (a mutex held for a map copy at most).

// metricsMaxConns bounds the scrapers' connections, metricsPerClient
// those of one address; idle keep-alive connections give way to new ones
// at either cap (connguard.go) and end after metricsIdleTimeout.
const (
	metricsMaxConns    = 16
	metricsPerClient   = 4
	metricsIdleTimeout = 15 * time.Second
	metricsHeaderTime  = 3 * time.Second
)

// The states the one-hot gauges always show (0 or 1); a state outside
// these lists shows too while it is the current one.
var (
	availStates = []dataset.Status{dataset.StatusUp, dataset.StatusDown, dataset.StatusWarn, dataset.StatusNA,
		dataset.StatusStdbyUp, dataset.StatusStdbyDown, dataset.StatusUnknown}
	monitorStates = []dataset.MonitorState{dataset.Idle, dataset.Ready, dataset.Starting, dataset.StartFailed,
		dataset.Restarting, dataset.Stopping, dataset.StopFailed, dataset.Freezing, dataset.Thawing,
		dataset.WaitParents, dataset.WaitChildren, dataset.Tocing}
	nodeMonitorStates = []dataset.NodeMonitor{dataset.NodeIdle, dataset.NodeInit, dataset.NodeRejoin,
		dataset.NodeMaintenance, dataset.NodeShutting, dataset.NodeDraining}
)

// metrics is one daemon's registry and what feeds it.
type metrics struct {
	reg *prometheus.Registry
	// clk is the clock of the heartbeat's times (the daemon's)
	clk clock.Clock

	starts, startFailures *prometheus.CounterVec
	stops, stopFailures   *prometheus.CounterVec
	restarts, restartFail *prometheus.CounterVec
	failovers             *prometheus.CounterVec
	startDur, stopDur     *prometheus.HistogramVec
	restartDur            *prometheus.HistogramVec
	resRestarts           *prometheus.CounterVec // service, rid
	resFailures           *prometheus.CounterVec // service, rid
	restartsSpent         *prometheus.CounterVec
	monitorActions        *prometheus.CounterVec // service, action
	// the quorum: the last vote, the votes by verdict, arbitrators, fences
	voteSurvive, voteVotes, voteTotal, voteAt *prometheus.GaugeVec   // no label: absent before the first vote
	votes                                     *prometheus.CounterVec // verdict
	arbitratorUp                              *prometheus.GaugeVec   // arbitrator
	fences                                    *prometheus.CounterVec // node, result
	stalls                                    prometheus.Counter
	// the node guard: armed (absent before the guard first answered),
	// its firings taken in; guardDeadline is the lease's end on
	// CLOCK_BOOTTIME in ns (0: not armed), set by the loop
	guardArmed    *prometheus.GaugeVec
	guardFired    prometheus.Counter
	guardDeadline atomic.Int64
	decision      prometheus.Histogram
	events        *prometheus.CounterVec
	hookRuns      *prometheus.CounterVec
	hookDropped   *prometheus.CounterVec

	mu    sync.Mutex
	begun map[string]time.Time // "svc\x00action" -> ActionBegin time
	local localState
	// flex are the counts of the flex services (up, target), from their
	// flex_instances events
	flex map[string][2]int
	// rollouts are where each service's rollout stands and its instances
	// on this node's config or an older one, from its rollout_progress
	// events
	rollouts map[string]node.RolloutProgress

	hb atomic.Pointer[heartbeat.Heartbeat]
	// the disk heartbeat ([hb.disk] path; the disk once open: diskstatus.go)
	diskPath string
	disk     atomic.Pointer[disk.Disk]
}

// localState is the copy of the local states a scrape reads.
type localState struct {
	monitor     dataset.NodeMonitor
	frozen      bool
	splitFrozen bool
	svcs        map[string]svcState
}

type svcState struct {
	avail   dataset.Status
	monitor dataset.MonitorState
	frozen  bool
	flex    bool // a flex service (its counts from m.flex)
}

func newMetrics(nodeName, cluster string, compat int) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), begun: map[string]time.Time{}, flex: map[string][2]int{}, rollouts: map[string]node.RolloutProgress{}, clk: clock.Wall}
	svc := []string{"service"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m.starts = counter("haven_service_starts_total", "Starts of the local instance ordered (by the orchestrator, an admin, the daemon).", svc...)
	m.startFailures = counter("haven_service_start_failures_total", "Starts of the local instance that failed.", svc...)
	m.stops = counter("haven_service_stops_total", "Stops of the local instance ordered.", svc...)
	m.stopFailures = counter("haven_service_stop_failures_total", "Stops of the local instance that failed (commands failed, or a resource still up after them).", svc...)
	m.restarts = counter("haven_service_restarts_total", "Restarts ordered here: of a resource by the restart ladder, or of the whole instance (svcmgr restart).", svc...)
	m.restartFail = counter("haven_service_restart_failures_total", "Restarts that failed.", svc...)
	m.resRestarts = counter("haven_resource_restarts_total", "Restarts of a monitored resource by the restart ladder.", "service", "rid")
	m.resFailures = counter("haven_resource_failures_total", "Monitored resources found down where the instance runs (each climbs the restart ladder).", "service", "rid")
	m.restartsSpent = counter("haven_service_restarts_spent_total", "Times the restart ladder gave up on a resource of the service (its restarts spent).", svc...)
	m.monitorActions = counter("haven_service_monitor_actions_total", "monitor_action runs here (freezestop, switch, crash, reboot) after the restarts were spent.", "service", "action")
	m.failovers = counter("haven_service_failovers_total", "Successful starts here after the service last ran on another node (failover events).", svc...)
	m.events = counter("haven_events_total", "Events of the daemon (nodemgr events), by kind.", "kind")
	m.hookRuns = counter("haven_hook_runs_total", "Hook commands run, by hook and result (ok, failed, timeout).", "hook", "result")
	m.hookDropped = counter("haven_hook_dropped_total", "Events not given to a hook because the hook queue was full.", "hook")
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, nil)
	}
	m.voteSurvive = gauge("haven_quorum_last_vote_survive", "1 when this node's last quorum vote kept the quorum (or was skipped, frozen), 0 when it lost; absent before the first vote.")
	m.voteVotes = gauge("haven_quorum_last_vote_votes", "Votes of the last quorum vote: live members plus the weights of the arbitrators that answered; absent before the first vote.")
	m.voteTotal = gauge("haven_quorum_last_vote_total", "Total of the last quorum vote: members plus every arbitrator's weight; absent before the first vote.")
	m.voteAt = gauge("haven_quorum_last_vote_timestamp_seconds", "Unix time of the last quorum vote; absent before the first vote.")
	m.votes = counter("haven_quorum_votes_total", "Quorum votes of this node, by verdict (survive, lost, skipped: a frozen node does not run the race).", "verdict")
	m.arbitratorUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "haven_arbitrator_up",
		Help: "1 when the arbitrator answered its last probe from this node (a one-vote arbitrator: granted this node its vote), 0 when not; absent before the first change."}, []string{"arbitrator"})
	m.fences = counter("haven_fence_total", "Fence commands run by this node, by fenced node and result (ok, failed).", "node", "result")
	m.stalls = prometheus.NewCounter(prometheus.CounterOpts{Name: "haven_quorum_stalls_total",
		Help: "Times this daemon did not run for longer than hb.timeout (paused) and voted as if alone."})
	m.guardArmed = gauge("haven_guard_armed", "1 while the node guard holds a lease (it ends the failover services when the daemon stops renewing it), 0 when not or when it does not answer; absent with node.guard = false.")
	m.guardFired = prometheus.NewCounter(prometheus.CounterOpts{Name: "haven_guard_fired_total",
		Help: "Times the node guard ended this node's failover services because the daemon's lease ran out, as taken in by a daemon (guard_fired)."})
	guardLeft := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "haven_guard_lease_left_seconds",
		Help: "What is left of the node guard's lease: the guard ends the failover services when it reaches 0 unrenewed; 0 when not armed."},
		func() float64 {
			d := m.guardDeadline.Load()
			if d == 0 {
				return 0
			}
			return max(0, float64(d-int64(guard.BootNow()))/1e9)
		})
	actionBuckets := prometheus.ExponentialBuckets(0.05, 2, 12) // 50ms .. 102s
	m.startDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "haven_service_start_duration_seconds",
		Help: "Duration of the starts of the local instance, from the order to the end of its commands.", Buckets: actionBuckets}, svc)
	m.stopDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "haven_service_stop_duration_seconds",
		Help: "Duration of the stops of the local instance, from the order to the end of its commands.", Buckets: actionBuckets}, svc)
	m.restartDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "haven_service_restart_duration_seconds",
		Help: "Duration of the restarts of a resource of the local instance, from the order to the end of its commands.", Buckets: actionBuckets}, svc)
	m.decision = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "haven_decision_pass_duration_seconds",
		Help:    "CPU time of one decision pass of the orchestrator (the node core over the view of the cluster).",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 15)}) // 50µs .. 0.8s
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "haven_node_info",
		Help: "Always 1: this node's name, cluster, version and compat version as labels.",
		ConstLabels: prometheus.Labels{"node": nodeName, "cluster": cluster, "version": version.Version,
			"commit": version.Commit, "compat": strconv.Itoa(compat)}})
	info.Set(1)
	m.reg.MustRegister(m.starts, m.startFailures, m.stops, m.stopFailures, m.restarts, m.restartFail, m.failovers, m.events,
		m.resRestarts, m.resFailures, m.restartsSpent, m.monitorActions,
		m.voteSurvive, m.voteVotes, m.voteTotal, m.voteAt, m.votes, m.arbitratorUp, m.fences, m.stalls,
		m.guardArmed, m.guardFired, guardLeft,
		m.hookRuns, m.hookDropped, m.startDur, m.stopDur, m.restartDur, m.decision, info, stateCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe counts a typed event of the core (on the loop, at now). The
// methods of a nil *metrics do nothing (a Daemon built by a test).
func (m *metrics) observe(e node.Event, now time.Time) {
	if m == nil {
		return
	}
	m.events.WithLabelValues(e.Kind()).Inc()
	switch e := e.(type) {
	case node.ActionBegin:
		// the ladder's restart of one resource is "restart RID"; it ends
		// as "restart"
		action, rid, _ := strings.Cut(e.Action, " ")
		m.mu.Lock()
		m.begun[e.Svc+"\x00"+action] = now
		m.mu.Unlock()
		m.counterOf(action, m.starts, m.stops, m.restarts).WithLabelValues(e.Svc).Inc()
		if action == "restart" && rid != "" {
			m.resRestarts.WithLabelValues(e.Svc, rid).Inc()
		}
	case node.ActionEnd:
		key := e.Svc + "\x00" + e.Action
		m.mu.Lock()
		begun, ok := m.begun[key]
		delete(m.begun, key)
		m.mu.Unlock()
		// a stop whose commands succeeded but left a resource up ends
		// twice (ok, then the error): one duration, one failure
		if h := m.durationOf(e.Action); ok && h != nil {
			h.WithLabelValues(e.Svc).Observe(now.Sub(begun).Seconds())
		}
		if e.Err != "" {
			m.counterOf(e.Action, m.startFailures, m.stopFailures, m.restartFail).WithLabelValues(e.Svc).Inc()
		}
	case node.Failover:
		m.failovers.WithLabelValues(e.Svc).Inc()
	case node.FlexInstances:
		m.mu.Lock()
		m.flex[e.Svc] = [2]int{e.Up, e.Target}
		m.mu.Unlock()
	case node.RolloutProgress:
		m.mu.Lock()
		m.rollouts[e.Svc] = e
		m.mu.Unlock()
	case node.ResourceFailed:
		m.resFailures.WithLabelValues(e.Svc, e.RID).Inc()
	case node.LadderGaveUp:
		m.restartsSpent.WithLabelValues(e.Svc).Inc()
	case node.MonitorActionTaken:
		m.monitorActions.WithLabelValues(e.Svc, e.Action).Inc()
	case node.QuorumVote:
		verdict, survive := "lost", 0.0
		switch {
		case e.Verdict.Skipped:
			verdict, survive = "skipped", 1
		case e.Verdict.Survive:
			verdict, survive = "survive", 1
		}
		m.votes.WithLabelValues(verdict).Inc()
		m.voteSurvive.WithLabelValues().Set(survive)
		m.voteVotes.WithLabelValues().Set(float64(e.Verdict.Votes))
		m.voteTotal.WithLabelValues().Set(float64(e.Verdict.Total))
		m.voteAt.WithLabelValues().Set(float64(now.UnixNano()) / 1e9)
	case node.QuorumStall:
		m.stalls.Inc()
	case node.GuardState:
		armed := 0.0
		if e.Armed {
			armed = 1
		}
		m.guardArmed.WithLabelValues().Set(armed)
	case node.GuardFired:
		m.guardFired.Inc()
	case node.ArbitratorStatus:
		up := 0.0
		if e.OK {
			up = 1
		}
		m.arbitratorUp.WithLabelValues(e.Name).Set(up)
	case node.Fenced:
		m.fences.WithLabelValues(e.Node, "ok").Inc()
	case node.FenceFailed:
		m.fences.WithLabelValues(e.Node, "failed").Inc()
	}
}

// counterOf picks the counter of an action: start, stop or restart (a
// resource by the ladder, or the whole instance); a never registered one
// for another.
func (m *metrics) counterOf(action string, start, stop, restart *prometheus.CounterVec) *prometheus.CounterVec {
	switch action {
	case "start":
		return start
	case "stop":
		return stop
	case "restart":
		return restart
	}
	return nilCounter
}

// nilCounter counts the actions of an unknown kind (none today): never
// registered, never shown.
var nilCounter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "haven_unregistered"}, []string{"service"})

// durationOf is the duration histogram of an action, nil for another.
func (m *metrics) durationOf(action string) *prometheus.HistogramVec {
	switch action {
	case "start":
		return m.startDur
	case "stop":
		return m.stopDur
	case "restart":
		return m.restartDur
	}
	return nil
}

// observeDecision records the duration of one decision pass.
func (m *metrics) observeDecision(d time.Duration) {
	if m != nil {
		m.decision.Observe(d.Seconds())
	}
}

// setLocal keeps a copy of the local node's states for the scrapes (on
// the loop, each time the dataset is published); isFlex says which
// services are flex services (their counts are shown).
func (m *metrics) setLocal(n dataset.Node, isFlex func(svc string) bool) {
	if m == nil {
		return
	}
	st := localState{monitor: n.Monitor, frozen: n.Frozen, splitFrozen: n.SplitFrozen, svcs: make(map[string]svcState, len(n.Services))}
	for name, i := range n.Services {
		st.svcs[name] = svcState{avail: i.Avail, monitor: i.Monitor.State, frozen: i.Frozen, flex: isFlex(name)}
	}
	m.mu.Lock()
	m.local = st
	m.mu.Unlock()
}

// setHeartbeat makes the scrapes read hb's peers and counters.
func (m *metrics) setHeartbeat(hb heartbeat.Heartbeat) {
	if m != nil && hb != nil {
		m.hb.Store(&hb)
	}
}

// stateCollector turns the copy of the local states and the heartbeat's
// counters into metrics at each scrape.
type stateCollector struct{ m *metrics }

var (
	descAvail = prometheus.NewDesc("haven_service_avail",
		"One-hot avail of the local instance: 1 for its current state, 0 for the others.", []string{"service", "state"}, nil)
	descMonitor = prometheus.NewDesc("haven_service_monitor_state",
		"One-hot monitor state of the local instance: 1 for its current state, 0 for the others.", []string{"service", "state"}, nil)
	descSvcFrozen = prometheus.NewDesc("haven_service_frozen",
		"1 when the local instance is frozen (the orchestrator leaves it alone).", []string{"service"}, nil)
	descFlexUp = prometheus.NewDesc("haven_service_instances_up",
		"A flex service: its instances up on the live nodes, as this node sees them.", []string{"service"}, nil)
	descFlexTarget = prometheus.NewDesc("haven_service_instances_target",
		"A flex service: the instances it keeps up (flex_target; in the global mode the nodes where one belongs), as this node sees them.", []string{"service"}, nil)
	descRollout = prometheus.NewDesc("haven_service_rollout_state",
		"One-hot state of the service's newest rollout as this node sees it (in_progress, paused, done, done_with_failures); absent while it never had one.", []string{"service", "state"}, nil)
	descRolloutTurns = prometheus.NewDesc("haven_service_rollout_turns",
		"The turns of the service's newest rollout by how they stand (ok, failed, pending: not ended, a node down counted) as this node sees them.", []string{"service", "turn"}, nil)
	descConfigs = prometheus.NewDesc("haven_service_instances_config",
		"The service's running instances on the live nodes that run this node's config (current) or an older one (old), once it had a rollout or an instance on an older config.", []string{"service", "config"}, nil)
	rolloutStates   = []string{dataset.RolloutInProgress, dataset.RolloutPaused, dataset.RolloutDone, dataset.RolloutDoneWithFailures}
	descNodeMonitor = prometheus.NewDesc("haven_node_monitor_state",
		"One-hot monitor state of this node: 1 for its current state, 0 for the others.", []string{"state"}, nil)
	descNodeFrozen      = prometheus.NewDesc("haven_node_frozen", "1 when this node is frozen (by an admin, or by the rejoin rule).", nil, nil)
	descNodeSplitFrozen = prometheus.NewDesc("haven_node_split_frozen",
		"1 when this node is frozen by its split_action (it lost a quorum vote: it ends by itself).", nil, nil)
	descPeersUp = prometheus.NewDesc("haven_heartbeat_peers_up",
		"Peers whose heartbeat is heard (the heartbeat's view).", nil, nil)
	descPeers  = prometheus.NewDesc("haven_heartbeat_peers", "Peers in the cluster (the members but this node).", nil, nil)
	descPeerUp = prometheus.NewDesc("haven_heartbeat_peer_up",
		"1 when the peer's heartbeat is heard, 0 when not.", []string{"peer"}, nil)
	descPeerAge = prometheus.NewDesc("haven_heartbeat_peer_last_heard_seconds",
		"Seconds since the peer was last heard (absent when never heard).", []string{"peer"}, nil)
	hbCounters = []struct {
		desc *prometheus.Desc
		get  func(heartbeat.Stats) uint64
	}{
		{prometheus.NewDesc("haven_heartbeat_frames_sent_total", "Heartbeat messages sent (beats, deltas, full copies, requests).", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.Sent }},
		{prometheus.NewDesc("haven_heartbeat_frames_received_total", "Heartbeat messages received and accepted.", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.Received }},
		{prometheus.NewDesc("haven_heartbeat_bytes_sent_total", "Heartbeat payload bytes sent (before encryption).", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.BytesSent }},
		{prometheus.NewDesc("haven_heartbeat_bytes_received_total", "Heartbeat payload bytes received (after decryption).", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.BytesReceived }},
		{prometheus.NewDesc("haven_heartbeat_frames_rejected_total",
			"Heartbeat frames rejected: malformed, foreign (wrong secret or cluster), unauthenticated, replayed, misaddressed.", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.Rejected }},
		{prometheus.NewDesc("haven_heartbeat_frames_replayed_total", "Of the rejected frames: duplicates, beyond the replay window, or of an earlier run.", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.Replayed }},
		{prometheus.NewDesc("haven_heartbeat_frames_not_own_key_total", "Of the rejected frames: not sealed with the node key of the member they claim to be from (per-node keys).", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.NotOwnKey }},
		{prometheus.NewDesc("haven_heartbeat_streams_refused_total", "Inbound heartbeat connections closed before authentication.", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.StreamsRefused }},
		{prometheus.NewDesc("haven_heartbeat_sends_dropped_total", "Heartbeat sends dropped on a full peer queue.", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.Dropped }},
		{prometheus.NewDesc("haven_heartbeat_send_errors_total", "Heartbeat sends that failed.", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.SendErrors }},
		{prometheus.NewDesc("haven_heartbeat_full_copies_sent_total", "Full copies of this node's data sent (a peer joined, or lacked or doubted a generation).", nil, nil),
			func(s heartbeat.Stats) uint64 { return s.FullsSent }},
	}
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAvail, descMonitor, descSvcFrozen, descFlexUp, descFlexTarget, descRollout, descRolloutTurns, descConfigs, descNodeMonitor, descNodeFrozen, descNodeSplitFrozen,
		descPeersUp, descPeers, descPeerUp, descPeerAge, descLinkUp, descDiskReachable, descDiskSlotAge} {
		ch <- d
	}
	for _, h := range hbCounters {
		ch <- h.desc
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	st := c.m.local
	flex := make(map[string][2]int, len(c.m.flex))
	for name, f := range c.m.flex {
		flex[name] = f
	}
	rollouts := make(map[string]node.RolloutProgress, len(c.m.rollouts))
	for name, r := range c.m.rollouts {
		rollouts[name] = r
	}
	c.m.mu.Unlock() // st is never written again: setLocal makes a new one
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for name, s := range st.svcs {
		oneHot(string(s.avail), statesOf(availStates), func(state string, v float64) { gauge(descAvail, v, name, state) })
		oneHot(string(s.monitor), statesOf(monitorStates), func(state string, v float64) { gauge(descMonitor, v, name, state) })
		gauge(descSvcFrozen, b2f(s.frozen), name)
		if f, ok := flex[name]; ok && s.flex {
			gauge(descFlexUp, float64(f[0]), name)
			gauge(descFlexTarget, float64(f[1]), name)
		}
		if r, ok := rollouts[name]; ok {
			if r.ID != "" {
				oneHot(r.State, rolloutStates, func(state string, v float64) { gauge(descRollout, v, name, state) })
				gauge(descRolloutTurns, float64(r.OK), name, "ok")
				gauge(descRolloutTurns, float64(r.Failed), name, "failed")
				gauge(descRolloutTurns, float64(r.Pending), name, "pending")
			}
			gauge(descConfigs, float64(r.Current), name, "current")
			gauge(descConfigs, float64(r.Old), name, "old")
		}
	}
	if st.monitor != "" {
		oneHot(string(st.monitor), statesOf(nodeMonitorStates), func(state string, v float64) { gauge(descNodeMonitor, v, state) })
		gauge(descNodeFrozen, b2f(st.frozen))
		gauge(descNodeSplitFrozen, b2f(st.splitFrozen))
	}
	hbp := c.m.hb.Load()
	if hbp == nil {
		// a lone node (or the heartbeat not started yet): no peer
		gauge(descPeersUp, 0)
		gauge(descPeers, 0)
		return
	}
	hb := *hbp
	peers := hb.Peers()
	up := 0
	for _, p := range peers {
		gauge(descPeerUp, b2f(p.Up), p.Name)
		if p.Up {
			up++
		}
		if !p.LastHeard.IsZero() {
			gauge(descPeerAge, clock.Since(c.m.clk, p.LastHeard).Seconds(), p.Name)
		}
	}
	gauge(descPeersUp, float64(up))
	gauge(descPeers, float64(len(peers)))
	collectLinks(ch, peers) // links.go
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.Name
	}
	collectDisk(ch, c.m.diskPath, c.m.disk.Load(), names, c.m.clk.Now()) // diskstatus.go
	s := hb.Stats()
	for _, h := range hbCounters {
		ch <- prometheus.MustNewConstMetric(h.desc, prometheus.CounterValue, float64(h.get(s)))
	}
}

// oneHot calls set with 1 for cur and 0 for the other known states; cur
// shows even when it is not a known one.
func oneHot(cur string, known []string, set func(state string, v float64)) {
	seen := false
	for _, k := range known {
		if k == cur {
			seen = true
			set(k, 1)
		} else {
			set(k, 0)
		}
	}
	if !seen && cur != "" {
		set(cur, 1)
	}
}

func statesOf[S ~string](l []S) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = string(s)
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// serveMetrics listens on node.metrics_addr (nothing when unset) and
// serves /metrics there until stopMetrics. A listen error names the key.
func (d *Daemon) serveMetrics() error {
	addr := d.node.MetricsAddr
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRNOTAVAIL) { // not an address of this host: a config error (exit 2)
		return d.node.ErrAt(config.SectionNode, "metrics_addr", "cannot serve the metrics: %q is not an address of this host: %v", addr, err)
	}
	if err != nil {
		return fmt.Errorf("%s: node.metrics_addr: cannot serve the metrics: %w", d.node.File, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{
		ErrorLog:            zap.NewStdLog(d.log.Named("metrics")),
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	d.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: metricsHeaderTime, IdleTimeout: metricsIdleTimeout,
		ErrorLog: zap.NewStdLog(d.log.Named("metrics"))}
	gln := guardServer(d.metricsSrv, ln, metricsMaxConns, metricsPerClient)
	if len(d.node.MetricsAllow) > 0 {
		allow, err := config.MetricsAllowList(d.node.MetricsAllow)
		if err != nil { // checked at load
			ln.Close()
			return fmt.Errorf("%s: node.metrics_allow: %w", d.node.File, err)
		}
		gln.allow = func(a netip.Addr) bool {
			for _, p := range allow {
				if p.Contains(a) {
					return true
				}
			}
			return false
		}
		log := d.log.Named("metrics")
		gln.refused = func(a net.Addr) {
			log.Warn("metrics connection refused: its address is not in node.metrics_allow", zap.String("from", a.String()))
		}
	}
	d.log.Info("serving metrics", zap.String("addr", ln.Addr().String()))
	srv := d.metricsSrv
	go func() {
		if err := srv.Serve(gln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("metrics server", zap.Error(err))
		}
	}()
	return nil
}

// stopMetrics closes the metrics listener and its connections.
func (d *Daemon) stopMetrics() {
	if d.metricsSrv != nil {
		d.metricsSrv.Close()
	}
}
