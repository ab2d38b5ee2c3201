package dataset

import "time"

// ClusterStatus is the status object of the contract, section 5.
// `svcmon --format json` prints it; `svcmgr print status --format json`
// prints one entry of Services.
type ClusterStatus struct {
	Cluster  ClusterInfo              `json:"cluster"`
	Nodes    map[string]NodeInfo      `json:"nodes"`
	Services map[string]ServiceStatus `json:"services"`
	// Local is the node that produced this view (an extension of the contract).
	Local string `json:"local,omitempty"`
	// Heartbeat is the producing node's heartbeat view of its peers, by
	// name (an extension of the contract); absent on a one-node cluster.
	Heartbeat map[string]HBPeer `json:"heartbeat,omitempty"`
	// Disk is the producing node's disk heartbeat, when [hb.disk] is set.
	Disk *HBDisk `json:"disk,omitempty"`
	// Guard is the producing node's node guard (an extension of the
	// contract), when node.guard is on.
	Guard *GuardStatus `json:"guard,omitempty"`
}

// GuardStatus is a node's view of its own guard.
type GuardStatus struct {
	// Armed: the guard holds a lease; Maintenance: the lease a clean
	// stop left (it covers maintenance_grace_period).
	Armed       bool `json:"armed"`
	Maintenance bool `json:"maintenance,omitempty"`
	// LeaseMs is node.guard_lease, LeftMs what is left of the lease now,
	// ActMs the bound of the guard's action, in milliseconds.
	LeaseMs int64 `json:"lease_ms"`
	LeftMs  int64 `json:"left_ms"`
	ActMs   int64 `json:"act_ms"`
	// Pid is the guard's process, Targets the failover instances of its
	// kill set.
	Pid     int `json:"pid,omitempty"`
	Targets int `json:"targets"`
	// NotRenewing says why the daemon does not renew the lease now (the
	// node lost the quorum, a vote waits, ...); Error why the guard does
	// not answer.
	NotRenewing string `json:"not_renewing,omitempty"`
	Error       string `json:"error,omitempty"`
	// LastFired is the last time the guard ended services (nil: never,
	// as far as its record goes).
	LastFired *GuardFired `json:"last_fired,omitempty"`
}

// GuardFired is a firing of the guard: when, how long after the lease's
// end, and the services it ended.
type GuardFired struct {
	At       time.Time `json:"at"`
	LateMs   int64     `json:"late_ms"`
	Services []string  `json:"services"`
}

// HBPeer is one peer as the producing node's heartbeat hears it.
type HBPeer struct {
	// Up is the heartbeat's verdict: heard within hb.timeout.
	Up bool `json:"up"`
	// LastHeardMs is how long ago the peer was last heard, in milliseconds,
	// when the status was produced; -1 when never heard.
	LastHeardMs int64 `json:"last_heard_ms"`
	// Gen is the generation of the peer's data held.
	Gen uint64 `json:"gen"`
	// Stale: the data held stayed behind the generation the peer's beats
	// announce (AnnouncedGen) for hb.timeout: heard, but its data is lost
	// on the way; its instances are unknown (shown stale). BehindMs is
	// how long the data held has been behind, when it is.
	Stale        bool   `json:"stale,omitempty"`
	AnnouncedGen uint64 `json:"announced_gen,omitempty"`
	BehindMs     int64  `json:"behind_ms,omitempty"`
	// Duplicate: two runs of the peer's name are heard at once (two
	// daemons with one name: a cloned host); the peer is treated as
	// unknown, not down, while it lasts.
	Duplicate bool `json:"duplicate,omitempty"`
	// Links are the heartbeat links to the peer when it has more than
	// one (several addresses in cluster.toml, or the disk heartbeat): a
	// link down is an alarm, the peer is down only when every link is.
	Links []HBLink `json:"links,omitempty"`
}

// HBLink is one heartbeat link to a peer.
type HBLink struct {
	Name string `json:"name"`           // net1, net2... or disk
	Addr string `json:"addr,omitempty"` // the peer's address on it
	Up   bool   `json:"up"`
	// LastHeardMs: how long ago the link last carried the peer's
	// frames, in milliseconds; -1 when never.
	LastHeardMs int64 `json:"last_heard_ms"`
	// Degraded: the link passes beats but not this node's data to the
	// peer (its data goes over the other links).
	Degraded bool `json:"degraded,omitempty"`
}

// HBDisk is the producing node's view of the disk heartbeat ([hb.disk];
// an extension of the contract): whether the disk answers, and each
// peer's slot as read from it.
type HBDisk struct {
	Path string `json:"path"`
	// Fence: the disk is the fencing device (fence = true), else one more
	// heartbeat link.
	Fence bool `json:"fence"`
	// Open: the disk was opened (it is retried until it is).
	Open bool `json:"open"`
	// Reachable: a good round (this node's slot written and read back,
	// the others read) within hb.disk.timeout.
	Reachable bool `json:"reachable"`
	// Slots are the peers' slots, by node name.
	Slots map[string]HBDiskSlot `json:"slots,omitempty"`
	// NotOwnKey counts the reads of a slot that refused a block not
	// authenticated with its writer's node key (per-node keys: written
	// by another holder of the secret, or a node_keys_mode step skipped).
	NotOwnKey uint64 `json:"not_own_key,omitempty"`
}

