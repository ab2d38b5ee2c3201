package node

import (
	"fmt"
	"strings"

	"haven/dataset"
	"haven/node/upgrade"
)

// The cluster feature level (node/upgrade, docs/operations.md
// "Upgrading"): the format version every member reads, which the node
// writes and sends. It moves up once every member announced a newer
// release, never down by itself; the state keeps it (State.FeatureLevel).
// A core whose Config.Format is 0 (the simulation) takes no part: it
// announces nothing and stays at level 1.

// FeatureLevel: the cluster feature level moved (From -> To), with why.
type FeatureLevel struct {
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
}

func (FeatureLevel) Kind() string    { return "feature_level" }
func (FeatureLevel) Service() string { return "" }
func (FeatureLevel) Level() Level    { return Info }
func (e FeatureLevel) String() string {
	return fmt.Sprintf("cluster feature level %d -> %d: %s", e.From, e.To, e.Reason)
}

// FeatureLevel returns the cluster feature level this node runs at.
func (c *Core) FeatureLevel() int { return max(1, c.state.FeatureLevel) }

// FormatMax returns the newest format version this node reads (1 when it
// takes no part).
func (c *Core) FormatMax() int { return max(1, c.cfg.Format) }

// formatMembers is what the heartbeats said of every other cluster member's
// versions (a member never heard holds the level).
func (c *Core) formatMembers() []upgrade.Member {
	out := make([]upgrade.Member, 0, len(c.pv.Pnames))
	for _, name := range c.pv.Pnames {
		p := c.pv.Peers[name]
		m := upgrade.Member{Name: name, Up: p.Up}
		if p.Data != nil {
			m.Heard, m.Max, m.Level = true, p.Data.Format.Max, p.Data.Format.Level
		}
		out = append(out, m)
	}
	return out
}

// formatsCompatible is the version part of compat: every live member
// reads the level's formats and is within one version step.
func (c *Core) formatsCompatible() (bool, string) {
	if c.cfg.Format == 0 {
		return true, ""
	}
	return upgrade.Compatible(c.cfg.Format, c.FeatureLevel(), c.formatMembers())
}

// updateLevel raises the feature level when every member reads a newer
// format (or a member already runs at a higher level this node reads),
// persists it, announces it and emits a FeatureLevel event.
func (c *Core) updateLevel() {
	if c.cfg.Format == 0 {
		return
	}
	cur := c.FeatureLevel()
	lv, waiting := upgrade.Level(c.cfg.Format, cur, c.formatMembers())
	if lv <= cur {
		return
	}
	reason := fmt.Sprintf("every member (%s) reads formats up to %d", strings.Join(c.cfg.ClusterNodes, ", "), lv)
	if len(waiting) > 0 { // adopted: the others moved while this node was away
		for _, m := range c.formatMembers() {
			if m.Heard && max(1, m.Level) == lv {
				reason = fmt.Sprintf("%s already runs at feature level %d (the level moved while this node was away)", m.Name, lv)
				break
			}
		}
	}
	if cur < 2 && lv >= 2 && c.cfg.Admin.On() {
		reason += "; with [admin_keys], a deletion or a target from a peer now needs an admin's signature (docs/security.md, \"Admin-signed deletions and targets\")"
	}
	c.state.FeatureLevel = lv
	c.emit(FeatureLevel{From: cur, To: lv, Reason: reason})
	c.persist()
	c.publish()
}

// UpgradeVerdict says whether the next node may be upgraded now
// (`nodemgr daemon status`); stateErr is the state write error, if any.
func (c *Core) UpgradeVerdict(stateErr string) upgrade.Verdict {
	return upgrade.SafeNext(c.FormatMax(), c.FeatureLevel(), c.formatMembers(), stateErr)
}

// localFormat is the Format of this node's dataset entry.
func (c *Core) localFormat() dataset.Format {
	if c.cfg.Format == 0 {
		return dataset.Format{}
	}
	return dataset.Format{Max: c.cfg.Format, Level: c.FeatureLevel(), Release: c.cfg.Release}
}
