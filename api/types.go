package api

import (
	"time"

	"haven/dataset"
)

// Routes of the local API.
const (
	PathStatus        = "/status"           // GET: dataset.ClusterStatus
	PathDaemonStatus  = "/daemon/status"    // GET: DaemonStatus
	PathDaemonStop    = "/daemon/stop"      // POST StopRequest
	PathNodeAction    = "/node/action"      // POST NodeActionRequest
	PathEvents        = "/events"           // GET: stream of Event, one JSON object a line
	PathServices      = "/services"         // GET: []ServiceEntry
	PathCreate        = "/services/create"  // POST CreateRequest
	PathServiceAction = "/services/action"  // POST ActionRequest -> ActionResponse
	PathConfig        = "/services/config"  // GET ?name=S: raw config text
	PathKeyword       = "/services/keyword" // POST KeywordRequest (set/unset/get)
	PathLogs          = "/services/logs"    // GET ?name=S&follow=1&lines=N&node=N: text lines
)

// Error is the body of every non-2xx answer.
type Error struct {
	Error string `json:"error"`
	// Status is the exit status the CLI should use (1 failed, 2 bad input).
	Status int `json:"status"`
}

// DaemonStatus answers `nodemgr daemon status`.
type DaemonStatus struct {
	Node    string    `json:"node"`
	Pid     int       `json:"pid"`
	Started time.Time `json:"started"`
	Uptime  string    `json:"uptime"`
	Compat  int       `json:"compat"`
	Monitor string    `json:"monitor"`
	// Frozen is the node's freeze (an admin's, or the daemon's rejoin
	// rule), SplitFrozen the freeze of its split_action (a quorum vote
	// lost: it ends by itself), each with its reason.
	Frozen            bool         `json:"frozen,omitempty"`
	FrozenReason      string       `json:"frozen_reason,omitempty"`
	SplitFrozen       bool         `json:"split_frozen,omitempty"`
	SplitFrozenReason string       `json:"split_frozen_reason,omitempty"`
	Peers             []PeerStatus `json:"peers"`
	HB                HBStatus     `json:"hb"`
	// StateError is set while the node's durable state cannot be written
	// (R/var read-only or full): changes are refused until it can.
	StateError string `json:"state_error,omitempty"`
	// StateErrorSince is when the writes began to fail.
	StateErrorSince time.Time `json:"state_error_since,omitzero"`
	// StateFailedWrites counts the failed writes since then.
	StateFailedWrites int `json:"state_failed_writes,omitempty"`
	// Disk is the disk heartbeat, when [hb.disk] is set.
	Disk *dataset.HBDisk `json:"disk,omitempty"`
	// Passes is the number of decision passes the daemon ran since it
	// started (full and incremental): a pass looks at the whole view and
	// decides; "nothing happened" holds only over passes that ran.
	Passes uint64 `json:"passes"`
	// Checks is the number of status checks of the local instances ended
	// since the daemon started (periodic and ordered).
	Checks uint64 `json:"checks"`
	// Quiet: the node acted on all it knows (no pass due, its data sent,
	// no write pending, no action running, no wake-up armed, no rule of
	// the tick watching the clock: quorum, rejoin): it does nothing more
	// until something changes. Gen is the generation of its
	// data (a peer holds it all when its peers entry shows the same).
	Quiet bool   `json:"quiet"`
	Gen   uint64 `json:"gen"`
	// Guard is the node guard, when node.guard is on.
	Guard *dataset.GuardStatus `json:"guard,omitempty"`

	// Format is the newest format version this node reads, FeatureLevel
	// the cluster feature level it runs at; Upgrade says whether the next
	// node may be upgraded now, and why (docs/operations.md, "Upgrading").
	Format       int    `json:"format,omitempty"`
	FeatureLevel int    `json:"feature_level,omitempty"`
	Upgrade      string `json:"upgrade,omitempty"`
	UpgradeSafe  bool   `json:"upgrade_safe,omitempty"`
	// ConfDiffers says which members' configuration differs from this
	// node's in what must agree (ha orchestration disabled), ""
	// when none does; ConfUnchecked are the members that announce no
	// digest of it (an earlier release).
	ConfDiffers   string   `json:"conf_differs,omitempty"`
	ConfUnchecked []string `json:"conf_unchecked,omitempty"`
}