// HBDiskSlot is one peer's slot on the shared disk.
type HBDiskSlot struct {
	// Alive: its counter moved within hb.disk.timeout.
	Alive bool `json:"alive"`
	// LastAdvanceMs: how long ago its counter last moved, in
	// milliseconds; -1 when never seen moving.
	LastAdvanceMs int64 `json:"last_advance_ms"`
	// Err is why the slot cannot be read (corrupt, another cluster...).
	Err string `json:"error,omitempty"`
}

// ClusterInfo is the "cluster" member of the status object.
type ClusterInfo struct {
	Name   string `json:"name"`
	Compat bool   `json:"compat"`
	Quorum bool   `json:"quorum"`
	// QuorumState is the producing node's view of the quorum (an extension
	// of the contract), set when Quorum is.
	QuorumState *QuorumInfo `json:"quorum_state,omitempty"`
	// FeatureLevel is the producing node's cluster feature level (the
	// format version every member reads, docs/operations.md "Upgrading").
	FeatureLevel int `json:"feature_level,omitempty"`
	// ConfDiffers says which members' configuration differs from the
	// producing node's in what must agree (ClusterConf): ha orchestration
	// is disabled meanwhile; "" when every member that says agrees.
	// ConfUnchecked are the members heard that say nothing of it (an
	// earlier release).
	ConfDiffers   string   `json:"conf_differs,omitempty"`
	ConfUnchecked []string `json:"conf_unchecked,omitempty"`
}

// QuorumInfo is a node's view of the quorum (cluster.quorum on): the votes
// it counts now, the arbitrators' last answers, its last vote, and the
// takeover gates of the peers it lost.
type QuorumInfo struct {
	SplitAction string            `json:"split_action"`
	Votes       int               `json:"votes"`
	Total       int               `json:"total"`
	Live        []string          `json:"live"`
	Arbitrators []ArbitratorState `json:"arbitrators,omitempty"`
	// LastVote is the last vote's line (the quorum_vote event), empty
	// before the first loss of a peer.
	LastVote    string    `json:"last_vote,omitempty"`
	LastVoteAt  time.Time `json:"last_vote_at,omitzero"`
	LastSurvive bool      `json:"last_survive,omitempty"`
	// Pending: a vote waits for the arbitrators' answers.
	Pending bool `json:"vote_pending,omitempty"`
	// Lost: this node lost a vote and applied its split_action.
	Lost  bool        `json:"lost,omitempty"`
	Gates []GateState `json:"takeover_gates,omitempty"`
	// SelfStop is the takeover gate's timing as this node computes it
	// (an extension of the contract).
	SelfStop *SelfStopInfo `json:"self_stop,omitempty"`
}

// SelfStopInfo is how long the survivors wait before they take a lost
// peer's services over without a fence: its self-stop deadline, DeadlineMs
// after they declared it down (Terms: what it is made of), StopBudgetMs
// being the longest stop of a service (StopBudgetOf; "" when no service
// stops longer than the floor). With a one-vote arbitrator (OneVote) the
// takeover may also come OneVoteMs after the arbitrator granted the
// survivors' side alone. The members of Fenced are fenced instead (a
// fence command or the disk): only a fence clears their takeover.
type SelfStopInfo struct {
	DeadlineMs   int64    `json:"deadline_ms"`
	StopBudgetMs int64    `json:"stop_budget_ms"`
	StopBudgetOf string   `json:"stop_budget_of,omitempty"`
	Terms        string   `json:"terms"`
	OneVote      bool     `json:"one_vote,omitempty"`
	OneVoteMs    int64    `json:"one_vote_ms,omitempty"`
	Fenced       []string `json:"fenced,omitempty"`
	// GuardMs is the deadline for a lost node whose guard is armed (with
	// this node's node.guard_lease), GuardTerms what it is made of,
	// GuardOneVoteMs its wait after a one-vote arbitrator's grant to this
	// side alone (zero for an anchored lease: none); GuardTerms is empty
	// when node.guard is off here.
	GuardMs        int64  `json:"guard_ms,omitempty"`
	GuardTerms     string `json:"guard_terms,omitempty"`
	GuardOneVoteMs int64  `json:"guard_one_vote_ms,omitempty"`
}

