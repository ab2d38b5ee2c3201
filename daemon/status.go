package daemon

import (
	"strings"

	"haven/config"
	"haven/dataset"
	"haven/dataset/status"
	"haven/monitor"
	"haven/node/view"
	"haven/placement"
)

// clusterStatus builds the status object of the contract from this node's
// view: its own data and the last data of every peer. Instances on nodes
// that are down (or never heard) count as unknown.
func (d *Daemon) clusterStatus() *dataset.ClusterStatus {
	local := d.localNode()
	st := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: d.cluster.Name, Compat: d.core.Compat(), FeatureLevel: d.core.FeatureLevel(), Quorum: d.cluster.Quorum, QuorumState: d.core.QuorumInfo(d.clk.Now()),
			ConfDiffers: d.core.ConfDiffers(), ConfUnchecked: d.core.ConfUnchecked()},
		Nodes:    map[string]dataset.NodeInfo{},
		Services: map[string]dataset.ServiceStatus{},
		Local:    d.node.Name,
	}
	if d.hb != nil {
		now := d.clk.Now()
		st.Heartbeat = map[string]dataset.HBPeer{}
		for _, hp := range d.hb.Peers() {
			ms := int64(-1)
			if !hp.LastHeard.IsZero() {
				ms = now.Sub(hp.LastHeard).Milliseconds()
			}
			hbp := dataset.HBPeer{Up: hp.Up, LastHeardMs: ms, Gen: hp.Gen, Stale: hp.Stale, AnnouncedGen: hp.AnnouncedGen, Duplicate: hp.Duplicate,
				Links: hbLinks(hp.Links, now)}
			if !hp.BehindSince.IsZero() {
				hbp.BehindMs = max(1, now.Sub(hp.BehindSince).Milliseconds())
			}
			st.Heartbeat[hp.Name] = hbp
		}
	}
	st.Disk = d.diskStatus(d.clk.Now()) // diskstatus.go
	st.Guard = d.guardStatus()          // guard.go
	ageOf := func(node string) int64 {
		if hp, ok := st.Heartbeat[node]; ok {
			if hp.Stale && hp.Up {
				return hp.BehindMs // the data is that old at least
			}
			return hp.LastHeardMs
		}
		return -1
	}
	nodes := map[string]dataset.Node{local.Name: local}
	unknownUp := map[string]bool{} // live nodes whose instances are unknown
	st.Nodes[local.Name] = nodeInfo(local, dataset.NodeUp)
	for _, name := range d.core.PeerNames() {
		p, _ := d.core.Peer(name)
		ps := d.peerStatus(name)
		if p.Data == nil {
			st.Nodes[name] = dataset.NodeInfo{Status: ps}
			continue
		}
		ni := nodeInfo(*p.Data, ps)
		ni.Status = ps
		st.Nodes[name] = ni
		n := *p.Data
		if ps == dataset.NodeDown || ps == dataset.NodeStUnknown || view.Unconfirmed(p) {
			n = staleNode(n, ageOf(name))
		}
		unknownUp[name] = view.Unconfirmed(p) && ps != dataset.NodeDown
		nodes[name] = n
	}
	usage := d.capacityUse(st, nodes)
	for name, inst := range d.services {
		cfg := inst.cfg
		ss := dataset.ServiceStatus{
			Orchestrate:    cfg.Orchestrate,
			Placement:      cfg.Placement,
			PlacementState: "n/a",
			GlobalExpect:   dataset.ExpectNone,
			Nodes:          cfg.NodeList(d.cluster.NodeNames()),
			Instances:      map[string]dataset.Instance{},
		}
		if t, ok := d.dur.Services[name]; ok && t.Target.Active() {
			ss.GlobalExpect = t.Target.String()
		}
		aggregate(&ss, name, nodes, unknownUp)
		if cfg.IsFlex() {
			target, most := d.flexTarget(cfg, name, ss.Nodes)
			flexAggregate(&ss, &dataset.FlexStatus{Target: target, Min: cfg.FlexMin, Max: most, Global: cfg.FlexGlobal()}, unknownUp)
		}
		ss.CapacityShort = capacityShort(usage, cfg, &ss)
		rolloutStatus(&ss, st.Nodes, d.dur.Services[name].ConfigDigest)
		st.Services[name] = ss
	}
	for _, name := range d.invalidNames() {
		st.Services[name] = d.invalidStatus(name, nodes)
	}
	d.showRefused(st, nodes)
	return st
}

