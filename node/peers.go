package node

import (
	"fmt"
	"strings"
	"time"

	"haven/dataset"
	"haven/node/peersm"
	"haven/node/view"
)

// fullPassPeriod bounds the time between two decision passes when nothing
// changed (between changes, the pass runs on every event that changes the
// local data or the view, and at Ready.WakeAt). It is a safety net only:
// every time-driven decision asks for its own wake-up (WakeAt, NextTick),
// so it was lengthened from 5 s to 15 s, a third of an idle node's passes
// (docs/benchmarks-archive.md, "Idle cost"), then to a minute: with 200 services
// the pass every 15 s was a tenth of what they cost an idle daemon.
// Pacemaker's equivalent, cluster-recheck-interval, is 15
// minutes.
const fullPassPeriod = time.Minute

func (c *Core) initPeers() {
	c.pv.Peers = map[string]*peersm.Peer{}
	for _, m := range c.cfg.ClusterNodes {
		if m != c.cfg.Name {
			c.pv.Peers[m] = &peersm.Peer{Status: dataset.NodeStUnknown}
			c.pv.Pnames = append(c.pv.Pnames, m)
		}
	}
}

// wakeUp is the driver's timer of Ready.WakeAt: a decision pass is due.
func (c *Core) wakeUp() { c.pv.ViewChanged = true }

// ViewChanged reports whether the view changed since the last decision
// pass (the driver runs Orchestrate then, or when its dataset changed).
func (c *Core) ViewChanged() bool { return c.pv.ViewChanged || len(c.inc.Dirty) > 0 }

// notePeers emits the changes of the peers' status as this node concludes
// it, and marks the view changed.
func (c *Core) notePeers(now time.Time) {
	for _, name := range c.pv.Pnames {
		p := c.pv.Peers[name]
		st := view.Status(p.Peer, now, c.cfg.MaintenanceGrace)
		if st == p.Status {
			continue
		}
		e := PeerStatus{Node: name, From: p.Status, To: st}
		if p.Status == dataset.NodeStMaint && st == dataset.NodeDown {
			e.Reason = fmt.Sprintf("maintenance grace period (%s) ended: treated as down", c.cfg.MaintenanceGrace)
		} else if st == dataset.NodeStMaint {
			e.Reason = fmt.Sprintf("grace %s", c.cfg.MaintenanceGrace)
		}
		c.emit(e)
		p.Status = st
		c.pv.ViewChanged = true
	}
}

// updateCompat compares the compat versions of the live members.
func (c *Core) updateCompat() {
	peers := make(map[string]view.Peer, len(c.pv.Peers))
	for name, p := range c.pv.Peers {
		peers[name] = p.Peer
	}
	c.updateLevel()
	ok := view.CompatOK(c.cfg.Compat, peers)
	reason := "" // a compat mismatch says nothing more: the contract's line
	if ok {
		ok, reason = c.formatsCompatible()
	}
	if ok == c.pv.Compat {
		return
	}
	c.pv.Compat = ok
	c.emit(Compat{OK: ok, Reason: reason})
	c.publish()
}

// updateRejoin ends the rejoin state once every member was heard, or at
// the end of rejoin_grace_period, freezing the node if some are missing.
func (c *Core) updateRejoin(now time.Time) {
	if c.monitor != dataset.NodeRejoin {
		return
	}
	var missing []string
	for _, name := range c.pv.Pnames {
		if c.pv.Peers[name].Data == nil {
			missing = append(missing, name)
		}
	}
	grace := c.cfg.RejoinGrace
	switch view.Rejoin(len(missing), c.started, now, grace) {
	case view.RejoinDone:
		c.setNodeMonitor(dataset.NodeIdle, "every cluster node was heard from")
		return
	case view.StayRejoin:
		return
	}
	reason := fmt.Sprintf("rejoin grace period (%s) ended with nodes never heard from: %s", grace, strings.Join(missing, ", "))
	if !c.state.NodeFrozen {
		c.setNodeFrozen(true, reason+": node frozen so that services never start twice (nodemgr thaw resumes)")
	}
	c.setNodeMonitor(dataset.NodeIdle, reason)
}

// setNodeMonitor changes the node monitor state (rejoin, idle,
// maintenance, shutting, draining).
func (c *Core) setNodeMonitor(m dataset.NodeMonitor, reason string) {
	if c.monitor == m {
		return
	}
	c.emit(NodeMonitor{From: c.monitor, To: m, Reason: reason})
	c.monitor = m
	c.publish()
}

// NodeMonitor returns the node monitor state.
func (c *Core) NodeMonitor() dataset.NodeMonitor { return c.monitor }

// Compat reports whether every live member announces this node's compat.
func (c *Core) Compat() bool { return c.pv.Compat }

// PeerNames returns the other members, sorted.
func (c *Core) PeerNames() []string { return c.pv.Pnames }

// Peer returns what this node knows of a peer.
func (c *Core) Peer(name string) (view.Peer, bool) {
	p := c.pv.Peers[name]
	if p == nil {
		return view.Peer{}, false
	}
	return p.Peer, true
}

// PeerStatus is this node's conclusion about a peer at now.
func (c *Core) PeerStatus(name string, now time.Time) dataset.NodeStatus {
	p := c.pv.Peers[name]
	if p == nil {
		return dataset.NodeStUnknown
	}
	return view.Status(p.Peer, now, c.cfg.MaintenanceGrace)
}

// mergeEra is the merge era now (peersm.MergeEra).
func (c *Core) mergeEra() peersm.MergeEra {
	return peersm.MergeEra{Bumps: c.pv.EraBumps, Services: len(c.state.Services)}
}

// bumpMergeEra makes the next data of every peer merge as a whole.
func (c *Core) bumpMergeEra() { c.pv.EraBumps++ }
