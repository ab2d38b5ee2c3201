package node

import "time"

// mergeBudget bounds the bytes of peer configs one call of MergeConfigs
// parses and validates (at least one config is): a peer's full copy may
// carry thousands of new configs (a node joining a cluster of 2,000
// services, or a member flooding its peers, up to a message of 16 MB),
// and parsing them all in one turn of the daemon's loop held every
// request meanwhile (2,000 configs of 7 KB: 0.4 s of parsing). The rest is
// left for MergeMore, which the driver calls in a later turn (and Tick
// calls as a safety net), each call again within the budget. 2 MiB take
// about 50 ms to parse; 2,000 configs of 300 bytes still fit in one turn.
const mergeBudget = 2 << 20

// MergeMore goes on with the peers' configs left over by the budget of
// MergeConfigs, from the copies of the peers held now. It returns whether
// some are still left (call it again, in a later turn).
func (c *Core) MergeMore(now time.Time) bool {
	for _, pn := range c.pnames {
		if !c.cd.more[pn] {
			continue
		}
		delete(c.cd.more, pn)
		if p := c.peers[pn]; p != nil && p.Data != nil {
			c.MergeConfigs(pn, p.Data.Configs, now)
		}
	}
	c.checkEdits(now)
	return c.ConfigMergesLeft()
}

// ConfigMergesLeft tells whether peers' configs wait for MergeMore.
func (c *Core) ConfigMergesLeft() bool { return len(c.cd.more) > 0 }

// mergeSpent notes that MergeConfigs stopped at its budget on the configs
// of from.
func (c *Core) mergeSpent(from string) {
	if c.cd.more == nil {
		c.cd.more = map[string]bool{}
	}
	c.cd.more[from] = true
}
