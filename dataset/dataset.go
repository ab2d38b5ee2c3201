package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Status is an availability status of a resource, an instance or a service.
type Status string

const (
	StatusUp        Status = "up"
	StatusDown      Status = "down"
	StatusWarn      Status = "warn"
	StatusNA        Status = "n/a"
	StatusStdbyUp   Status = "stdby up"
	StatusStdbyDown Status = "stdby down"
	StatusUnknown   Status = "unknown"
)

// MonitorState is the state of a service instance's monitor (docs/contract.md section 6).
type MonitorState string

const (
	Idle         MonitorState = "idle"
	Ready        MonitorState = "ready"
	Starting     MonitorState = "starting"
	StartFailed  MonitorState = "start failed"
	Restarting   MonitorState = "restarting"
	Stopping     MonitorState = "stopping"
	StopFailed   MonitorState = "stop failed"
	Freezing     MonitorState = "freezing"
	Thawing      MonitorState = "thawing"
	WaitParents  MonitorState = "wait parents"
	WaitChildren MonitorState = "wait children"
	// WaitFence: the local node would start the service, but a lost peer
	// of the service has not certainly stopped it yet (quorum on: not
	// fenced, its self-stop deadline not passed).
	WaitFence MonitorState = "wait fence"
	Tocing    MonitorState = "tocing"
)

// Transitioning reports whether the state is one of the "*ing" states.
func (s MonitorState) Transitioning() bool {
	switch s {
	case Starting, Restarting, Stopping, Freezing, Thawing, Tocing:
		return true
	}
	return false
}

// Failed reports whether the state blocks orchestration until a clear.
func (s MonitorState) Failed() bool { return s == StartFailed || s == StopFailed }

// NodeMonitor is the state a node announces about itself.
type NodeMonitor string

const (
	NodeIdle        NodeMonitor = "idle"
	NodeInit        NodeMonitor = "init"
	NodeRejoin      NodeMonitor = "rejoin"
	NodeMaintenance NodeMonitor = "maintenance"
	NodeShutting    NodeMonitor = "shutting"
	NodeDraining    NodeMonitor = "draining"
)

// NodeStatus is what an observer concludes about a node.
type NodeStatus string

const (
	NodeUp         NodeStatus = "up"
	NodeDown       NodeStatus = "down"
	NodeStMaint    NodeStatus = "maintenance"
	NodeStShutting NodeStatus = "shutting"
	NodeStUnknown  NodeStatus = "unknown"
)

// Global expectations (admin targets), docs/contract.md section 5.
const (
	ExpectNone    = "none"
	ExpectStarted = "started"
	ExpectStopped = "stopped"
	ExpectPlaced  = "placed" // "placed@NODE" when the target names a node
	ExpectFrozen  = "frozen"
	ExpectThawed  = "thawed"
	ExpectDeleted = "deleted"
	ExpectAborted = "aborted"
)

// Resource is the status of one resource of an instance.
type Resource struct {
	Status           Status `json:"status"`
	Label            string `json:"label"`
	Monitor          bool   `json:"monitor"`
	Optional         bool   `json:"optional,omitempty"`
	Disabled         bool   `json:"disabled,omitempty"`
	RestartRemaining int    `json:"restart_remaining"`
	// LastFailure is the last time a monitored resource was found down
	// where the instance runs (the restart ladder), with what its check
	// said; zero when none is remembered.
	LastFailure   string    `json:"last_failure,omitempty"`
	LastFailureAt time.Time `json:"last_failure_at,omitempty"`
	// Log is the last line of the resource's last action or check, if any.
	Log string `json:"log,omitempty"`
	// Fault is set when the last check says the resource cannot run here
	// ("hard": an OCF agent not installed, or its monitor exited 2 to 5)
	// or is not configured right ("fatal": exit 6); Log says why.
	Fault string `json:"fault,omitempty" since:"2"`
}

// InstanceMonitor is the monitor part of an instance.
type InstanceMonitor struct {
	State        MonitorState `json:"state"`
	GlobalExpect string       `json:"global_expect"`
	LocalExpect  string       `json:"local_expect"` // "started" or "none"
	// StateSince is when the state was entered, on the announcing node's clock.
	// Only the node that owns the instance reads it (e.g. the ready window).
	StateSince time.Time `json:"state_since,omitempty"`
	// Error is the cause of a failed state (start failed, stop failed): the
	// failing resource and its last line. Empty in any other state.
	Error string `json:"error,omitempty"`
}

