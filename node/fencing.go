package node

import (
	"sort"

	"haven/dataset"
)

// Fencing tokens (docs/behaviour.md 3, docs/fencing-token.md).
//
// Every start of a service's instance gets a fencing token, given to its
// commands as HAVEN_FENCING_TOKEN: an integer greater than every token this
// node knows was used for the service anywhere: its own last one and the
// highest it heard of (ServiceState.FencingToken, FencingSeen, both
// durable), and every token in the peers' data it holds (dataset.Instance
// FencingToken and FencingSeen, published by every node, a down peer's
// last data included). The token is in the durable state before the start
// runs (Ready.Persist is written before Ready.Run), so a node that restarts
// never hands out a lower one, and a node that was down learns the highest
// from its peers' data before it may start anything (rejoin).
//
// Tokens are also never the same on two nodes: a node's tokens are the
// numbers whose remainder modulo the member count is its rank among the
// sorted members (+1): with n1 n2 n3, n1 uses 1, 4, 7..., n2 2, 5, 8...,
// n3 3, 6, 9... So two sides of a split without quorum, each unaware of
// the other's start, pick different tokens, and a storage layer that keeps
// the highest token it saw refuses the writer with the lower one. Only
// with quorum on is the order of the tokens the order of the starts
// (docs/fencing-token.md).

// fencingKnown is the highest token of svc this node knows of.
func (c *Core) fencingKnown(svc string) uint64 {
	ss := c.state.Services[svc]
	m := max(ss.FencingToken, ss.FencingSeen)
	for _, p := range c.pv.Peers {
		if p.Data == nil {
			continue
		}
		if i, ok := p.Data.Services[svc]; ok {
			m = max(m, i.FencingToken, i.FencingSeen)
		}
	}
	return m
}

// nextFencingToken returns the token of a new start of svc here and
// records it (persisted with the Ready that orders the start).
func (c *Core) nextFencingToken(svc string) uint64 {
	t := c.fencingKnown(svc) + 1
	names := append([]string(nil), c.cfg.ClusterNodes...)
	sort.Strings(names)
	if n := uint64(len(names)); n > 1 {
		rank := uint64(sort.SearchStrings(names, c.cfg.Name))
		if rank < n && names[rank] == c.cfg.Name {
			want := (rank + 1) % n
			t += (want + n - t%n) % n
		}
	}
	ss := c.state.Services[svc]
	ss.FencingToken, ss.FencingSeen = t, t
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
	return t
}

// fencingToken returns the token of the last start of svc on this node
// (the running instance's), 0 when it never started here.
func (c *Core) fencingToken(svc string) uint64 { return c.state.Services[svc].FencingToken }

// witnessFencing records the highest tokens a peer's data shows, for the
// services known here: a node that restarts, or whose peers are all away,
// still knows them.
func (c *Core) witnessFencing(d *dataset.Node) {
	for svc, i := range d.Services { // in any order: each service alone
		c.witnessFencingOf(svc, i)
	}
}

// witnessFencingOf records the highest token the instance i of svc shows.
func (c *Core) witnessFencingOf(svc string, i dataset.Instance) {
	m := max(i.FencingToken, i.FencingSeen)
	if m == 0 {
		return
	}
	ss, ok := c.state.Services[svc]
	if !ok {
		return
	}
	if m > ss.FencingSeen {
		ss.FencingSeen = m
		c.state.Services[svc] = ss
		c.persist()
		c.publish()
	}
}
