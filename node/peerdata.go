package node

import (
	"time"

	"haven/dataset"
	"haven/monitor"
	"haven/node/peersm"
	"haven/node/view"
)

// takeData takes a peer's new data: its view, the services whose
// instances changed (noteData), the fencing tokens it shows, and its
// configs, targets and clears newer than ours (mergeConfigs first). With
// ev.Changes based on the copy held, only the entries it lists are looked
// at, unless this node's state changed since the last whole merge (the
// merge era). It reports noteData's verdict.
func (c *Core) takeData(p *peersm.Peer, ev PeerEvent, now time.Time) bool {
	ch := ev.Changes
	if ch != nil && (p.Data == nil || p.Data != ch.Base) {
		ch = nil
	}
	prev := p.Peer
	p.Peer = view.NoteData(p.Peer, ev.Data, now)
	instancesOnly := c.noteData(ev.Node, prev, ev.Data, ch)
	snap := func() monitor.Snapshot { return c.Snapshot(now) }
	if era := c.mergeEra(); ch == nil || p.Merged != era {
		p.Merged = era
		c.mergeWhole(ev.Node, ev.Data, now)
		return instancesOnly
	}
	for svc := range ch.Services {
		if i, ok := ev.Data.Services[svc]; ok {
			c.witnessFencingOf(svc, i)
		}
	}
	c.mergeRollouts(ev.Node, ev.Data.Services, ch.Services, now)
	c.mergeConfigs(ev.Node, changedEntries(ev.Data.Configs, ch.Configs), now)
	c.mergeTargets(ev.Node, changedEntries(ev.Data.Targets, ch.Targets), now, snap)
	if ch.Head {
		c.mergeClears(ev.Node, ev.Data.Clears, now)
	}
	return instancesOnly
}

// mergeWhole merges the whole of a peer's data: the fencing tokens it
// shows, then its configs, targets and clears newer than ours.
func (c *Core) mergeWhole(from string, d *dataset.Node, now time.Time) {
	c.witnessFencing(d)
	c.mergeConfigs(from, d.Configs, now)
	c.mergeRollouts(from, d.Services, nil, now)
	c.mergeTargets(from, d.Targets, now, func() monitor.Snapshot { return c.Snapshot(now) })
	c.mergeClears(from, d.Clears, now)
}

// remergePeers merges again the whole of every peer's data held, once a
// state write succeeds after failed ones: what was adopted from a peer
// while writes failed was undone with them (restore), and a peer whose
// data does not change sends nothing that would bring it back (a target
// adopted while the disk was full would be lost here for good). It is
// what the next data of each peer would merge (the merge era moved on).
func (c *Core) remergePeers(now time.Time) {
	era := c.mergeEra()
	for _, pn := range c.pv.Pnames {
		p := c.pv.Peers[pn]
		if p.Data == nil {
			continue
		}
		c.mergeWhole(pn, p.Data, now)
		p.Merged = era
	}
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