// aggregate fills the instances of ss (on its nodes) and the service-wide
// avail, overall, placement state and frozen from them. A service up
// nowhere is unknown, not down, while it has an instance on a node of
// unknownUp: a live node whose instances are unknown (its data stale, two
// daemons with its name, a new run not trusted yet: it may run it).
func aggregate(ss *dataset.ServiceStatus, name string, nodes map[string]dataset.Node, unknownUp map[string]bool) {
	var avails []dataset.Status
	frozen, thawed := 0, 0
	for _, node := range ss.Nodes {
		n, ok := nodes[node]
		if !ok {
			continue
		}
		i, ok := n.Services[name]
		if !ok {
			continue
		}
		ss.Instances[node] = i
		if i.Avail != dataset.StatusUnknown {
			avails = append(avails, i.Avail)
		}
		if i.Frozen || n.Frozen {
			frozen++
		} else {
			thawed++
		}
	}
	ss.Avail = status.Service(avails)
	if ss.Avail == dataset.StatusDown || ss.Avail == dataset.StatusNA {
		for node := range ss.Instances {
			if unknownUp[node] {
				ss.Avail = dataset.StatusUnknown
			}
		}
	}
	ss.PlacementState = placementState(*ss)
	ss.Overall = ss.Avail
	for _, i := range ss.Instances {
		if i.Overall == dataset.StatusWarn && ss.Overall == dataset.StatusUp {
			ss.Overall = dataset.StatusWarn
		}
	}
	switch {
	case frozen > 0 && thawed > 0:
		ss.Frozen = "mixed"
	case frozen > 0:
		ss.Frozen = "frozen"
	default:
		ss.Frozen = "thawed"
	}
}

// flexAggregate replaces the failover aggregate of a flex service by its
// count of f's target (dataset/status.Flex): down below flex_min, warn below
// flex_target, up at it; unknown rather than down while a live node's
// instances are not known. Its placement state is optimal at the target.
func flexAggregate(ss *dataset.ServiceStatus, f *dataset.FlexStatus, unknownUp map[string]bool) {
	warn := false
	for _, i := range ss.Instances {
		switch monitor.EffectiveAvail(i) {
		case dataset.StatusUp:
			f.Up++
		case dataset.StatusWarn:
			warn = true
		}
	}
	ss.Flex = f
	ss.Avail = status.Flex(f.Up, f.Min, f.Target)
	if ss.Avail == dataset.StatusUp && warn {
		ss.Avail = dataset.StatusWarn
	}
	if ss.Avail == dataset.StatusDown {
		for node := range ss.Instances {
			if unknownUp[node] {
				ss.Avail = dataset.StatusUnknown
			}
		}
	}
	ss.PlacementState = "optimal"
	if f.Up != f.Target {
		ss.PlacementState = "non-optimal"
	}
	ss.Overall = ss.Avail
	for _, i := range ss.Instances {
		if i.Overall == dataset.StatusWarn && ss.Overall == dataset.StatusUp {
			ss.Overall = dataset.StatusWarn
		}
	}
}

// flexTarget returns the target and the max of a flex service's status:
// flex_target and flex_max; in the global mode (flex_target = "all") the
// number of nodes where an instance belongs, as the last decision pass
// here saw it (on a node that is none of the service's nodes, where no
// pass decides it: the number of its nodes), and the number of its nodes.
func (d *Daemon) flexTarget(cfg *config.ServiceConfig, name string, nodes []string) (target, most int) {
	if !cfg.FlexGlobal() {
		return cfg.FlexTarget, cfg.FlexMax
	}
	if t, ok := d.core.FlexTarget(name); ok {
		return t, len(nodes)
	}
	return len(nodes), len(nodes)
}

// staleNode marks the instances of a node that is not heard, or whose data
// predates its loss, as stale: last known data, avail unknown, never the
// placement leader (no flag L), with the age of the data.
func staleNode(n dataset.Node, ageMs int64) dataset.Node {
	n = n.Clone()
	for svc, i := range n.Services {
		i.Avail, i.Overall = dataset.StatusUnknown, dataset.StatusUnknown
		i.PlacementLeader = false
		i.Flags = strings.ReplaceAll(i.Flags, "L", "")
		i.Stale, i.AgeMs = true, ageMs
		n.Services[svc] = i
	}
	return n
}

func nodeInfo(n dataset.Node, s dataset.NodeStatus) dataset.NodeInfo {
	switch n.Monitor {
	case dataset.NodeMaintenance:
		s = dataset.NodeStMaint
	case dataset.NodeShutting:
		s = dataset.NodeStShutting
	}
	return dataset.NodeInfo{
		Status:      s,
		Monitor:     n.Monitor,
		Frozen:      n.Frozen,
		Compat:      n.Compat,
		Format:      max(1, n.Format.Max),
		Release:     n.Format.Release,
		Load15:      n.Load15,
		MemAvailPct: n.MemAvailPct,
		Labels:      n.Labels,

		FrozenReason: n.FrozenReason,

		SplitFrozen:       n.SplitFrozen,
		SplitFrozenReason: n.SplitFrozenReason,
		Guard:             n.Guard,
	}
}

