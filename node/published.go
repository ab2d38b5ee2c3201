package node

import (
	"haven/dataset"

	"haven/node/instsm"
)

// maxReusedResources: the resources of an instance with more resource
// specs than this are built anew for every dataset (showsResources looks
// a spec up for each resource whose counts differ).
const maxReusedResources = 16

// publishedResources is what the dataset shows of the resources of inst
// (ss its durable state): its resources, with the restart ladder's counts
// on the monitored ones. The map built last time is handed out again
// while it shows the same (it is never written: a change builds a new
// one), so that an instance that did not change costs no copy when the
// daemon builds its dataset for each publish.
func publishedResources(inst *instsm.Instance, ss ServiceState) map[string]dataset.Resource {
	if m := inst.PubRes; m != nil && len(m) == len(inst.Res) && len(inst.Spec.Resources) <= maxReusedResources && showsResources(m, inst, ss) {
		return m
	}
	res := make(map[string]dataset.Resource, len(inst.Res))
	for k, v := range inst.Res {
		res[k] = v
	}
	for _, spec := range inst.Spec.Resources {
		if r, ok := res[spec.RID]; ok && spec.Monitor {
			res[spec.RID] = counted(r, spec, ss)
		}
	}
	inst.PubRes = res
	return res
}

// counted is r, the resource of spec, with the restart ladder's counts.
func counted(r dataset.Resource, spec instsm.ResourceSpec, ss ServiceState) dataset.Resource {
	cnt := ss.Restarts[spec.RID]
	r.RestartRemaining = max(spec.Restart-cnt.Spent, 0)
	r.LastFailure, r.LastFailureAt = cnt.LastFailure, cnt.FailedAt
	return r
}

// showsResources reports whether m (of as many entries as inst.res) is
// what publishedResources would build: each monitored resource counted,
// every other one as it is.
func showsResources(m map[string]dataset.Resource, inst *instsm.Instance, ss ServiceState) bool {
	for _, spec := range inst.Spec.Resources {
		if r, ok := inst.Res[spec.RID]; ok && spec.Monitor {
			if w, ok := m[spec.RID]; !ok || w != counted(r, spec, ss) {
				return false
			}
		}
	}
	for k, v := range inst.Res {
		w, ok := m[k]
		if !ok {
			return false
		}
		if w != v && !monitoredSpec(inst, k) {
			return false // differs, and not by the counts checked above
		}
	}
	return true
}

// monitoredSpec reports whether rid is a monitored resource of inst.
func monitoredSpec(inst *instsm.Instance, rid string) bool {
	for _, spec := range inst.Spec.Resources {
		if spec.RID == rid && spec.Monitor {
			return true
		}
	}
	return false
}

// Dataset fills what the core owns of this node's dataset entry in n
// (which holds the driver's part: name, labels, load, configs,
// generation): the node monitor, the frozen flag, the compat, the
// targets and clears it relays, and every local instance.
func (c *Core) Dataset(n dataset.Node) dataset.Node {
	n.Monitor = c.monitor
	n.Frozen = c.state.NodeFrozen
	n.FrozenReason = c.state.NodeFrozenReason
	n.SplitFrozen, n.SplitFrozenReason = c.state.SplitFrozen, c.state.SplitFrozenReason
	n.Compat = c.cfg.Compat
	n.Conf = c.cfg.ClusterConf
	n.Format = c.localFormat()
	n.Targets = c.Targets()
	n.Clears = c.clears()
	if c.quorumOn() {
		n.SplitAction = c.cfg.Quorum.SplitAction
	}
	n.Guard = c.guardInfo()
	if len(n.Services) == 0 {
		// sized once: grown entry by entry, the map of 2,000 instances
		// was copied over a dozen times
		n.Services = make(map[string]dataset.Instance, len(c.ilist))
	}
	for _, inst := range c.ilist {
		if !inst.Local && !inst.Retiring && inst.Mon.State != dataset.StopFailed {
			// not one of the service's nodes; one just removed from them
			// shows its instance until it stopped (or failed to: then
			// the others still see it running here)
			continue
		}
		ss := c.state.Services[inst.Name]
		n.Services[inst.Name] = dataset.Instance{
			Excluded:        excludedText(ss.Excluded, inst),
			GaveUp:          ss.GaveUp,
			Avail:           inst.Avail,
			Overall:         inst.Overall,
			Frozen:          ss.Frozen,
			Monitor:         inst.Mon,
			PlacementLeader: inst.Leader,
			Flags:           inst.Flags,
			Resources:       publishedResources(inst, ss),
			ConfigVersion:   ss.ConfigVersion,
			FencingToken:    ss.FencingToken,
			FencingSeen:     ss.FencingSeen,
			ReadyAck:        inst.Fa.Ack,
			LastStartMs:     inst.Act.LastStart.Milliseconds(),
			LastStopMs:      inst.Act.LastStop.Milliseconds(),
			RunDigest:       ss.RunDigest,
			ConfigDigest:    ss.ConfigDigest,
			Rollout:         ss.Rollout,
			RolloutMark:     ss.RolloutMark,
		}
	}
	return n
}