// Instance is a service instance on one node.
type Instance struct {
	Avail           Status              `json:"avail"`
	Overall         Status              `json:"overall"`
	Frozen          bool                `json:"frozen"`
	Monitor         InstanceMonitor     `json:"monitor"`
	PlacementLeader bool                `json:"placement_leader"`
	Flags           string              `json:"flags"`
	Resources       map[string]Resource `json:"resources"`
	// ConfigVersion is the version of the service config this instance runs.
	ConfigVersion Version `json:"config_version"`
	// ConfigError is set when the node's copy of the config does not parse:
	// the instance is not managed (avail unknown) until it is repaired.
	ConfigError string `json:"config_error,omitempty"`
	// Excluded says why this node is out of the placement candidates of
	// the service: its monitor_action switch moved the service away, until
	// a clear or until the service is up on another node; or a resource
	// cannot run here (a hard fault, FaultExclusion), while that lasts.
	// Empty otherwise.
	Excluded string `json:"excluded,omitempty"`
	// GaveUp says why the daemon stopped restarting a failed monitored
	// resource here (restarts spent, and the monitor_action taken or why
	// none was): the orchestrator does not start the instance again by
	// itself until a clear, a start, or the resource is up again.
	GaveUp string `json:"gave_up,omitempty"`
	// Stale is set in a status object on the instances of a node that the
	// producing node does not hear (down, unknown) or has not heard confirm
	// its data since it came back: they are the node's last known data, not
	// its present. Their avail is then "unknown" and they are never leader.
	Stale bool `json:"stale,omitempty"`
	// AgeMs is, for a stale instance, how long ago its node was last heard,
	// in milliseconds (-1: never heard).
	AgeMs int64 `json:"age_ms,omitempty"`
	// FencingToken is the fencing token of the last start of the service
	// on this node (HAVEN_FENCING_TOKEN of the running instance), 0 when it
	// never started here; FencingSeen is the highest token the node knows
	// for the service anywhere (docs/fencing-token.md).
	FencingToken uint64 `json:"fencing_token,omitempty"`
	FencingSeen  uint64 `json:"fencing_seen,omitempty"`
	// ReadyAck is the claim (ClaimID: the claimer and the start of its
	// ready window) this node saw and does not contest, with
	// node.ready_fast_ack on; empty otherwise (docs/operations.md, "Fast
	// ack"). The claimer starts before its window ends once every live
	// node of the service acks its claim.
	ReadyAck string `json:"ready_ack,omitempty"`
	// LastStartMs and LastStopMs are how long the instance's last start
	// and last stop took on this node (from the action's begin to its
	// end, the status check after it included), in milliseconds; zero
	// until measured. svcmgr simulate takes them as the action durations.
	LastStartMs int64 `json:"last_start_ms,omitempty" since:"2"`
	LastStopMs  int64 `json:"last_stop_ms,omitempty" since:"2"`
	// RunDigest is the digest of the config the instance was last started
	// (or restarted whole) with by the daemon; empty when unknown. An
	// instance up whose RunDigest differs from its node's config runs an
	// older config (OldConfig).
	RunDigest string `json:"run_digest,omitempty" since:"2"`
	// ConfigDigest is the digest of the config installed on the node
	// (the one the next start takes).
	ConfigDigest string `json:"config_digest,omitempty" since:"2"`
	// Rollout is the newest rollout of the service this node knows (a
	// relayed record, never changed once made: replaced whole), and
	// RolloutMark how this node's own turn in it went (behaviour.md 11).
	Rollout     *Rollout     `json:"rollout,omitempty" since:"2"`
	RolloutMark *RolloutMark `json:"rollout_mark,omitempty" since:"2"`
}

// ClaimID names one ready window of a service: the claiming node and when
// its ready state began (its own clock, as it announces it in
// InstanceMonitor.StateSince). A new window of the same node is a new
// claim: an ack of an older one does not count for it.
func ClaimID(node string, since time.Time) string {
	return node + "@" + strconv.FormatInt(since.UnixNano(), 10)
}

// Version is a logical (Lamport) version with the origin node as tie-break.
// It orders admin targets and config edits without comparing wall clocks.
type Version struct {
	Counter uint64 `json:"counter"`
	Origin  string `json:"origin"`
}

// Newer reports whether v is strictly after o.
func (v Version) Newer(o Version) bool {
	if v.Counter != o.Counter {
		return v.Counter > o.Counter
	}
	return v.Origin > o.Origin
}

// IsZero reports whether v was never set.
func (v Version) IsZero() bool { return v.Counter == 0 && v.Origin == "" }

