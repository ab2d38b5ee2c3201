package node

import (
	"fmt"
	"strings"

	"haven/dataset"
)

// TargetSet: an admin target set (or cleared, or aborted) on this node.
type TargetSet struct {
	Svc    string         `json:"svc"`
	Target dataset.Target `json:"target"`
}

func (TargetSet) Kind() string      { return "target" }
func (e TargetSet) Service() string { return e.Svc }
func (TargetSet) Level() Level      { return Info }
func (e TargetSet) String() string {
	return "target " + e.Target.String() + " (id " + e.Target.ID + ")"
}

// TargetAdopted: a peer's newer target adopted here.
type TargetAdopted struct {
	Svc    string         `json:"svc"`
	Target dataset.Target `json:"target"`
}

func (TargetAdopted) Kind() string      { return "target_adopted" }
func (e TargetAdopted) Service() string { return e.Svc }
func (TargetAdopted) Level() Level      { return Info }
func (e TargetAdopted) String() string {
	return "target " + e.Target.String() + " adopted from " + e.Target.Version.Origin + " (id " + e.Target.ID + ")"
}

// targetReached: the decision core found the target reached; it is
// cleared. Unknown are the service's nodes not heard from.
type TargetReached struct {
	Svc     string         `json:"svc"`
	Target  dataset.Target `json:"target"`
	Unknown []string       `json:"unknown,omitempty"`
}

func (TargetReached) Kind() string      { return "target_reached" }
func (e TargetReached) Service() string { return e.Svc }
func (TargetReached) Level() Level      { return Info }
func (e TargetReached) String() string {
	if len(e.Unknown) > 0 {
		return fmt.Sprintf("target %s reached on the known nodes only, %s unknown (id %s)", e.Target.String(), strings.Join(e.Unknown, ","), e.Target.ID)
	}
	return "target " + e.Target.String() + " reached (id " + e.Target.ID + ")"
}

// TargetPending: the target is reached on every node of the service but
// Nodes, each shut down cleanly (it runs nothing there): the --wait
// callers are answered; the target stays, so that they comply when they
// come back, and a new admin target may replace it.
type TargetPending struct {
	Svc    string         `json:"svc"`
	Target dataset.Target `json:"target"`
	Nodes  []string       `json:"nodes"`
}

func (TargetPending) Kind() string      { return "target_pending" }
func (e TargetPending) Service() string { return e.Svc }
func (TargetPending) Level() Level      { return Info }
func (e TargetPending) String() string {
	return fmt.Sprintf("target %s reached but on %s, shut down: applied there when back (id %s)",
		e.Target.String(), strings.Join(e.Nodes, ","), e.Target.ID)
}

// TargetFailed: the target cannot be reached (it stays in place).
type TargetFailed struct {
	Svc    string         `json:"svc"`
	Target dataset.Target `json:"target"`
	Reason string         `json:"reason"`
}

func (TargetFailed) Kind() string      { return "target_failed" }
func (e TargetFailed) Service() string { return e.Svc }
func (TargetFailed) Level() Level      { return Warn }
func (e TargetFailed) String() string {
	return fmt.Sprintf("target %s (id %s) cannot be reached: %s (the target stays in place: fix the cause, then svcmgr clear; or abort)",
		e.Target.String(), e.Target.ID, e.Reason)
}

// InstanceFrozen: the instance of a service frozen or thawed here.
type InstanceFrozen struct {
	Svc    string `json:"svc"`
	Frozen bool   `json:"frozen"`
	Reason string `json:"reason"`
}

func (e InstanceFrozen) Kind() string    { return "instance_" + frozenWord(e.Frozen) }
func (e InstanceFrozen) Service() string { return e.Svc }
func (InstanceFrozen) Level() Level      { return Info }
func (e InstanceFrozen) String() string  { return "instance " + frozenWord(e.Frozen) + ": " + e.Reason }

// NodeFrozen: the node frozen or thawed. Split: the freeze of a
// split_action stop (State.SplitFrozen), not an admin's.
type NodeFrozen struct {
	Frozen bool   `json:"frozen"`
	Reason string `json:"reason"`
	Split  bool   `json:"split,omitempty"`
}