// PeerStatus is one peer as seen by this node's heartbeat.
type PeerStatus struct {
	Name      string    `json:"name"`
	Addr      string    `json:"addr"`
	Status    string    `json:"status"`
	LastHeard time.Time `json:"last_heard,omitzero"`
	Gen       uint64    `json:"gen"`
	// Stale: its data held is behind what its beats announce (for
	// hb.timeout); Duplicate: two runs of its name are heard at once.
	Stale     bool `json:"stale,omitempty"`
	Duplicate bool `json:"duplicate,omitempty"`
	// Links are the heartbeat links to the peer when more than one.
	Links []LinkStatus `json:"links,omitempty"`
}

// LinkStatus is one heartbeat link to a peer.
type LinkStatus struct {
	Name      string    `json:"name"`
	Addr      string    `json:"addr,omitempty"`
	Up        bool      `json:"up"`
	LastHeard time.Time `json:"last_heard,omitzero"`
	// Degraded: it passes beats but not this node's data to the peer.
	Degraded bool `json:"degraded,omitempty"`
}

// HBStatus holds the heartbeat figures.
type HBStatus struct {
	// Addr is where the heartbeat listens: hb.addr and hb.port, or with
	// several links the first link's address; Links are then every
	// link's address, in order (each link binds its own).
	Addr  string   `json:"addr"`
	Links []string `json:"links,omitempty"`
	// Listening is false on a node alone in its cluster (cluster.toml
	// names no other member): no heartbeat runs, nothing is bound to Addr.
	Listening bool   `json:"listening"`
	Timeout   string `json:"timeout"`
	Interval  string `json:"interval"`
	Sent      uint64 `json:"sent"`
	Received  uint64 `json:"received"`
	// FullsSent and DeltasSent split Sent's data frames; NeedsSent counts
	// the requests for a full copy after a gap (a lost or late delta).
	FullsSent  uint64 `json:"fulls_sent"`
	DeltasSent uint64 `json:"deltas_sent"`
	NeedsSent  uint64 `json:"needs_sent"`
	// ProbesSent counts the beats that asked a silent peer for a beat at
	// once (lost beats); ProbesAnswered the peers' probes answered.
	ProbesSent     uint64 `json:"probes_sent"`
	ProbesAnswered uint64 `json:"probes_answered"`
	// Stalls counts the times this daemon did not run for more than a
	// beat period and a quarter (a stopped process, a paused VM, a starved
	// host), StalledMS their total in milliseconds: time left out of its
	// peers' silences (docs/behaviour.md, "Failure detection").
	Stalls    uint64 `json:"stalls"`
	StalledMS int64  `json:"stalled_ms"`
	// Rejected counts malformed, foreign or unauthenticated traffic;
	// Dropped the frames lost to a full peer queue (repaired by the next
	// full copy); SendErrors the failed sends.
	Rejected   uint64 `json:"rejected"`
	Dropped    uint64 `json:"dropped"`
	SendErrors uint64 `json:"send_errors"`
	// NotOwnKey counts, of Rejected, the frames not sealed with the node
	// key of the member they claim to be from (per-node keys: another
	// holder of the cluster secret speaking as that member, or a member
	// in an earlier step of cluster.node_keys_mode).
	NotOwnKey uint64 `json:"not_own_key,omitempty"`
}

// StopRequest asks the daemon to stop. Mode "stop" leaves services running
// and announces maintenance; "shutdown" stops every local instance first.
type StopRequest struct {
	Mode string `json:"mode"`
}

// NodeActionRequest is freeze, thaw or drain of this node.
type NodeActionRequest struct {
	Action string `json:"action"`
}