// Target is an admin's cluster-wide target for one service.
type Target struct {
	// Expect is one of the Expect* constants.
	Expect string `json:"expect"`
	// Node is set for "placed@NODE" targets, and for the targets of one
	// node's instance of a flex service ("stopped@NODE", "started@NODE").
	Node string `json:"node,omitempty"`
	// ID is the orchestration id returned to the admin.
	ID      string  `json:"id"`
	Version Version `json:"version"`
	// Sig is an admin's signature of the target ("NAME SERIAL BASE64":
	// config.SignTarget), needed from a peer when the cluster lists
	// [admin_keys] (docs/security.md, "Admin-signed deletions and targets").
	Sig string `json:"sig,omitempty"`

	// Unknown: the fields of a newer release, kept (unknown.go).
	Unknown Unknown `json:"-"`
}

// Active reports whether t asks for something: an aborted target is kept
// (its version orders the abort against older targets on every node) but
// asks for nothing, and the status shows no global expect for it.
func (t Target) Active() bool {
	return t.Expect != "" && t.Expect != ExpectNone && t.Expect != ExpectAborted
}

// String renders the target as in the status object ("placed@n2",
// "stopped@n2").
func (t Target) String() string {
	if t.Expect == "" {
		return ExpectNone
	}
	if t.Node != "" {
		return t.Expect + "@" + t.Node
	}
	return t.Expect
}

// Node is everything a node announces about itself.
type Node struct {
	Name        string            `json:"name"`
	Monitor     NodeMonitor       `json:"monitor"`
	Frozen      bool              `json:"frozen"`
	Compat      int               `json:"compat"`
	Load15      float64           `json:"load15"`
	MemAvailPct float64           `json:"mem_avail_pct"`
	Labels      map[string]string `json:"labels"`
	// Services are the instances this node hosts (services whose nodes include it).
	Services map[string]Instance `json:"services"`
	// Targets are the admin targets this node knows, by service.
	Targets map[string]Target `json:"targets,omitempty"`
	// Configs are the service configs this node knows, by service, with
	// their logical versions: the newest version wins on every node.
	Configs map[string]ConfigEntry `json:"configs,omitempty"`
	// Clears are the newest "svcmgr clear" requests this node knows, by
	// service: every node applies each one once.
	Clears map[string]ClearRequest `json:"clears,omitempty"`
	// Gen increases on every change of this node's data (used for deltas).
	Gen uint64 `json:"gen"`

	// FrozenReason says why the node is frozen: an admin freeze, or the
	// daemon's own (rejoin grace period ended, impostor...). Empty when thawed.
	FrozenReason string `json:"frozen_reason,omitempty"`

	// SplitAction is the node's split_action (cluster.quorum on): the
	// survivors count on a lost node's self-stop only when it is stop,
	// crash or reboot.
	SplitAction string `json:"split_action,omitempty"`

	// SplitFrozen: the node lost a quorum vote and its split_action stop
	// froze it (SplitFrozenReason says the vote). Apart from Frozen (an
	// admin's freeze, or another of the daemon's own): it ends by itself
	// once the node holds the quorum again or the cluster is whole
	// (docs/behaviour.md 3). The node is no candidate meanwhile, yet it
	// runs the race.
	SplitFrozen       bool   `json:"split_frozen,omitempty" since:"2"`
	SplitFrozenReason string `json:"split_frozen_reason,omitempty" since:"2"`
	// Conf is the digest of the node's configuration that must agree on
	// every member (ClusterConf); nil from a node of an earlier release.
	Conf *ClusterConf `json:"conf,omitempty" since:"2"`
	// Guard is set while the node's guard is armed: the survivors count
	// on it to end the node's failover services within its lease and act
	// after the node stopped renewing (docs/behaviour.md 3.1). nil: no
	// guard armed (none, or a node of an earlier release): they count
	// on the node's own stop. Sent from format 2 on (since.go): until the
	// cluster feature level reaches it, the peers count on the node's own
	// stop.
	Guard *GuardInfo `json:"guard,omitempty" since:"2"`
	// Capacity is what the node offers to the services' requests
	// (node.capacity_cpu and capacity_mem, the host's by default). nil
	// from a node of an earlier release: placement starts no service
	// with requests there (its capacity is not known). Sent from format
	// 2 on (since.go).
	Capacity *Capacity `json:"capacity,omitempty" since:"2"`

	// Format is the node's format versions (node/upgrade). It is not part
	// of the dataset's JSON (nor of its digest): every heartbeat message's
	// header carries it, and the receiver sets it on the copy it hands over.
	Format Format `json:"-"`
}

