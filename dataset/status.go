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
}