// ServiceEntry is one line of `svcmgr ls`.
type ServiceEntry struct {
	Name    string         `json:"name"`
	Avail   dataset.Status `json:"avail"`
	Overall dataset.Status `json:"overall"`
	Nodes   []string       `json:"nodes"`
	// ConfigError is set when the config does not parse on this node.
	ConfigError string `json:"config_error,omitempty"`
}

// CreateRequest installs a new service config.
type CreateRequest struct {
	Name   string `json:"name"`
	Config string `json:"config"`
	// File is the name the user gave, used in error messages.
	File string `json:"file"`
	// Replace allows replacing an existing config (edit config).
	Replace bool `json:"replace,omitempty"`
	// Base is the dataset.ConfigDigest of the config the editor read (edit
	// config): the daemon refuses the replace if the config changed since.
	Base string `json:"base,omitempty"`
	// Force installs a config that names what does not exist yet (a
	// service in hard_affinity or parents, an OCF agent on none of the
	// service's nodes): the daemon answers with warnings instead of
	// refusing it (svcmgr create --force).
	Force bool `json:"force,omitempty"`
}

// ConfigResponse is the answer to a create: what was installed with a
// warning (Force), each naming the file, the line and the key.
type ConfigResponse struct {
	Result   string   `json:"result"`
	Warnings []string `json:"warnings,omitempty"`
}

// ActionRequest is an action on one service.
type ActionRequest struct {
	Name   string `json:"name"`
	Action string `json:"action"` // start stop freeze thaw delete clear abort takeover giveback switch restart rollout
	Local  bool   `json:"local"`
	Node   string `json:"node,omitempty"` // clear --node, switch --to
	// Force lets start --local run a second copy of a service that runs
	// on another node (refused otherwise).
	Force bool `json:"force,omitempty"`
	// Wait asks the daemon to answer only when the target is reached, or
	// at once when it can no longer be reached.
	Wait bool `json:"wait,omitempty"`
	// WaitTimeout bounds a Wait (svcmgr --time): the daemon then answers
	// with where the target stands. Zero waits as long as the caller.
	WaitTimeout time.Duration `json:"wait_timeout,omitempty"`
	// Sig is an admin's signature of the order (svcmgr --key): of the
	// deletion, or of the target the action sets; needed when the cluster
	// lists [admin_keys] (docs/security.md, "Admin-signed deletions and
	// targets").
	Sig string `json:"sig,omitempty"`
}

// ActionResponse tells what was accepted.
type ActionResponse struct {
	// ID is the orchestration id of a cluster-wide target, "" for local actions.
	ID     string `json:"id,omitempty"`
	Result string `json:"result"`
	// WasFrozen is the frozen state of the service before a cluster-wide
	// target action (frozen, mixed, thawed): the started and placed
	// targets thaw every instance, which the CLI says.
	WasFrozen string `json:"was_frozen,omitempty"`
	// Flex is true for a flex service: its start target is reached once
	// its instances are thawed, and svcmgr start --wait then waits for
	// its count in the status.
	Flex bool `json:"flex,omitempty"`
}

// KeywordRequest sets, unsets or gets keywords of one service.
type KeywordRequest struct {
	Name string   `json:"name"`
	Op   string   `json:"op"` // set | unset | get
	Kws  []string `json:"kws"`
	// Force is CreateRequest.Force for a set (svcmgr set --force).
	Force bool `json:"force,omitempty"`
}

// KeywordResponse carries the values of a get, and the warnings of a set
// with Force (ConfigResponse).
type KeywordResponse struct {
	Values   []string `json:"values,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Event is one line of `nodemgr events`.
type Event struct {
	Time    time.Time         `json:"time"`
	Kind    string            `json:"kind"`
	Node    string            `json:"node"`
	Service string            `json:"svc,omitempty"`
	RID     string            `json:"rid,omitempty"`
	Message string            `json:"msg"`
	Fields  map[string]string `json:"fields,omitempty"`
}
