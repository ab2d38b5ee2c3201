package node

import (
	"time"

	"haven/monitor"
	"haven/node/view"
)

// Snapshot gathers what the decision core reads: plain data, with now.
func (c *Core) Snapshot(now time.Time) monitor.Snapshot {
	peers := make(map[string]view.Peer, len(c.pv.Peers))
	for name, p := range c.pv.Peers {
		peers[name] = p.Peer
	}
	s := view.Snapshot(view.Input{
		Now:              now,
		Local:            c.Dataset(c.cfg.Local.LocalInfo()), // no config entries: no decision reads them
		Peers:            peers,
		MaintenanceGrace: c.cfg.MaintenanceGrace,
		ClusterNodes:     c.cfg.ClusterNodes,
		Services:         c.cfg.Local.LocalServices(),
		Compat:           c.pv.Compat,
		ConfDiffers:      c.pv.ConfDiffers,
		ReadyPeriod:      c.cfg.ReadyPeriod,
	})
	s.Fencing = c.fencing()
	s.FastAck = c.fastAck(now)
	return s
}