// ArbitratorState is an arbitrator and its last probe.
type ArbitratorState struct {
	Name     string    `json:"name"`
	Weight   int       `json:"weight"`
	Answered bool      `json:"answered"`
	Detail   string    `json:"detail,omitempty"`
	ProbedAt time.Time `json:"probed_at,omitzero"`
	// OneVote: a Haven arbitrator (haven://), which gives its vote to one
	// partition at a time; LeaseUntil is when this node stops counting it
	// (zero: no lease runs), Exclusive that its last grant was to this
	// side alone, Winner the partition it names as holding its vote.
	OneVote    bool      `json:"one_vote,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	Exclusive  bool      `json:"exclusive,omitempty"`
	Winner     []string  `json:"winner,omitempty"`
	// Silent: a one-vote arbitrator did not answer this node's last
	// report (Detail says why): whose its vote is, is not known.
	Silent bool `json:"silent,omitempty"`
}

// GateState is the takeover gate of a lost peer: Blocked says why its
// services are not started elsewhere yet ("" once fenced or its self-stop
// deadline passed).
type GateState struct {
	Node     string    `json:"node"`
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	Blocked  string    `json:"blocked,omitempty"`
	Fenced   bool      `json:"fenced,omitempty"`
}

// NodeInfo is one node as seen by the producing node.
type NodeInfo struct {
	Status      NodeStatus        `json:"status"`
	Monitor     NodeMonitor       `json:"monitor"`
	Frozen      bool              `json:"frozen"`
	Compat      int               `json:"compat"`
	Load15      float64           `json:"load15"`
	MemAvailPct float64           `json:"mem_avail_pct"`
	Labels      map[string]string `json:"labels"`

	// FrozenReason is Node.FrozenReason.
	FrozenReason string `json:"frozen_reason,omitempty"`
	// SplitFrozen and SplitFrozenReason are Node's: the freeze of a
	// split_action stop, apart from Frozen (an admin's, or the daemon's
	// rejoin rule): it ends by itself once the node holds the quorum
	// again or the cluster is whole.
	SplitFrozen       bool   `json:"split_frozen,omitempty"`
	SplitFrozenReason string `json:"split_frozen_reason,omitempty"`
	// Format is the newest format version the node reads (1: a node of
	// the first release, which does not say); Release its release
	// (--version), "" when it does not say.
	Format  int    `json:"format,omitempty"`
	Release string `json:"release,omitempty"`
	// Guard is the node's guard while armed, as the node publishes it
	// (the peers' takeover gate counts on it); nil: none armed.
	Guard *GuardInfo `json:"guard,omitempty"`
	// Capacity is the node's capacity for the services' requests, with
	// what the instances holding capacity there request in all; nil when
	// the node publishes none.
	Capacity *NodeCapacity `json:"capacity,omitempty"`
}

// ServiceStatus is one service across its nodes.
type ServiceStatus struct {
	Avail          Status              `json:"avail"`
	Overall        Status              `json:"overall"`
	Frozen         string              `json:"frozen"` // frozen | thawed | mixed
	Orchestrate    string              `json:"orchestrate"`
	Placement      string              `json:"placement"`
	PlacementState string              `json:"placement_state"` // optimal | non-optimal | n/a
	GlobalExpect   string              `json:"global_expect"`
	Nodes          []string            `json:"nodes,omitempty"`
	Instances      map[string]Instance `json:"instances"`
	// ConfigError is set when this node's copy of the config does not
	// parse ("file:line: key: msg"): the daemon keeps the service's state
	// but does not act on it until the config is repaired.
	ConfigError string `json:"config_error,omitempty"`
	// OrderRefused is the last deletion or target of a peer refused on
	// this node for its admin signature (docs/security.md, "Admin-signed
	// deletions and targets"): "the target stopped from n2 is refused
	// here: target_refused: unsigned: ...".
	OrderRefused string `json:"order_refused,omitempty"`
	// Flex is set for a flex service (DEFAULT.topology = "flex"): its
	// counts. Absent for a failover service.
	Flex *FlexStatus `json:"flex,omitempty"`
	// CapacityShort, for a service with requests below its target
	// (failover: up nowhere; flex: fewer up than flex_target), lists its
	// live nodes where one more instance does not fit, with what is short
	// ("n2: cpu 3.5 of 4 requested, needs 1").
	CapacityShort []string `json:"capacity_short,omitempty"`
	// Rollout is where the service's newest rollout stands as this node
	// sees it (behaviour.md 11), absent when it never had one; Configs
	// counts its running instances on the live nodes on this node's
	// config and on an older one.
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	Configs ConfigCount    `json:"configs"`
}

// NodeCapacity is a node's capacity (Capacity) and what the requests of
// the instances that hold capacity there (running, stopping, starting or
// claimed, every service) add up to.
type NodeCapacity struct {
	CPUMilli          int64 `json:"cpu_milli"`
	MemBytes          int64 `json:"mem_bytes"`
	RequestedCPUMilli int64 `json:"requested_cpu_milli"`
	RequestedMemBytes int64 `json:"requested_mem_bytes"`
}

// FlexStatus is what the status shows of a flex service: its instances
// up (avail up, on a node whose data is alive) against its keywords.
type FlexStatus struct {
	Up     int `json:"up"`
	Target int `json:"target"`
	Min    int `json:"min"`
	Max    int `json:"max"`
	// Global is true in the global mode (flex_target = "all"): Target is
	// the number of nodes where an instance belongs, Max the number of
	// the service's nodes.
	Global bool `json:"global,omitempty"`
}
