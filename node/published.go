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
