package node

import (
	"time"

	"haven/monitor"
	"haven/node/view"
)

// mergeEra tells when an entry of a peer's data that did not change may
// merge otherwise than when it came: after this node's state went back or
// lost an entry (a write rolled back, a config write failed, a service
// removed: bumps), or gained a service (its targets, clears and fencing
// tokens heard before were skipped).
type mergeEra struct{ bumps, services int }

func (c *Core) mergeEra() mergeEra { return mergeEra{c.eraBumps, len(c.state.Services)} }

// bumpMergeEra makes the next data of every peer merge as a whole.
func (c *Core) bumpMergeEra() { c.eraBumps++ }

// takeData takes a peer's new data: its view, the services whose
// instances changed (noteData), the fencing tokens it shows, and its
// configs, targets and clears newer than ours (MergeConfigs first). With
// ev.Changes based on the copy held, only the entries it lists are looked
// at, unless this node's state changed since the last whole merge (the
// merge era). It reports noteData's verdict.
func (c *Core) takeData(p *peer, ev PeerEvent, now time.Time) bool {
	ch := ev.Changes
	if ch != nil && (p.Data == nil || p.Data != ch.Base) {
		ch = nil
	}
	prev := p.Peer
	p.Peer = view.NoteData(p.Peer, ev.Data, now)
	instancesOnly := c.noteData(ev.Node, prev, ev.Data, ch)
	snap := func() monitor.Snapshot { return c.Snapshot(now) }
	if era := c.mergeEra(); ch == nil || p.merged != era {
		p.merged = era
		c.witnessFencing(ev.Data)
		c.MergeConfigs(ev.Node, ev.Data.Configs, now)
		c.MergeTargets(ev.Data.Targets, snap)
		c.MergeClears(ev.Data.Clears, now)
		return instancesOnly
	}
	for svc := range ch.Services {
		if i, ok := ev.Data.Services[svc]; ok {
			c.witnessFencingOf(svc, i)
		}
	}
	c.MergeConfigs(ev.Node, changedEntries(ev.Data.Configs, ch.Configs), now)
	c.MergeTargets(changedEntries(ev.Data.Targets, ch.Targets), snap)
	if ch.Head {
		c.MergeClears(ev.Data.Clears, now)
	}
	return instancesOnly
}

// changedEntries are the entries of m whose keys are listed.
func changedEntries[V any](m map[string]V, keys map[string]bool) map[string]V {
	out := make(map[string]V, len(keys))
	for k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
