package node

import (
	"fmt"

	"haven/config"
)

// mergeBudget bounds the bytes of peer configs one call of mergeConfigs
// parses and validates (at least one config is): a peer's full copy may
// carry thousands of new configs (a node joining a cluster of 2,000
// services, or a member flooding its peers, up to a message of 16 MB),
// and parsing them all in one turn of the daemon's loop held every
// request meanwhile (2,000 configs of 7 KB: 0.4 s of parsing). The rest is
// left for mergeMore, which the driver calls in a later turn (and Tick
// calls as a safety net), each call again within the budget. 2 MiB take
// about 50 ms to parse; 2,000 configs of 300 bytes still fit in one turn.
const mergeBudget = 2 << 20

// signedCost is what the check of a config's signature counts in the
// merge budget, at least: an Ed25519 verification costs about the parse
// of 1 KiB of config (config's BenchmarkSignedConfig), counted 4 KiB to
// be safe, so that 2,000 small signed configs take 4 turns, not one.
const signedCost = 4 << 10

// mergeCost is what a config of size bytes counts in the merge budget.
func (c *Core) mergeCost(size int) int {
	if c.cfg.SignedConfigs {
		return max(size, signedCost)
	}
	return size
}

// ConfigMergesLeft tells whether peers' configs wait for mergeMore.
func (c *Core) ConfigMergesLeft() bool { return c.cd.LeftOver() }

// mergeSpent notes that mergeConfigs stopped at its budget on the configs
// of from.
func (c *Core) mergeSpent(from string) {
	c.cd.LeaveOver(from)
}

// The texts of the configs a node holds are bounded in all
// (config.MaxServiceConfigs: what one heartbeat message carries of a
// member's data): its peers refuse a member's data that holds more, so a
// node never installs more. An edit made here (editConfig) or a peer's
// config (mergeConfigs) that would take the texts over the bound is
// refused, and says so.

// configTexts are the sizes of the texts of the configs this node holds,
// or is about to hold once the ConfigOps handed out are written, and
// their total.
type configTexts struct {
	size  map[string]int
	total int
}

func (c *Core) configTexts() *configTexts {
	svcs := c.cfg.Local.LocalServices()
	t := &configTexts{size: make(map[string]int, len(svcs))}
	for name, cfg := range svcs {
		t.size[name] = len(cfg.Raw)
	}
	for _, op := range c.cd.Ops() { // in order: the last one of a service wins
		t.size[op.Svc] = 0
		if op.Cfg != nil {
			t.size[op.Svc] = len(op.Cfg.Raw)
		}
	}
	for _, n := range t.size {
		t.total += n
	}
	return t
}

// check says why the config of name, raw bytes long, would take the texts
// over their bound; nil when it fits (or does not grow).
func (t *configTexts) check(name string, raw int) error {
	after := t.total - t.size[name] + raw
	if after <= config.MaxServiceConfigs || raw <= t.size[name] {
		return nil
	}
	return fmt.Errorf("the service configs of this node would hold %d bytes in all, more than %d (what one heartbeat message carries: docs/security.md, \"Bounds of a member's data\")",
		after, config.MaxServiceConfigs)
}

// set notes that name now holds raw bytes.
func (t *configTexts) set(name string, raw int) {
	t.total += raw - t.size[name]
	t.size[name] = raw
}
