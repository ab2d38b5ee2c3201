// Package instsm is the state of the core's instances: one Instance per
// service installed here, with what the driver says of it (Spec), its
// status, its action in flight (InFlight), and the state each rule keeps
// of it (Checks, Ladder, Multi, FastAck). The rules that read and change
// it are package node's (node/instances.go, node/checks.go,
// node/ladder.go, node/multiactive.go, node/fastack.go, ...).
package instsm

import (
	"time"

	"haven/dataset"
	"haven/node/vocab"
)

// Instance is the core's part of a service's instance on this node: its
// monitor (dataset.InstanceMonitor), the last decision's placement leader
// and flags, the action in flight, and the status from its checks. The
// driver runs its checks and actions.
type Instance struct {
	Name string
	// Local is true when this node is one of the service's nodes.
	Local bool
	Spec  Spec
	// Gen counts the installs of the instance (config changes): a check
	// of an older one is stale.
	Gen uint64

	// the status, from the last checks
	Res map[string]dataset.Resource
	// PubRes are the resources last published (node/published.go): never
	// written once handed out.
	PubRes  map[string]dataset.Resource
	Avail   dataset.Status
	Overall dataset.Status
	// Chk is the instance's status checks (node/checks.go).
	Chk Checks
	// Act is the action in flight.
	Act    InFlight
	Mon    dataset.InstanceMonitor
	Leader bool
	Flags  string
	// Flex is what the decision passes said of a flex service's count
	// (node/flexevents.go).
	Flex FlexCount
	// Retiring: this node was removed from the service's nodes while the
	// instance ran here; its stop and the check that ends it run with the
	// drivers of the config that had it (the driver keeps them).
	Retiring bool
	// Multi is what the rule of a service up on several nodes keeps
	// (node/multiactive.go).
	Multi Multi
	// Lad is the instance's place on the restart ladder (node/ladder.go).
	Lad Ladder
	// RanElsewhere is the node where the service was last seen running
	// while not here (node/failover.go); StartReason is the reason of the
	// last start ordered.
	RanElsewhere, StartReason string
	// Fa is the ready window of the instance (node/fastack.go).
	Fa FastAck
	// RolloutSaid is the last rollout progress said of the service
	// (node/rolloutnote.go), zero before any.
	RolloutSaid RolloutSaid
	// RolloutSpoke is where the service's rollout stood (its id, then a
	// word) when this node last spoke for it (node/rollback.go): said once.
	RolloutSpoke string
	// SkipSeen is since when this node's rollout turn has been due only
	// by skipping nodes down (update_down_nodes skip), zero when not.
	SkipSeen time.Time
}

// RolloutSaid is what a rollout_progress event said: the service's
// newest rollout (ID "" when none) and its running instances on this
// node's config or an older one.
type RolloutSaid struct {
	ID, State                         string
	OK, Failed, Pending, Current, Old int
}

// InFlight is the action in flight on an instance, and how long the last
// ones took.
type InFlight struct {
	// Caller is the ticket answered when the action in flight ends (0:
	// none); PrevState is the monitor state before it, for node's actionAborted.
	Caller    vocab.Ticket
	PrevState dataset.MonitorState
	Busy      string // the action in flight: "start" | "stop"
	// BusyAt is when the action in flight began; LastStart and LastStop
	// how long the last start and stop took (dataset.Instance.LastStartMs).
	BusyAt              time.Time
	LastStart, LastStop time.Duration
}

// SawUp records that the resource rid was up, or started, in this run.
func (inst *Instance) SawUp(rid string) {
	if inst.Lad.UpSeen == nil {
		inst.Lad.UpSeen = map[string]bool{}
	}
	inst.Lad.UpSeen[rid] = true
}

// Spec is what the driver says of an instance when it installs it.
type Spec struct {
	// Local is true when this node is one of the service's nodes.
	Local bool
	// Runnable is true when the driver could build its resource drivers
	// here: only then is it checked and are actions run.
	Runnable bool
	// Monitored is true when it has monitored resources (checked every
	// monitor interval, between the full checks).
	Monitored bool
	// Cause says why it is not Runnable (in the refusals of actions).
	Cause string
	// Resources are its resources in start order (the disabled ones left
	// out), MonitorAction the service's monitor_action: the restart
	// ladder's settings (node/ladder.go).
	Resources     []ResourceSpec
	MonitorAction string
	// Flex is true for a flex service (DEFAULT.topology): its instances
	// run on several nodes on purpose.
	Flex bool
}

// FlexCount is the last decision pass's count of a flex service: Target
// the instances it keeps up (monitor.Decision.FlexTarget: the status
// shows it), Up the nodes where one is up, Lost those no longer up since
// the count was last at the target (a start here replaces the first), Seen
// once a pass counted.
type FlexCount struct {
	Target int
	Up     []string
	Lost   []string
	Seen   bool
}

// ResourceSpec is what the ladder reads of one resource of an instance:
// its restart, restart_delay, restart_delay_max (0: RestartDelay) and
// restart_window (0: none) keywords.
type ResourceSpec struct {
	RID             string
	Monitor         bool
	Restart         int
	RestartDelay    time.Duration
	RestartDelayMax time.Duration
	RestartWindow   time.Duration
}

// Checks are the status checks of an instance.
type Checks struct {
	// Checking is set while a check runs; PendingCheck asks for a full
	// one as soon as it ends; LastFull and LastMon are the last ends.
	Checking          bool
	PendingCheck      bool
	LastFull, LastMon time.Time
	// Ending is the action whose commands ended, waiting on the full
	// check that follows (at EndAt).
	Ending *ActionEnd
	EndAt  time.Time
	// CheckWaiters are answered when the next full check ends.
	CheckWaiters []vocab.Ticket
	// Faults are the hard and fatal Faults of the last check, to Act on
	// each once (Faults.go).
	Faults string
}

// ActionEnd is the end of an action's commands, waiting on the full
// check that follows.
type ActionEnd struct {
	Kind string
	Err  error
}

// Ladder is an instance's place on the restart ladder.
type Ladder struct {
	// PendRID is the monitored resource whose restart is due at PendAt.
	PendRID string
	PendAt  time.Time
	// RestartRID is the resource of the ladder's restart in flight.
	RestartRID string
	// UpSeen are the monitored resources seen up, or started, in this
	// run of the daemon: only their failures climb the ladder (a resource
	// found down when the daemon starts is no failure of a running
	// instance: the service may run elsewhere by now).
	UpSeen map[string]bool
	// UpElsewhere is a node where the service was up at the last decision
	// pass ("" none): the ladder is not this node's then.
	UpElsewhere string
}

// Multi is what the rule of a service up on several nodes keeps of
// an instance.
type Multi struct {
	// MultiActive lists the nodes where the service was last seen up when
	// more than one ("" otherwise), to say it once per change; MultiKept
	// and MultiSince are the keeper and since when it was seen fresh,
	// MultiDone is set once its rule was applied.
	MultiActive string
	MultiKept   string
	MultiSince  time.Time
	MultiDone   bool
}

// FastAck is the ready window of an instance.
type FastAck struct {
	// Ack is the peer's claim this node acks (monitor's Decision.ReadyAck,
	// published as Instance.ReadyAck); LastClaim is the start of the last
	// ready window of this instance.
	Ack       string
	LastClaim time.Time
}
