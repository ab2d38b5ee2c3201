package node

import (
	"haven/dataset"
	"haven/monitor"
)

// upElsewhere is monitor.UpElsewhere(s, svc), from the table when it is
// s's.
func (c *Core) upElsewhere(s monitor.Snapshot, svc string) string {
	t := c.inc.Runs.Of(s)
	if t == nil {
		return monitor.UpElsewhere(s, svc)
	}
	for i := t.First(svc); i != 0; i = t.Ent(i).Next {
		if e := t.Ent(i); e.Node != s.Local && e.Avail == dataset.StatusUp {
			return e.Node
		}
	}
	return ""
}

// runningOn returns the nodes of s where svc runs (runningNodes), from
// the table when it is s's. With few it returns nil when svc runs on
// fewer than 2 nodes (the caller has nothing to do then).
func (c *Core) runningOn(s monitor.Snapshot, svc string, few bool) []string {
	t := c.inc.Runs.Of(s)
	if t == nil {
		up := runningNodes(s, svc)
		if few && len(up) < 2 {
			return nil
		}
		return up
	}
	i := t.First(svc)
	if few && (i == 0 || t.Ent(i).Next == 0) {
		return nil
	}
	var up []string
	for ; i != 0; i = t.Ent(i).Next {
		up = append(up, t.Ent(i).Node)
	}
	return up
}

// ranElsewhere returns the first alive node but this one where svc runs,
// "" when none; from the table when it is s's.
func (c *Core) ranElsewhere(s monitor.Snapshot, svc string) string {
	t := c.inc.Runs.Of(s)
	if t == nil {
		for _, node := range s.ClusterNodes {
			v, ok := s.Nodes[node]
			if node == c.cfg.Name || !ok || !v.Alive() {
				continue
			}
			if i, ok := v.Data.Services[svc]; ok && runs(i) {
				return node
			}
		}
		return ""
	}
	for i := t.First(svc); i != 0; i = t.Ent(i).Next {
		if e := t.Ent(i); e.Node != c.cfg.Name {
			return e.Node
		}
	}
	return ""
}

// runs reports whether an instance runs: up or warn (n/a and started
// counts as up).
func runs(i dataset.Instance) bool {
	a := monitor.EffectiveAvail(i)
	return a == dataset.StatusUp || a == dataset.StatusWarn
}

// runningNodes returns the nodes of s where svc runs (effective avail up or
// warn), in name order.
func runningNodes(s monitor.Snapshot, svc string) []string {
	var up []string
	for _, node := range s.ClusterNodes {
		v, ok := s.Nodes[node]
		if !ok || !v.Alive() {
			continue
		}
		if i, ok := v.Data.Services[svc]; ok {
			if a := monitor.EffectiveAvail(i); a == dataset.StatusUp || a == dataset.StatusWarn {
				up = append(up, node)
			}
		}
	}
	return up
}
