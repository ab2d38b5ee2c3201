package dataset

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
}

// ClusterInfo is the "cluster" member of the status object.
type ClusterInfo struct {
	Name   string `json:"name"`
	Compat bool   `json:"compat"`
	Quorum bool   `json:"quorum"`
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
}