func (e NodeFrozen) Kind() string  { return "node_" + frozenWord(e.Frozen) }
func (NodeFrozen) Service() string { return "" }
func (NodeFrozen) Level() Level    { return Info }
func (e NodeFrozen) String() string {
	switch {
	case e.Split && e.Frozen:
		return "node frozen by its split_action: " + e.Reason
	case e.Split:
		return "split freeze ended: " + e.Reason
	}
	return "node " + frozenWord(e.Frozen) + ": " + e.Reason
}

func frozenWord(f bool) string {
	if f {
		return "frozen"
	}
	return "thawed"
}

// InstanceMonitor: the monitor state of the local instance changed.
type InstanceMonitor struct {
	Svc    string               `json:"svc"`
	From   dataset.MonitorState `json:"from"`
	To     dataset.MonitorState `json:"to"`
	Reason string               `json:"reason"`
}

func (InstanceMonitor) Kind() string      { return "instance_monitor" }
func (e InstanceMonitor) Service() string { return e.Svc }
func (InstanceMonitor) Level() Level      { return Info }
func (e InstanceMonitor) String() string {
	return string(e.From) + " -> " + string(e.To) + ": " + e.Reason
}

// ActionBegin: an action ordered (Ready.Run, OwnAction).
type ActionBegin struct {
	Svc    string `json:"svc"`
	Action string `json:"action"`
	Reason string `json:"reason"`
	// FencingToken is HAVEN_FENCING_TOKEN of the action's commands.
	FencingToken uint64 `json:"fencing_token,omitempty"`
}

func (ActionBegin) Kind() string      { return "action_begin" }
func (e ActionBegin) Service() string { return e.Svc }
func (ActionBegin) Level() Level      { return Info }
func (e ActionBegin) String() string  { return e.Action + ": " + e.Reason }

// PeerStatus: this node's conclusion about a peer changed (view.Status).
type PeerStatus struct {
	Node   string             `json:"node"`
	From   dataset.NodeStatus `json:"from"`
	To     dataset.NodeStatus `json:"to"`
	Reason string             `json:"reason,omitempty"`
}

