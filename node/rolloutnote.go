package node

import (
	"fmt"

	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
)

// RolloutProgress: where the newest rollout of a service stands, or how
// many of its running instances run this node's config and how many an
// older one, changed as this node sees them (the metrics take their
// gauges from it; every node of the service says it). ID is "" while the
// service never had a rollout.
type RolloutProgress struct {
	Svc     string `json:"svc"`
	ID      string `json:"id,omitempty"`
	State   string `json:"state,omitempty"`
	OK      int    `json:"ok"`
	Failed  int    `json:"failed"`
	Pending int    `json:"pending"`
	Current int    `json:"current"`
	Old     int    `json:"old"`
}

func (RolloutProgress) Kind() string      { return "rollout_progress" }
func (e RolloutProgress) Service() string { return e.Svc }
func (RolloutProgress) Level() Level      { return Info }
func (e RolloutProgress) String() string {
	s := fmt.Sprintf("instances on this node's config %d, on an older one %d", e.Current, e.Old)
	if e.ID != "" {
		s = fmt.Sprintf("rollout %s %s: %d ok, %d failed, %d pending; ", e.ID, e.State, e.OK, e.Failed, e.Pending) + s
	}
	return s
}

// noteRollouts says a RolloutProgress for each local instance of the pass
// (only: an incremental pass's, nil for all) whose rollout or count of
// instances on old configs moved since it last did. Nothing is said of a
// service that never had a rollout nor an instance on an older config;
// a full pass looks only at the services that had something to say.
func (c *Core) noteRollouts(snap monitor.Snapshot, only []*instsm.Instance) {
	list := c.ilist
	if only != nil {
		list = only
	}
	for _, inst := range list {
		if !inst.Local {
			continue
		}
		svc := inst.Name
		ss := c.state.Services[svc]
		if only == nil && ss.Rollout == nil && inst.RolloutSaid == (instsm.RolloutSaid{}) {
			// a full pass counts only the services that had something to
			// say: counting every service's instances on every node would
			// triple the full pass of 2,000 services on 16 nodes; a
			// config edit, a restart elsewhere are a change of the
			// service's data, counted by the incremental pass they wake
			continue
		}
		e := RolloutProgress{Svc: svc}
		cnt := monitor.CountConfigsOf(snap.Nodes, svc, ss.ConfigDigest)
		e.Current, e.Old = cnt.Current, cnt.Old
		if ss.Rollout != nil {
			// (a copy of the instances only for a service that had a
			// rollout: the full pass of 2,000 services stays as it was)
			insts := make(map[string]dataset.Instance, len(snap.Nodes))
			for n, v := range snap.Nodes {
				if i, ok := v.Data.Services[svc]; ok {
					insts[n] = i
				}
			}
			live := func(n string) bool { v, ok := snap.Nodes[n]; return ok && v.Alive() }
			frozen := func(n string) bool { d := snap.Nodes[n].Data; return d.Frozen || d.SplitFrozen }
			if v := monitor.RolloutView(insts, live, frozen); v != nil {
				e.ID, e.State, e.OK, e.Failed, e.Pending = v.ID, v.State, v.OK, v.Failed, v.Pending
			}
		}
		said := instsm.RolloutSaid{ID: e.ID, State: e.State, OK: e.OK, Failed: e.Failed, Pending: e.Pending, Current: e.Current, Old: e.Old}
		if said == inst.RolloutSaid || inst.RolloutSaid == (instsm.RolloutSaid{}) && e.ID == "" && e.Old == 0 {
			continue // said already, or nothing to say yet
		}
		inst.RolloutSaid = said
		c.emit(e)
	}
}