// Capacity is a node's capacity for the services' requests.
type Capacity struct {
	// CPUMilli is in thousandths of a core, MemBytes in bytes.
	CPUMilli int64 `json:"cpu_milli"`
	MemBytes int64 `json:"mem_bytes"`
}

// GuardInfo is what a node says of its armed guard.
type GuardInfo struct {
	// LeaseMs is the lease the daemon renews (node.guard_lease), ActMs
	// the bound of the guard's action after it, in milliseconds.
	LeaseMs int64 `json:"lease_ms"`
	ActMs   int64 `json:"act_ms"`
	// Maintenance: the daemon stopped for maintenance and left its guard
	// a lease that ends before maintenance_grace_period does (counted
	// from the receipt of this data): its services are ended by then.
	Maintenance bool `json:"maintenance,omitempty"`
	// Anchored: the daemon never lets the lease run past the send time of
	// its newest beat that enough members acknowledged for a quorum (or a
	// one-vote arbitrator's lease it counts on) plus LeaseMs: the
	// survivors count the lease from a member's declaration of the node
	// down (docs/behaviour.md 3.1).
	Anchored bool `json:"anchored,omitempty"`
	// HBTimeoutMs is the node's hb.timeout: how long it waits, at the
	// least, between hearing a peer and declaring it down (the survivors'
	// gate for an anchored peer counts on the shortest of the members').
	HBTimeoutMs int64 `json:"hb_timeout_ms,omitempty"`
}

// Format is what a node says of its versions: Max, the newest format
// version it reads; Level, the cluster feature level it runs at. Zero
// (a node of the first release, which says nothing) means 1.
type Format struct {
	Max   int
	Level int
	// Release is the node's release (its --version), "" when it does
	// not say (the first release).
	Release string
}

// Clone returns a deep copy.
func (n Node) Clone() Node {
	c := n
	c.Labels = make(map[string]string, len(n.Labels))
	for k, v := range n.Labels {
		c.Labels[k] = v
	}
	c.Services = make(map[string]Instance, len(n.Services))
	for k, v := range n.Services {
		r := make(map[string]Resource, len(v.Resources))
		for rk, rv := range v.Resources {
			r[rk] = rv
		}
		v.Resources = r
		c.Services[k] = v
	}
	if n.Clears != nil {
		c.Clears = make(map[string]ClearRequest, len(n.Clears))
		for k, v := range n.Clears {
			c.Clears[k] = v
		}
	}
	if n.Configs != nil {
		c.Configs = make(map[string]ConfigEntry, len(n.Configs))
		for k, v := range n.Configs {
			if v.Includes != nil {
				inc := make(map[string]uint64, len(v.Includes))
				for o, cnt := range v.Includes {
					inc[o] = cnt
				}
				v.Includes = inc
			}
			c.Configs[k] = v
		}
	}
	if n.Targets != nil {
		c.Targets = make(map[string]Target, len(n.Targets))
		for k, v := range n.Targets {
			c.Targets[k] = v
		}
	}
	if n.Guard != nil {
		g := *n.Guard
		c.Guard = &g
	}
	if n.Capacity != nil {
		k := *n.Capacity
		c.Capacity = &k
	}
	return c
}

// ConfigEntry is one service config as distributed between nodes. A
// deleted service keeps a tombstone (Deleted, no Raw) so that the deletion
// wins over older copies still travelling.
type ConfigEntry struct {
	Version Version `json:"version"`
	// Digest is ConfigDigest(Raw) ("" for a tombstone): it ties the version
	// to one content, so that two nodes holding the same version with
	// different contents converge (see Wins).
	Digest string `json:"digest,omitempty"`
	// Includes maps each node that edited this config to the counter of its
	// newest edit this content descends from: a node knows its own edit
	// (made at counter c) is in the content when Includes[node] >= c.
	Includes map[string]uint64 `json:"includes,omitempty"`
	Raw      string            `json:"raw,omitempty"`
	Deleted  bool              `json:"deleted,omitempty"`
	// Sig is a tombstone's admin signature ("NAME SERIAL BASE64":
	// config.SignDeletion), needed from a peer when the cluster lists
	// [admin_keys].
	Sig string `json:"sig,omitempty"`

	// Unknown: the fields of a newer release, kept (unknown.go).
	Unknown Unknown `json:"-"`
}

