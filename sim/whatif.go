package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"haven/config/tomlfile"
	"haven/dataset"
	"haven/monitor"
	"haven/node"
)

// What-if: the live cluster, as one daemon knows it, rebuilt in the
// simulation (the same node core on the fake clock), a list of events
// applied to it, and what every node then does (svcmgr simulate,
// docs/operations.md "What if").

// SnapshotFormat is the version of the Snapshot format written by Save.
const SnapshotFormat = 1

// Snapshot is what the simulation needs of a live cluster: the settings,
// every node as the local daemon sees it, every service config and where
// each service runs. It holds no secret.
type Snapshot struct {
	Format  int       `json:"format"`
	TakenAt time.Time `json:"taken_at"`
	// Local is the node the snapshot was taken on: the simulated admin
	// commands run there.
	Local    string                     `json:"local"`
	Cluster  string                     `json:"cluster"`
	Settings SnapshotSettings           `json:"settings"`
	Nodes    map[string]SnapshotNode    `json:"nodes"`
	Services map[string]SnapshotService `json:"services"`
}

// SnapshotSettings are the node.toml and cluster.toml settings the
// simulation runs every node with (the local node's).
type SnapshotSettings struct {
	HBTimeout        Duration `json:"hb_timeout"`
	HBInterval       Duration `json:"hb_interval"`
	ReadyPeriod      Duration `json:"ready_period"`
	ReadyFastAck     bool     `json:"ready_fast_ack,omitempty"`
	MaintenanceGrace Duration `json:"maintenance_grace_period"`
	RejoinGrace      Duration `json:"rejoin_grace_period"`
	Quorum           bool     `json:"quorum,omitempty"`
	SplitAction      string   `json:"split_action,omitempty"`
	// Guard and GuardLease are node.guard and node.guard_lease (a
	// snapshot of an older release: no guard).
	Guard      bool     `json:"guard,omitempty"`
	GuardLease Duration `json:"guard_lease,omitempty"`
	// MonitorInterval and CheckInterval are node.toml's monitor_interval
	// and check_interval (0 in a snapshot of an older release: the
	// defaults, 5s and 60s).
	MonitorInterval Duration `json:"monitor_interval,omitempty"`
	CheckInterval   Duration `json:"check_interval,omitempty"`
}

