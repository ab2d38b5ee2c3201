package node

import (
	"strings"
	"time"

	"haven/dataset"
	"haven/node/configdist"
)

// The edits made here that wait for the peers' adoption, and their rebase
// over a concurrent version that won (configs.go says why an acknowledged
// edit is in the content every live node holds).

// rebasePending runs after a config from peer from, raw, won over ours:
// the pending edits the winner lacks are applied again on top of it, as
// one new version; those that cannot be are answered "changed
// concurrently".
func (c *Core) rebasePending(name, from string, raw []byte) {
	ps := c.cd.PendingOf(name)
	if len(ps) == 0 {
		return
	}
	cur := c.configOnDisk(name) // the winner, just written
	var redo []*configdist.Edit
	for _, p := range ps {
		if cur.IncludesEdit(c.cfg.Name, p.Counter) {
			continue
		}
		if p.Op == "" || p.Rebases >= maxRebases {
			c.finishEdit(name, p, failedf("%s: changed concurrently on %s, retry", name, cur.Version.Origin))
			continue
		}
		next, err := c.cfg.Configs.EditService(name, raw, p.Op, p.Kws)
		if err == nil {
			_, err = c.cfg.Configs.ParseService(name, next)
		}
		if err != nil {
			c.finishEdit(name, p, failedf("%s: changed concurrently on %s, and the change no longer applies (%v): retry", name, cur.Version.Origin, err))
			continue
		}
		raw = next
		p.Rebases++
		redo = append(redo, p)
	}
	if len(redo) == 0 {
		return
	}
	cfg, err := c.cfg.Configs.ParseService(name, raw)
	if err != nil {
		for _, p := range redo {
			c.finishEdit(name, p, failedf("%s: changed concurrently on %s, and the change no longer applies (%v): retry", name, cur.Version.Origin, err))
		}
		return
	}
	e := c.newEntry(name, cfg.Raw)
	for _, p := range redo {
		p.Counter = e.Version.Counter
	}
	c.order(&configdist.Op{Svc: name, Cfg: cfg, Entry: e, What: "changed (edits made here applied again on a concurrent version)",
		From: cur.Version.Origin, Redo: redo})
}

// checkEdits looks at every edit pending here (on the peers' news, and
// at each tick: their status also changes with time alone).
func (c *Core) checkEdits(now time.Time) {
	for _, name := range c.cd.PendingServices() {
		if !c.cd.Busy(name) {
			c.checkPending(name, now)
		}
	}
}

// checkPending answers the edits of name that every live peer now holds,
// and fails those that waited too long.
func (c *Core) checkPending(name string, now time.Time) {
	ps := c.cd.PendingOf(name)
	for _, p := range ps {
		if !c.KnownConfig(name).IncludesEdit(c.cfg.Name, p.Counter) {
			// cannot happen while the rebase keeps the invariant; never ack it
			c.finishEdit(name, p, failedf("%s: changed concurrently, retry", name))
			continue
		}
		missing := c.peersLacking(name, p.Counter, now)
		switch {
		case len(missing) == 0:
			c.finishEdit(name, p, nil)
		case now.After(p.Deadline):
			c.emit(ConfigUnconfirmed{Svc: name, Nodes: missing})
			c.finishEdit(name, p, failedf("%s: the change is installed here, but %s did not confirm it within %s: it may be lost if changed concurrently there: check with svcmgr get, and retry if needed",
				name, strings.Join(missing, ", "), c.confirmTimeout()))
		}
	}
}

// peersLacking lists the live peers whose announced config of name does
// not include this node's edit made at counter n.
func (c *Core) peersLacking(name string, n uint64, now time.Time) []string {
	var out []string
	for _, pn := range c.pv.Pnames {
		p := c.pv.Peers[pn]
		if c.PeerStatus(pn, now) != dataset.NodeUp {
			continue
		}
		if p.Data == nil || !p.Data.Configs[name].IncludesEdit(c.cfg.Name, n) {
			out = append(out, pn)
		}
	}
	return out
}

// finishEdit answers a pending edit and forgets it.
func (c *Core) finishEdit(name string, p *configdist.Edit, err error) {
	c.cd.Forget(name, p)
	c.answer(Answer{Ticket: p.Ticket, Err: err})
}

// failPending answers every pending edit of name with err.
func (c *Core) failPending(name string, err error) {
	for _, p := range c.cd.PendingOf(name) {
		c.finishEdit(name, p, err)
	}
}