// ConfigDigest is the hex SHA-256 of a config's bytes.
func ConfigDigest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// Wins reports whether e replaces o on a node that holds o: the newer
// version wins; on the same version (two nodes that hold different
// contents under one version, after a crash or a change made behind
// Haven's back) the higher digest wins, and a tombstone ("" digest) loses
// to a content. Every node applies the same rule, so all converge on one
// content.
func (e ConfigEntry) Wins(o ConfigEntry) bool {
	if e.Version != o.Version {
		return e.Version.Newer(o.Version)
	}
	return e.Digest > o.Digest
}

// IncludesEdit reports whether e's content descends from the edit that
// node made at counter c (an edit has a counter: 0 is never included).
// An entry that cannot be true (Sane: the edit's counter after its
// version) includes nothing.
func (e ConfigEntry) IncludesEdit(node string, c uint64) bool {
	n := e.Includes[node]
	return c != 0 && !e.Deleted && n >= c && n <= e.Version.Counter
}

// Sane tells why a peer's entry cannot be true, nil when it can: its
// lineage holds an edit made after its version (every edit it descends
// from was witnessed before the version was made, so its counter is below
// the version's). Its counter is bounded by the receiver's clock
// (node/versions.go).
func (e ConfigEntry) Sane() error {
	bad := ""
	for o, n := range e.Includes {
		if n > e.Version.Counter && (bad == "" || o < bad) {
			bad = o
		}
	}
	if bad != "" {
		return fmt.Errorf("lineage holds an edit of %s at counter %d, after the version (%d)", bad, e.Includes[bad], e.Version.Counter)
	}
	return nil
}

// ClearRequest asks the nodes to reset a failed monitor state: Node "" means
// every node.
type ClearRequest struct {
	Node    string  `json:"node,omitempty"`
	Version Version `json:"version"`

	// Unknown: the fields of a newer release, kept (unknown.go).
	Unknown Unknown `json:"-"`
}

// faultExcluded marks the Instance.Excluded of a hard resource fault.
const faultExcluded = " cannot run here: "

// FaultExclusion is the Instance.Excluded of a resource that cannot run
// on the node (a hard fault: the agent not installed, its monitor exited
// 2 to 5): the node is out of the candidates while the fault lasts, and
// back by itself once a check finds the resource fine.
func FaultExclusion(rid, reason string) string {
	return rid + faultExcluded + strings.TrimPrefix(reason, strings.TrimPrefix(faultExcluded, " "))
}

// IsFaultExclusion reports whether an Instance.Excluded is a hard fault's
// (FaultExclusion), which ends by itself, rather than a monitor_action
// switch's, which lasts until a clear or the service up elsewhere.
func IsFaultExclusion(excluded string) bool {
	rid, _, ok := strings.Cut(excluded, faultExcluded)
	return ok && rid != "" && !strings.ContainsAny(rid, " :")
}

// ClusterConf is what a node announces of the configuration every member
// must share: a digest of each part (the first 8 bytes of a SHA-256, in
// hex), so that a member whose files differ is found and named without
// the files crossing the wire. cluster.toml should be the same file on
// every node; its parts that decide who survives a split and who fences
// whom (the members, the quorum, the arbitrators, the fence commands)
// and node.toml's hb.disk.fence must be.
type ClusterConf struct {
	Members     string `json:"members,omitempty"`
	Quorum      string `json:"quorum,omitempty"`
	Arbitrators string `json:"arbitrators,omitempty"`
	Stonith     string `json:"stonith,omitempty"`
	DiskFence   string `json:"disk_fence,omitempty"`
}

// ConfParts names the parts of a ClusterConf, as Differs says them.
var ConfParts = []string{"cluster.toml [nodes]", "cluster.toml quorum", "cluster.toml [arbitrator.*]", "cluster.toml [stonith.*]", "node.toml hb.disk.fence"}

// Differs lists the parts (ConfParts) in which c and o differ.
func (c *ClusterConf) Differs(o *ClusterConf) []string {
	var out []string
	for i, same := range []bool{c.Members == o.Members, c.Quorum == o.Quorum, c.Arbitrators == o.Arbitrators,
		c.Stonith == o.Stonith, c.DiskFence == o.DiskFence} {
		if !same {
			out = append(out, ConfParts[i])
		}
	}
	return out
}

// OldConfig reports whether the instance runs a config other than the one
// installed on its node (known only when both digests are).
func (i Instance) OldConfig() bool {
	return i.RunDigest != "" && i.ConfigDigest != "" && i.RunDigest != i.ConfigDigest
}