// Kind is peer_up or peer_down when the peer comes up or goes down (the
// kinds readers of the events stream wait for), else peer_status.
func (e PeerStatus) Kind() string {
	switch e.To {
	case dataset.NodeUp:
		return "peer_up"
	case dataset.NodeDown:
		return "peer_down"
	}
	return "peer_status"
}
func (PeerStatus) Service() string { return "" }
func (e PeerStatus) Level() Level {
	if e.To == dataset.NodeDown {
		return Warn
	}
	return Info
}
func (e PeerStatus) String() string {
	s := "peer " + e.Node + " " + string(e.From) + " -> " + string(e.To)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

// NodeMonitor: the node monitor state changed.
type NodeMonitor struct {
	From   dataset.NodeMonitor `json:"from"`
	To     dataset.NodeMonitor `json:"to"`
	Reason string              `json:"reason"`
}

func (NodeMonitor) Kind() string    { return "node_monitor" }
func (NodeMonitor) Service() string { return "" }
func (NodeMonitor) Level() Level    { return Info }
func (e NodeMonitor) String() string {
	return "node monitor " + string(e.From) + " -> " + string(e.To) + ": " + e.Reason
}

// Compat: the live members' compat versions agree again, or no longer.
type Compat struct {
	OK bool `json:"ok"`
	// Reason says which members differ and how (ha disabled).
	Reason string `json:"reason,omitempty"`
}

func (Compat) Kind() string    { return "compat" }
func (Compat) Service() string { return "" }
func (e Compat) Level() Level {
	if e.OK {
		return Info
	}
	return Warn
}
func (e Compat) String() string {
	if e.OK {
		return "cluster members run compatible versions. enable ha orchestration"
	}
	if e.Reason != "" {
		return "cluster members run incompatible versions. disable ha orchestration (" + e.Reason + ")"
	}
	return "cluster members run incompatible versions. disable ha orchestration"
}

// ActionEnd: the commands of an action ended (Err "" when they
// succeeded), or a stop whose commands succeeded left a resource up.
type ActionEnd struct {
	Svc    string `json:"svc"`
	Action string `json:"action"`
	Err    string `json:"error,omitempty"`
}

func (ActionEnd) Kind() string      { return "action_end" }
func (e ActionEnd) Service() string { return e.Svc }
func (e ActionEnd) Level() Level {
	if e.Err != "" {
		return Error
	}
	return Info
}
func (e ActionEnd) String() string {
	if e.Err != "" {
		return e.Action + " failed: " + e.Err
	}
	return e.Action + " ok"
}

// ResourceStatus: the status of a resource of the local instance changed.
type ResourceStatus struct {
	Svc    string         `json:"svc"`
	RID    string         `json:"rid"`
	From   dataset.Status `json:"from"`
	To     dataset.Status `json:"to"`
	Reason string         `json:"reason,omitempty"` // the resource's last log line
}

func (ResourceStatus) Kind() string      { return "resource_status" }
func (e ResourceStatus) Service() string { return e.Svc }
func (ResourceStatus) Level() Level      { return Info }
func (e ResourceStatus) String() string {
	s := e.RID + " " + string(e.From) + " -> " + string(e.To)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

// InstanceStatus: the status (avail) of the local instance changed.
type InstanceStatus struct {
	Svc     string         `json:"svc"`
	From    dataset.Status `json:"from"`
	To      dataset.Status `json:"to"`
	Overall dataset.Status `json:"overall"`
}

func (InstanceStatus) Kind() string      { return "instance_status" }
func (e InstanceStatus) Service() string { return e.Svc }
func (InstanceStatus) Level() Level      { return Info }
func (e InstanceStatus) String() string  { return "avail " + string(e.From) + " -> " + string(e.To) }

// The events below are the drivers' own (the daemon's start and stop,
// config distribution, an impostor): typed like the core's, so that the
// log, the events stream and the timeline read one vocabulary.

// DaemonStarted: the daemon started (Pid, Root and Cluster unset in the
// simulation).
type DaemonStarted struct {
	Compat  int    `json:"compat"`
	Pid     int    `json:"pid,omitempty"`
	Root    string `json:"root,omitempty"`
	Cluster string `json:"cluster,omitempty"`
}

func (DaemonStarted) Kind() string    { return "daemon_start" }
func (DaemonStarted) Service() string { return "" }
func (DaemonStarted) Level() Level    { return Info }
func (e DaemonStarted) String() string {
	return fmt.Sprintf("daemon started (compat %d)", e.Compat)
}

// DaemonStopped: the daemon stopped (mode stop, restart or shutdown).
type DaemonStopped struct {
	Mode string `json:"mode"`
}

func (DaemonStopped) Kind() string     { return "daemon_stop" }
func (DaemonStopped) Service() string  { return "" }
func (DaemonStopped) Level() Level     { return Info }
func (e DaemonStopped) String() string { return "daemon stopped (" + e.Mode + ")" }

// ConfigChanged: a service's config installed here (created, edited,
// received from a peer) or deleted.
type ConfigChanged struct {
	Svc    string `json:"svc"`
	Change string `json:"change"` // "config created", "config received from n2", "deleted", ...
}

func (ConfigChanged) Kind() string      { return "config" }
func (e ConfigChanged) Service() string { return e.Svc }
func (ConfigChanged) Level() Level      { return Info }
func (e ConfigChanged) String() string  { return e.Change }

// Impostor: frames authenticated under this node's own name come from a
// later run elsewhere: another daemon runs with this node's name.
type Impostor struct {
	Addr   string `json:"addr"`
	Reason string `json:"reason"`
}

func (Impostor) Kind() string    { return "impostor" }
func (Impostor) Service() string { return "" }
func (Impostor) Level() Level    { return Error }
func (e Impostor) String() string {
	return "another daemon runs with this node's name: " + e.Reason
}

// StreamStarted: the first event of an events stream (`nodemgr events`),
// telling the reader the stream is live. The events bus of the daemon
// sends it, not the core.
type StreamStarted struct{}

func (StreamStarted) Kind() string    { return "stream" }
func (StreamStarted) Service() string { return "" }
func (StreamStarted) Level() Level    { return Info }
func (StreamStarted) String() string  { return "streaming events" }

// EventsLost: a reader of the events stream was too slow and missed Lost
// events (the bus drops rather than blocks the loop); it precedes the next
// event the reader gets.
type EventsLost struct {
	Lost int `json:"lost"`
}

func (EventsLost) Kind() string    { return "lost" }
func (EventsLost) Service() string { return "" }
func (EventsLost) Level() Level    { return Warn }
func (e EventsLost) String() string {
	return fmt.Sprintf("lost %d events: this reader was too slow", e.Lost)
}