// placementState is "optimal" when the service runs on its placement
// leader, "non-optimal" when it runs elsewhere, "n/a" when it does not run
// or no node claims the lead.
func placementState(ss dataset.ServiceStatus) string {
	leader := ""
	for _, node := range sortedKeys(ss.Instances) {
		if i := ss.Instances[node]; i.PlacementLeader && i.Avail != dataset.StatusUnknown {
			leader = node
			break
		}
	}
	var up []string
	for _, node := range sortedKeys(ss.Instances) {
		if ss.Instances[node].Avail == dataset.StatusUp {
			up = append(up, node)
		}
	}
	switch {
	case leader == "" || len(up) == 0:
		return "n/a"
	case len(up) == 1 && up[0] == leader:
		return "optimal"
	}
	return "non-optimal"
}

// capacityUse fills each node's capacity use in st (nodes: their data)
// and returns the usage the services' capacity notes read (nil when no
// service has requests).
func (d *Daemon) capacityUse(st *dataset.ClusterStatus, nodes map[string]dataset.Node) *placement.Usage {
	views := make(map[string]placement.NodeView, len(nodes))
	for name, n := range nodes {
		views[name] = placement.NodeView{Name: name, Status: st.Nodes[name].Status, Data: n}
	}
	cfgs := make(map[string]*config.ServiceConfig, len(d.services))
	for name, inst := range d.services {
		cfgs[name] = inst.cfg
	}
	usage := placement.NewUsage(views, cfgs, func(node, svc string) placement.InstanceState {
		inst := views[node].Data.Services[svc]
		s := placement.StateOf(inst)
		s.Avail = monitor.EffectiveAvail(inst)
		return s
	})
	for name, n := range nodes {
		if n.Capacity == nil {
			continue
		}
		ni := st.Nodes[name]
		nc := &dataset.NodeCapacity{CPUMilli: n.Capacity.CPUMilli, MemBytes: n.Capacity.MemBytes}
		if u := usage.Node(name); u.Known {
			nc.RequestedCPUMilli, nc.RequestedMemBytes = int64(u.Requested.CPU), int64(u.Requested.Mem)
		}
		ni.Capacity = nc
		st.Nodes[name] = ni
	}
	return usage
}

// capacityShort lists, for a service with requests below its target (up
// nowhere, or fewer up than flex_target) that the daemons are to start
// (orchestrated, not frozen nor stopped), its nodes where one more
// instance does not fit, with what is short.
func capacityShort(usage *placement.Usage, cfg *config.ServiceConfig, ss *dataset.ServiceStatus) []string {
	if usage == nil || !cfg.HasRequests() || cfg.Orchestrate == monitor.OrchestrateNo || ss.Frozen == "frozen" ||
		ss.GlobalExpect == dataset.ExpectStopped || ss.GlobalExpect == dataset.ExpectFrozen {
		return nil // not to be started: nothing is short
	}
	if f := ss.Flex; f != nil && f.Up >= f.Target || f == nil && ss.Avail == dataset.StatusUp {
		return nil
	}
	var out []string
	for _, n := range ss.Nodes {
		inst, ok := ss.Instances[n]
		if !ok {
			continue
		}
		st := placement.StateOf(inst)
		st.Avail = monitor.EffectiveAvail(inst)
		if why := usage.Short(n, placement.RequestOf(cfg), placement.Holds(st)); why != "" && why != placement.ReasonCapacityUnknown {
			out = append(out, n+": "+strings.TrimPrefix(why, placement.ReasonCapacityPrefix))
		}
	}
	return out
}

// rolloutStatus sets the rollout of ss and the count of its instances on
// this node's config (digest) and on an older one, from its instances and
// the nodes' states (monitor.RolloutView).
func rolloutStatus(ss *dataset.ServiceStatus, nodes map[string]dataset.NodeInfo, digest string) {
	live := func(n string) bool {
		ni, ok := nodes[n]
		return ok && placement.NodeView{Status: ni.Status}.Alive() && !ss.Instances[n].Stale
	}
	frozen := func(n string) bool { ni := nodes[n]; return ni.Frozen || ni.SplitFrozen }
	ss.Rollout = monitor.RolloutView(ss.Instances, live, frozen)
	ss.Configs = monitor.CountConfigs(ss.Instances, live, digest)
}