// SnapshotNode is one member as the local daemon sees it.
type SnapshotNode struct {
	// Status is the local view: up, down, maintenance, shutting, unknown.
	Status       string `json:"status"`
	Frozen       bool   `json:"frozen,omitempty"`
	FrozenReason string `json:"frozen_reason,omitempty"`
	// SplitFrozen: frozen by its split_action (SplitFrozenReason says the
	// vote it lost), apart from Frozen.
	SplitFrozen       bool              `json:"split_frozen,omitempty"`
	SplitFrozenReason string            `json:"split_frozen_reason,omitempty"`
	Compat            int               `json:"compat,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	// Capacity is the node's capacity for the services' requests (nil:
	// it publishes none).
	Capacity *dataset.Capacity `json:"capacity,omitempty"`
}

// SnapshotService is one service: its config and its instances.
type SnapshotService struct {
	// Config is the service's TOML, as installed on the local node.
	Config    string                      `json:"config"`
	Target    string                      `json:"target,omitempty"`
	Instances map[string]SnapshotInstance `json:"instances"`
}

// SnapshotInstance is one instance of a service.
type SnapshotInstance struct {
	Running     bool   `json:"running,omitempty"`
	Frozen      bool   `json:"frozen,omitempty"`
	StartFailed bool   `json:"start_failed,omitempty"`
	Monitor     string `json:"monitor,omitempty"`
	// StartDuration and StopDuration are the last measured durations of
	// the instance's actions, zero when never measured.
	StartDuration Duration `json:"start_duration,omitempty"`
	StopDuration  Duration `json:"stop_duration,omitempty"`
	// OldConfig: the instance runs a config older than the one its node
	// holds (dataset.Instance.OldConfig): a rollout restarts it.
	OldConfig bool `json:"old_config,omitempty"`
}

// Duration is a time.Duration written as "16s" in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as Go's text form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "16s" (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: want a string such as \"16s\": %v", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %v", s, err)
	}
	*d = Duration(v)
	return nil
}

// DefaultActionDuration is the start or stop duration assumed for an
// instance whose durations were never measured.
const DefaultActionDuration = time.Second

// WhatIfEvent is one event of a what-if: a verb, its argument, and when it
// happens (after the start of the simulation).
type WhatIfEvent struct {
	At   time.Duration `json:"at"`
	Verb string        `json:"verb"`
	Arg  string        `json:"arg"`
}

// WhatIfVerbs are the events svcmgr simulate knows, with the form of
// their argument.
var WhatIfVerbs = []struct{ Verb, Arg, Help string }{
	{"kill", "NODE", "the node dies (no clean stop; its services die with it)"},
	{"cut", "NODE", "every heartbeat link between NODE and the others is cut"},
	{"heal", "NODE", "NODE's links come back (every cut is healed)"},
	{"freeze", "NODE|SVC", "nodemgr freeze on NODE, or svcmgr -s SVC freeze"},
	{"thaw", "NODE|SVC", "nodemgr thaw on NODE, or svcmgr -s SVC thaw"},
	{"drain", "NODE", "nodemgr drain on NODE"},
	{"start", "SVC", "svcmgr -s SVC start"},
	{"stop", "SVC", "svcmgr -s SVC stop"},
	{"switch", "SVC:NODE", "svcmgr -s SVC switch --to NODE"},
	{"takeover", "SVC:NODE", "svcmgr -s SVC takeover on NODE"},
	{"giveback", "SVC", "svcmgr -s SVC giveback"},
	{"fail", "SVC[:RID]", "the service's resources die where it runs (the next check says down; they fail together, so any RID means all); the restart ladder and monitor_action follow"},
	{"set", "SVC:KEY=VALUE", "svcmgr -s SVC set --kw KEY=VALUE (a config edit)"},
	{"rollout", "SVC", "svcmgr -s SVC rollout: the running instances restarted on the config installed (after a --set: the edited one), batch by batch"},
	{"start-daemon", "NODE", "nodemgr daemon start on NODE (a node that was down comes back)"},
}

// ParseWhatIfEvent parses "NODE@+10s" style arguments of verb: the time,
// when given, is "@+DURATION" after the start of the simulation.
func ParseWhatIfEvent(verb, arg string) (WhatIfEvent, error) {
	known := false
	for _, v := range WhatIfVerbs {
		known = known || v.Verb == verb
	}
	if !known {
		return WhatIfEvent{}, fmt.Errorf("unknown event %q", verb)
	}
	ev := WhatIfEvent{Verb: verb, Arg: arg}
	if a, at, ok := strings.Cut(arg, "@"); ok {
		ev.Arg = a
		rel, ok := strings.CutPrefix(at, "+")
		if !ok {
			return ev, fmt.Errorf("--%s %s: the time is @+DURATION after now (e.g. @+10s): %q is in the past or absolute", verb, arg, at)
		}
		d, err := time.ParseDuration(rel)
		if err != nil || d < 0 {
			return ev, fmt.Errorf("--%s %s: bad time %q (want e.g. @+10s)", verb, arg, at)
		}
		ev.At = d
	}
	if ev.Arg == "" {
		return ev, fmt.Errorf("--%s: want an argument", verb)
	}
	return ev, nil
}

// WhatIfResult is what the simulation predicts.
type WhatIfResult struct {
	Local string `json:"local"`
	// For is the simulated time after the start.
	For Duration `json:"for"`
	// Assumptions are what the simulation took as given.
	Assumptions []string `json:"assumptions"`
	// Timeline is every decision, start and stop, in order.
	Timeline []WhatIfLine `json:"timeline"`
	// Services is the final placement of every service.
	Services []WhatIfService `json:"services"`
	// Nodes is the final state of every node.
	Nodes []WhatIfNode `json:"nodes"`
	// Rollouts are the rollouts of the what-if (--rollout), each batch
	// by batch, with the instances up it kept.
	Rollouts []WhatIfRollout `json:"rollouts,omitempty"`
}

// WhatIfRollout is a rollout of a what-if: its batches, each node's turn
// with its times, where it stood at the end, and the fewest and most
// instances running at once from its request on against the bounds.
type WhatIfRollout struct {
	Service string `json:"service"`
	// Answer is the rollout's answer (an error: nothing rolled out).
	Answer string `json:"answer"`
	ID     string `json:"id,omitempty"`
	// State is where it stood at the end (RolloutProgress.String).
	State   string                `json:"state,omitempty"`
	Batches [][]WhatIfRolloutTurn `json:"batches,omitempty"`
	// FewestUp is the fewest nodes that ran the service at once from the
	// request to the end of the simulation, MostUp the most at once in
	// the whole simulation;
	// Least is the bound of a flex service's rollout (flex_target -
	// update_parallelism, stop-first: never fewer up), 0 for a failover
	// service (down during its own restart); Most its flex_max (1 for a
	// failover service).
	FewestUp int `json:"fewest_up"`
	MostUp   int `json:"most_up"`
	Least    int `json:"least"`
	Most     int `json:"most"`
	// StartFirst: the rollout is start-first (Least is flex_target, as
	// long as a spare starts for each turn).
	StartFirst bool `json:"start_first,omitempty"`
}

// WhatIfRolloutTurn is one node's turn: when it began its restart and
// when it ended (ok or failed), after the start of the simulation.
type WhatIfRolloutTurn struct {
	Node  string    `json:"node"`
	State string    `json:"state"`
	Cause string    `json:"cause,omitempty"`
	Begin *Duration `json:"begin,omitempty"`
	End   *Duration `json:"end,omitempty"`
}

// WhatIfLine is one line of the timeline.
type WhatIfLine struct {
	At      Duration `json:"at"`
	Node    string   `json:"node,omitempty"`
	Service string   `json:"service,omitempty"`
	// Kind is the node core's event kind ("action_begin", ...), "event"
	// for one of the what-if's own events, "answer" for an admin answer.
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// WhatIfService is one service at the end.
type WhatIfService struct {
	Name   string   `json:"name"`
	UpOn   []string `json:"up_on"`
	Frozen []string `json:"frozen_on,omitempty"`
	// Reason says why a service is down (or not where it should be): the
	// explanation of the decision core on a node that runs a daemon.
	Reason string `json:"reason,omitempty"`
	// Explain is that explanation, when there is one.
	Explain *monitor.Explanation `json:"explain,omitempty"`
}

// WhatIfNode is one node at the end.
type WhatIfNode struct {
	Name    string `json:"name"`
	State   string `json:"state"` // daemon running, daemon stopped, down
	Monitor string `json:"monitor,omitempty"`
	Frozen  bool   `json:"frozen,omitempty"`
	// SplitFrozen: frozen by its split_action (a quorum vote lost).
	SplitFrozen bool `json:"split_frozen,omitempty"`
}

// Validate checks a snapshot read from a file or built from the API.
func (s *Snapshot) Validate() error {
	if s.Format != SnapshotFormat {
		return fmt.Errorf("snapshot format %d: this version reads format %d", s.Format, SnapshotFormat)
	}
	if len(s.Nodes) == 0 {
		return fmt.Errorf("snapshot: no node")
	}
	if _, ok := s.Nodes[s.Local]; !ok {
		return fmt.Errorf("snapshot: the local node %q is not a member", s.Local)
	}
	if len(s.Nodes) > MaxWhatIfNodes {
		return fmt.Errorf("snapshot: %d nodes: the simulation takes at most %d", len(s.Nodes), MaxWhatIfNodes)
	}
	if len(s.Services) > MaxWhatIfServices {
		return fmt.Errorf("snapshot: %d services: the simulation takes at most %d", len(s.Services), MaxWhatIfServices)
	}
	st := s.Settings
	if st.HBInterval < Duration(MinWhatIfInterval) || st.HBTimeout <= st.HBInterval {
		return fmt.Errorf("snapshot: hb.interval %s must be at least %s and shorter than hb.timeout %s",
			time.Duration(st.HBInterval), MinWhatIfInterval, time.Duration(st.HBTimeout))
	}
	for _, d := range []struct {
		key   string
		v     Duration
		least time.Duration
	}{
		{"hb.timeout", st.HBTimeout, 0}, {"ready_period", st.ReadyPeriod, 0},
		{"maintenance_grace_period", st.MaintenanceGrace, 0}, {"rejoin_grace_period", st.RejoinGrace, 0},
		{"monitor_interval", st.MonitorInterval, MinWhatIfInterval}, {"check_interval", st.CheckInterval, MinWhatIfInterval},
	} {
		if d.v < 0 || d.v > Duration(MaxWhatIfSpan) || d.v != 0 && time.Duration(d.v) < d.least {
			return fmt.Errorf("snapshot: %s %s: want %s to %s", d.key, time.Duration(d.v), d.least, MaxWhatIfSpan)
		}
	}
	for name, svc := range s.Services {
		for n, in := range svc.Instances {
			if _, ok := s.Nodes[n]; !ok {
				return fmt.Errorf("snapshot: service %s has an instance on %q, not a member", name, n)
			}
			for _, d := range []Duration{in.StartDuration, in.StopDuration} {
				if d < 0 || d > Duration(MaxWhatIfSpan) {
					return fmt.Errorf("snapshot: service %s on %s: an action of %s: want 0 to %s", name, n, time.Duration(d), MaxWhatIfSpan)
				}
			}
		}
	}
	return nil
}

// CheckWhatIf refuses a what-if that the simulation cannot run, or not
// within its bounds: a snapshot that does not validate, an event that
// names an unknown node or service, too long a time, too much work.
func (s *Snapshot) CheckWhatIf(events []WhatIfEvent, dur time.Duration) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := s.CheckEvents(events); err != nil {
		return err
	}
	span := dur
	for _, e := range events {
		span = max(span, e.At)
	}
	if span > MaxWhatIfSpan {
		return fmt.Errorf("%s of simulated time: at most %s (--for, and the events' @+ times)", span, MaxWhatIfSpan)
	}
	o := s.options()
	o.defaults()
	boot, q := o.RejoinGrace+2*o.HBTimeout, o.quantum()
	steps := int((boot + span + q - 1) / q)
	if w := WhatIfWork(steps, len(s.Nodes), len(s.Services)); w > MaxWhatIfWork {
		return fmt.Errorf("too much to simulate: %s (%s to settle and %s asked) in steps of %s, %d nodes, %d services: "+
			"%d units of work, at most %d (about 20 s of CPU): simulate a shorter time (--for)",
			boot+span, boot, span, q, len(s.Nodes), len(s.Services), w, MaxWhatIfWork)
	}
	return nil
}

// CheckEvents refuses events that name an unknown node or service.
func (s *Snapshot) CheckEvents(events []WhatIfEvent) error {
	isNode := func(n string) bool { _, ok := s.Nodes[n]; return ok }
	isSvc := func(n string) bool { _, ok := s.Services[n]; return ok }
	for _, e := range events {
		head, tail, _ := strings.Cut(e.Arg, ":")
		switch e.Verb {
		case "kill", "cut", "heal", "drain", "start-daemon":
			if !isNode(e.Arg) {
				return fmt.Errorf("--%s %s: no node %q in the cluster (members: %s)", e.Verb, e.Arg, e.Arg, strings.Join(s.nodeNames(), ", "))
			}
		case "freeze", "thaw":
			if !isNode(e.Arg) && !isSvc(e.Arg) {
				return fmt.Errorf("--%s %s: no node or service %q", e.Verb, e.Arg, e.Arg)
			}
		case "start", "stop", "giveback", "rollout":
			if !isSvc(e.Arg) {
				return fmt.Errorf("--%s %s: no service %q", e.Verb, e.Arg, e.Arg)
			}
		case "switch", "takeover":
			if !isSvc(head) {
				return fmt.Errorf("--%s %s: no service %q", e.Verb, e.Arg, head)
			}
			if !isNode(tail) {
				return fmt.Errorf("--%s %s: want SVC:NODE with a member node, not %q", e.Verb, e.Arg, tail)
			}
		case "fail":
			if !isSvc(head) {
				return fmt.Errorf("--%s %s: no service %q", e.Verb, e.Arg, head)
			}
		case "set":
			if !isSvc(head) {
				return fmt.Errorf("--%s %s: no service %q", e.Verb, e.Arg, head)
			}
			if k, _, ok := strings.Cut(tail, "="); !ok || k == "" {
				return fmt.Errorf("--%s %s: want SVC:KEY=VALUE", e.Verb, e.Arg)
			}
		}
	}
	return nil
}

func (s *Snapshot) nodeNames() []string {
	names := make([]string, 0, len(s.Nodes))
	for n := range s.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// The bounds of a what-if: a snapshot read from a file is input like any
// other, and a crafted one (a beat period of a nanosecond, thousands of
// members, a simulation of years) must be refused, not simulated for
// hours. The work is estimated from the number of simulated steps, the
// members (each node hears every other) and the services (WhatIfWork).
const (
	MaxWhatIfNodes    = 64   // twice the largest supported cluster
	MaxWhatIfServices = 2000 // services in a snapshot
	// MinWhatIfInterval is the shortest hb.interval, monitor_interval
	// and check_interval simulated; MaxWhatIfSpan the longest duration
	// of any setting, of the simulation (--for) and of an event's time.
	MinWhatIfInterval = 10 * time.Millisecond
	MaxWhatIfSpan     = 24 * time.Hour
	// MaxWhatIfWork is the most work (WhatIfWork) a what-if may take:
	// about 20 s of one CPU (32 nodes and 100 services for about 90 s of
	// simulated time).
	MaxWhatIfWork = 2_500_000
)

// WhatIfWork estimates the cost of simulating steps turns of a cluster
// of nodes members and services services: every turn each node hears
// each other one, and looks at its services (measured: 7 to 13 us a unit
// on one CPU).
func WhatIfWork(steps, nodes, services int) int64 {
	return int64(steps) * int64(nodes*nodes+services*nodes/2)
}

// ErrInterrupted is the error of a what-if whose context ended (svcmgr
// simulate got SIGINT or SIGTERM).
var ErrInterrupted = errors.New("interrupted")

// WhatIf rebuilds the snapshot's cluster in the simulation, lets it settle
// (the daemons start with every service where it runs, in the node and
// service states of the snapshot), then applies events at their times and
// runs for the given duration (at least until the last event and what it
// sets off has had time to settle). Nothing leaves the process.
func WhatIf(s *Snapshot, events []WhatIfEvent, dur time.Duration) (*WhatIfResult, error) {
	return WhatIfContext(context.Background(), s, events, dur)
}

// WhatIfContext is WhatIf that gives up with ErrInterrupted once ctx ends.
func WhatIfContext(ctx context.Context, s *Snapshot, events []WhatIfEvent, dur time.Duration) (*WhatIfResult, error) {
	if err := s.CheckWhatIf(events, dur); err != nil {
		return nil, err
	}
	c, assumptions, err := buildFromSnapshot(s)
	if err != nil {
		return nil, err
	}
	c.ctx = ctx
	if err := c.bootSnapshot(); err != nil {
		return nil, err
	}
	origin := c.Now()
	firstEvent := len(c.events)

	evs := slices.Clone(events)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At < evs[j].At })
	res := &WhatIfResult{Local: s.Local, Assumptions: assumptions}
	var own []WhatIfLine
	var rolls []WhatIfRollout
	for _, e := range evs {
		if wait := origin + e.At - c.Now(); wait > 0 {
			c.Run(wait)
		}
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		text, answer := c.applyWhatIf(s.Local, e)
		if e.Verb == "rollout" {
			rolls = append(rolls, WhatIfRollout{Service: e.Arg, Answer: answer})
		}
		own = append(own, WhatIfLine{At: Duration(c.Now() - origin), Kind: "event", Text: text})
		if answer != "" {
			own = append(own, WhatIfLine{At: Duration(c.Now() - origin), Node: s.Local, Kind: "answer", Text: answer})
		}
	}
	if left := origin + dur - c.Now(); left > 0 {
		c.Run(left)
	}
	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	res.For = Duration(c.Now() - origin)
	res.Timeline = mergeTimeline(own, c.events[firstEvent:], origin)
	res.Services, res.Nodes = c.whatIfFinal(s.Local)
	res.Rollouts = c.whatIfRollouts(rolls, c.events[firstEvent:], origin)
	// the explanations' times on the live cluster's clock: the start of
	// the simulation is when the snapshot was taken
	if !s.TakenAt.IsZero() {
		shift := s.TakenAt.Sub(T0.Add(origin))
		for _, ws := range res.Services {
			if ws.Explain != nil {
				shiftExplanation(ws.Explain, shift)
			}
		}
	}
	return res, nil
}

// bootSnapshot starts the daemons of the nodes that were up in the
// snapshot and lets the cluster settle: the rejoin and the first exchange
// of data are not part of a prediction.
func (c *Cluster) bootSnapshot() error {
	for _, n := range c.names {
		if c.ctx != nil && c.ctx.Err() != nil {
			return nil // interrupted: WhatIfContext says so
		}
		if c.nodes[n].machineUp {
			if err := c.Start(n, 0); err != nil {
				return fmt.Errorf("start the simulated daemon of %s: %v", n, err)
			}
		}
	}
	c.Run(c.opt.RejoinGrace + 2*c.opt.HBTimeout)
	return nil
}

// ReadSnapshot reads a snapshot file (svcmgr simulate --save): strict
// JSON, one object.
func ReadSnapshot(path string) (*Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: not a snapshot: %v", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the snapshot", path)
	}
	return &s, nil
}

// mergeTimeline puts the what-if's own lines and the node cores' events in
// time order (the own line first at equal times: it caused the others).
func mergeTimeline(own []WhatIfLine, events []Event, origin time.Duration) []WhatIfLine {
	out := make([]WhatIfLine, 0, len(own)+len(events))
	i := 0
	for _, e := range events {
		at := Duration(e.At - origin)
		for i < len(own) && own[i].At <= at {
			out = append(out, own[i])
			i++
		}
		if !whatIfShown(e.Event) {
			continue
		}
		out = append(out, WhatIfLine{At: at, Node: e.Node, Service: e.Event.Service(), Kind: e.Event.Kind(), Text: e.Event.String()})
	}
	return append(out, own[i:]...)
}

// whatIfShown keeps the events a what-if is about: decisions (monitor
// states, targets), actions, peers and node states; resource checks and
// config bookkeeping are left out.
func whatIfShown(e node.Event) bool {
	switch e := e.(type) {
	case node.ResourceStatus, node.InstanceStatus, node.ConfigChanged, node.StreamStarted, node.EventsLost, node.TargetAdopted, node.RolloutProgress:
		return false
	case node.TargetSet:
		return e.Target.Active() // not the target's clean-up once reached
	}
	return true
}

// options are the simulation's options of the snapshot's settings.
func (s *Snapshot) options() Options {
	st := s.Settings
	return Options{HBTimeout: time.Duration(st.HBTimeout), HBInterval: time.Duration(st.HBInterval),
		ReadyPeriod: time.Duration(st.ReadyPeriod), MaintenanceGrace: time.Duration(st.MaintenanceGrace),
		RejoinGrace: time.Duration(st.RejoinGrace), ReadyFastAck: st.ReadyFastAck, Guard: st.Guard, GuardLease: time.Duration(st.GuardLease),
		MonitorInterval: time.Duration(st.MonitorInterval), CheckInterval: time.Duration(st.CheckInterval),
		StartDuration: DefaultActionDuration, StopDuration: DefaultActionDuration}
}

// buildFromSnapshot makes the cluster of the snapshot; no daemon runs yet.
func buildFromSnapshot(s *Snapshot) (*Cluster, []string, error) {
	names := s.nodeNames()
	st := s.Settings
	c, err := New(names, s.options())
	if err != nil {
		return nil, nil, err
	}
	assumptions := []string{
		fmt.Sprintf("every node runs with %s's timings: hb.timeout %s, hb.interval %s, ready_period %s%s, monitor_interval %s",
			s.Local, time.Duration(st.HBTimeout), time.Duration(st.HBInterval), time.Duration(st.ReadyPeriod),
			map[bool]string{true: ", ready_fast_ack", false: ""}[st.ReadyFastAck], c.opt.MonitorInterval),
		"every check, start and stop succeeds unless an event says otherwise (--fail)",
		fmt.Sprintf("a failure (--fail) is seen at the next check of a monitored resource: up to monitor_interval (%s) after it, at the simulated checks' own phase; "+
			"then the restart ladder, then monitor_action, as the config says", c.opt.MonitorInterval),
		"the cluster starts settled: services where they run now, timers (ready windows, grace periods) not running",
		"peers' clocks as the local daemon observes them; load and memory equal on every node",
	}
	if st.Quorum {
		c.q.enabled = true
		c.q.split = st.SplitAction
		if c.q.split == "" {
			c.q.split = node.SplitCrash
		}
		assumptions = append(assumptions, "cluster.quorum is on; arbitrators and fence commands are not simulated")
	}
	if st.Guard {
		assumptions = append(assumptions, fmt.Sprintf("every node runs the node guard (guard_lease %s): the takeover gates count it as the daemons do", c.opt.GuardLease))
	}
	var measured, defaulted []string
	for _, name := range sortedKeys(s.Services) {
		svc := s.Services[name]
		cfg, err := tomlfile.ParseService(name+".toml", name, []byte(svc.Config))
		if err != nil {
			return nil, nil, fmt.Errorf("snapshot: service %s: %v", name, err)
		}
		var start, stop time.Duration
		for _, in := range svc.Instances {
			start = max(start, time.Duration(in.StartDuration))
			stop = max(stop, time.Duration(in.StopDuration))
		}
		if start > 0 || stop > 0 {
			measured = append(measured, fmt.Sprintf("%s start %s stop %s", name, orDefault(start), orDefault(stop)))
		} else {
			defaulted = append(defaulted, name)
		}
		if err := c.AddService(cfg, start, stop); err != nil {
			return nil, nil, err
		}
	}
	if len(measured) > 0 {
		assumptions = append(assumptions, "action durations as last measured: "+strings.Join(measured, "; "))
	}
	if len(defaulted) > 0 {
		assumptions = append(assumptions, fmt.Sprintf("never measured, start and stop take %s: %s", DefaultActionDuration, strings.Join(defaulted, ", ")))
	}
	var down []string
	for _, name := range names {
		sn, n := s.Nodes[name], c.nodes[name]
		for k, v := range sn.Labels {
			n.labels[k] = v
		}
		if sn.Capacity != nil {
			k := *sn.Capacity
			n.capacity = &k
		}
		if sn.Compat > 0 {
			n.compat = sn.Compat
		}
		n.dur.NodeFrozen, n.dur.NodeFrozenReason = sn.Frozen, sn.FrozenReason
		n.dur.SplitFrozen, n.dur.SplitFrozenReason = sn.SplitFrozen, sn.SplitFrozenReason
		if sn.Status == string(dataset.NodeDown) {
			n.machineUp = false
			down = append(down, name)
		}
	}
	if len(down) > 0 {
		assumptions = append(assumptions, "down now, and down in the simulation until started: "+strings.Join(down, ", "))
	}
	var old []string
	for _, name := range sortedKeys(s.Services) {
		svc := s.Services[name]
		// every node holds the snapshot's config; an instance runs it, or
		// an older one (its digest not known here: one of no config)
		digest := dataset.ConfigDigest([]byte(svc.Config))
		for _, nn := range c.svcs[name].NodeList(c.names) {
			ss := c.nodes[nn].dur.Services[name]
			ss.ConfigDigest = digest
			c.nodes[nn].dur.Services[name] = ss
		}
		for _, nn := range sortedKeys(svc.Instances) {
			in := svc.Instances[nn]
			n := c.nodes[nn]
			ss := n.dur.Services[name]
			ss.RunDigest = digest
			if in.OldConfig {
				ss.RunDigest = olderConfig
				old = append(old, name+"@"+nn)
			}
			ss.Frozen, ss.StartFailed = in.Frozen, in.StartFailed
			if in.Running && n.machineUp {
				c.running[nn][name] = true
				ss.LocalExpect = dataset.ExpectStarted
			}
			n.dur.Services[name] = ss
		}
	}
	if len(old) > 0 {
		assumptions = append(assumptions, "running an older config than their node holds (a rollout restarts them): "+strings.Join(old, ", "))
	}
	return c, assumptions, nil
}

// olderConfig is the run digest of an instance the snapshot says runs an
// older config than its node's.
const olderConfig = "older"

func orDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultActionDuration
	}
	return d
}

// applyWhatIf applies one event; it returns the line that shows it and the
// answer of an admin command.
func (c *Cluster) applyWhatIf(local string, e WhatIfEvent) (text, answer string) {
	head, tail, _ := strings.Cut(e.Arg, ":")
	answerOf := func(res string, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return res
	}
	// admin commands run on the local node, or on any node whose daemon
	// runs when the local one does not
	on := local
	if c.nodes[on].d == nil {
		for _, n := range c.names {
			if c.nodes[n].d != nil {
				on = n
				break
			}
		}
	}
	switch e.Verb {
	case "kill":
		return "kill " + e.Arg, answerOf("", c.Crash(e.Arg))
	case "cut":
		var others []string
		for _, n := range c.names {
			if n != e.Arg {
				others = append(others, n)
			}
		}
		c.Partition([]string{e.Arg}, others)
		c.settle()
		return "cut " + e.Arg + "'s links", ""
	case "heal":
		c.Heal()
		c.settle()
		return "heal " + e.Arg + "'s links", ""
	case "start-daemon":
		return e.Arg + ": nodemgr daemon start", answerOf("", c.Start(e.Arg, 0))
	case "drain", "freeze", "thaw":
		if _, isNode := c.nodes[e.Arg]; isNode {
			return e.Arg + ": nodemgr " + e.Verb, answerOf(c.Admin(e.Arg, "", e.Verb, "", false))
		}
		return on + ": svcmgr -s " + e.Arg + " " + e.Verb, answerOf(c.Admin(on, e.Arg, e.Verb, "", false))
	case "start", "stop", "giveback", "rollout":
		return on + ": svcmgr -s " + e.Arg + " " + e.Verb, answerOf(c.Admin(on, e.Arg, e.Verb, "", false))
	case "switch":
		return on + ": svcmgr -s " + head + " switch --to " + tail, answerOf(c.Admin(on, head, "switch", tail, false))
	case "takeover":
		return tail + ": svcmgr -s " + head + " takeover", answerOf(c.Admin(tail, head, "takeover", "", false))
	case "fail":
		up := c.UpOn(head)
		if len(up) == 0 {
			return "fail " + e.Arg, "error: " + head + " runs nowhere"
		}
		var errs []string
		for _, n := range up {
			if err := c.Kill(n, head); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return "fail " + e.Arg + " on " + strings.Join(up, ","), "error: " + strings.Join(errs, "; ")
		}
		return "fail " + e.Arg + " on " + strings.Join(up, ","), ""
	case "set":
		return on + ": svcmgr -s " + head + " set --kw " + tail, answerOf(c.Keyword(on, head, "set", []string{tail}))
	}
	return e.Verb + " " + e.Arg, "error: unknown event"
}

// whatIfFinal is the final placement and node states.
func (c *Cluster) whatIfFinal(local string) ([]WhatIfService, []WhatIfNode) {
	var nodes []WhatIfNode
	var explainer *daemon
	for _, name := range c.names {
		n := c.nodes[name]
		wn := WhatIfNode{Name: name, Frozen: n.dur.NodeFrozen, SplitFrozen: n.dur.SplitFrozen}
		switch {
		case n.d != nil:
			wn.State, wn.Monitor = "daemon running", string(n.d.core.NodeMonitor())
			if explainer == nil || name == local {
				explainer = n.d
			}
		case n.machineUp:
			wn.State = "daemon stopped"
		default:
			wn.State = "down"
		}
		nodes = append(nodes, wn)
	}
	var svcs []WhatIfService
	for _, name := range c.svcNames {
		ws := WhatIfService{Name: name, UpOn: c.UpOn(name)}
		if ws.UpOn == nil {
			ws.UpOn = []string{}
		}
		for _, nn := range c.svcs[name].NodeList(c.names) {
			if n := c.nodes[nn]; n.dur.Services[name].Frozen {
				ws.Frozen = append(ws.Frozen, nn)
			}
		}
		if explainer != nil {
			if e, ok := monitor.Explain(explainer.core.Snapshot(c.clk.Now()), name, false); ok {
				if (len(ws.UpOn) == 0 || len(ws.Frozen) > 0) && e.Orchestrate != "no" {
					ws.Explain = &e
				}
				ws.Reason = whyDown(ws, e)
			}
		}
		svcs = append(svcs, ws)
	}
	return svcs, nodes
}

// shiftExplanation moves the times of e by shift.
func shiftExplanation(e *monitor.Explanation, shift time.Duration) {
	move := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.Add(shift)
		}
	}
	move(&e.Now)
	if m := e.Monitor; m != nil {
		move(&m.Since)
		move(&m.ReadyUntil)
		move(&m.Deadline)
	}
}

// whyDown is a one-line reason for a service that runs nowhere (or is
// frozen somewhere); "" for a service that runs.
func whyDown(ws WhatIfService, e monitor.Explanation) string {
	var parts []string
	if len(ws.Frozen) > 0 {
		parts = append(parts, "frozen on "+strings.Join(ws.Frozen, ","))
	}
	if len(ws.UpOn) > 0 {
		return strings.Join(parts, "; ")
	}
	if e.Orchestrate == "no" {
		parts = append(parts, "orchestrate = no")
	}
	if e.Leader == "" {
		var why []string
		for _, v := range e.Verdicts {
			if len(v.Reasons) > 0 {
				why = append(why, v.Node+": "+strings.Join(v.Reasons, ", "))
			}
		}
		if len(why) > 0 {
			parts = append(parts, "no candidate ("+strings.Join(why, "; ")+")")
		} else {
			parts = append(parts, "no candidate")
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "down (see svcmgr explain)")
	}
	return strings.Join(parts, "; ")
}

// SnapshotFromStatus builds a snapshot from the local daemon's status
// object and the service configs it holds (configs: name -> TOML).
func SnapshotFromStatus(st *dataset.ClusterStatus, configs map[string]string, set SnapshotSettings, now time.Time) *Snapshot {
	s := &Snapshot{Format: SnapshotFormat, TakenAt: now, Local: st.Local, Cluster: st.Cluster.Name, Settings: set,
		Nodes: map[string]SnapshotNode{}, Services: map[string]SnapshotService{}}
	for name, n := range st.Nodes {
		sn := SnapshotNode{Status: string(n.Status), Frozen: n.Frozen, FrozenReason: n.FrozenReason,
			SplitFrozen: n.SplitFrozen, SplitFrozenReason: n.SplitFrozenReason, Compat: n.Compat, Labels: n.Labels}
		if k := n.Capacity; k != nil {
			sn.Capacity = &dataset.Capacity{CPUMilli: k.CPUMilli, MemBytes: k.MemBytes}
		}
		s.Nodes[name] = sn
	}
	for name, sv := range st.Services {
		cfg, ok := configs[name]
		if !ok {
			continue
		}
		ss := SnapshotService{Config: cfg, Instances: map[string]SnapshotInstance{}}
		if sv.GlobalExpect != "" && sv.GlobalExpect != dataset.ExpectNone {
			ss.Target = sv.GlobalExpect
		}
		for nn, in := range sv.Instances {
			ss.Instances[nn] = SnapshotInstance{
				Running: in.Avail == dataset.StatusUp || in.Avail == dataset.StatusWarn,
				Frozen:  in.Frozen, StartFailed: in.Monitor.State == dataset.StartFailed,
				Monitor:       string(in.Monitor.State),
				StartDuration: Duration(time.Duration(in.LastStartMs) * time.Millisecond),
				StopDuration:  Duration(time.Duration(in.LastStopMs) * time.Millisecond),
				OldConfig:     in.OldConfig() && (in.Avail == dataset.StatusUp || in.Avail == dataset.StatusWarn),
			}
		}
		s.Services[name] = ss
	}
	return s
}

// whatIfRollouts completes the rollouts asked (rolls) from the events of
// the simulation: the record, each node's turn and its times, where it
// stands at the end, and the fewest and most instances up since.
func (c *Cluster) whatIfRollouts(rolls []WhatIfRollout, events []Event, origin time.Duration) []WhatIfRollout {
	for k := range rolls {
		wr := &rolls[k]
		svc := wr.Service
		var r *dataset.Rollout
		for _, name := range c.names {
			if ss := c.nodes[name].dur.Services[svc]; ss.Rollout != nil && (r == nil || ss.Rollout.Version.Newer(r.Version)) {
				r = ss.Rollout
			}
		}
		cfg := c.svcs[svc]
		wr.Most, wr.MostUp, wr.FewestUp = 1, c.q.maxUp[svc], c.q.minUp[svc]
		if cfg.IsFlex() {
			wr.Most = cfg.FlexMax
			if r != nil {
				wr.Least = max(0, cfg.FlexTarget-max(1, r.Parallelism))
				if r.Order == dataset.OrderStartFirst {
					// a replacement up before each old instance stops
					// (a turn without a spare restarts in place: the
					// stop-first bound)
					wr.Least, wr.StartFirst = cfg.FlexTarget, true
				}
			}
		}
		if r == nil || strings.HasPrefix(wr.Answer, "error") || !strings.Contains(wr.Answer, r.ID) {
			continue
		}
		wr.ID, wr.State = r.ID, c.rolloutState(svc)
		turns := map[string]*WhatIfRolloutTurn{}
		for _, b := range monitor.RolloutBatches(r) {
			var batch []WhatIfRolloutTurn
			for _, n := range b {
				batch = append(batch, WhatIfRolloutTurn{Node: n, State: "not taken"})
			}
			wr.Batches = append(wr.Batches, batch)
		}
		for i := range wr.Batches {
			for j := range wr.Batches[i] {
				turns[wr.Batches[i][j].Node] = &wr.Batches[i][j]
			}
		}
		for _, e := range events {
			ev, ok := e.Event.(node.RolloutTurn)
			if !ok || ev.Svc != svc || ev.ID != r.ID || turns[e.Node] == nil {
				continue
			}
			t, at := turns[e.Node], Duration(e.At-origin)
			t.State, t.Cause = ev.State, ev.Cause
			switch ev.State {
			case dataset.TurnRestarting, dataset.TurnReplacing:
				if t.Begin == nil {
					t.Begin = &at
				}
			case dataset.TurnOK, dataset.TurnFailed:
				t.End = &at
			}
		}
	}
	return rolls
}

// RolloutSpan is how long a what-if of a rollout of svc runs: every
// running instance's turn one after the other (its stop and start, as
// measured or assumed, update_monitor, update_delay, a few beats), and
// 20 s more; at least a minute.
func RolloutSpan(s *Snapshot, svc string) time.Duration {
	sv, ok := s.Services[svc]
	if !ok {
		return time.Minute
	}
	cfg, err := tomlfile.ParseService(svc+".toml", svc, []byte(sv.Config))
	if err != nil {
		return time.Minute
	}
	var turns int
	var act time.Duration
	for _, in := range sv.Instances {
		if in.Running {
			turns++
		}
		act = max(act, orDefault(time.Duration(in.StartDuration))+orDefault(time.Duration(in.StopDuration)))
	}
	beat := 4 * time.Duration(s.Settings.HBInterval)
	span := time.Duration(turns)*(act+cfg.UpdateMonitor+cfg.UpdateDelay+beat) + 20*time.Second
	return min(max(span, time.Minute), MaxWhatIfSpan)
}
