package node

import (
	"maps"
	"slices"
	"time"

	"haven/dataset"
	"haven/dataset/status"
	"haven/monitor"
	"haven/node/view"
)

// The inputs of the node's life and of its peers, which dispatch to the
// rules: the start of the daemon, a heartbeat event, the periodic tick,
// the merge again of the versions refused as ahead, the node guard's
// report (the rules of the guard are guard.go's).

// start is the start of the daemon: with peers, the node monitor enters
// rejoin until every one was heard or the rejoin grace period ends.
func (c *Core) start(now time.Time) {
	c.started = now
	if len(c.pv.Peers) > 0 {
		c.setNodeMonitor(dataset.NodeRejoin, "waiting to hear from every cluster node")
	}
	c.updateLevel() // alone in its cluster, a node reads every format there is
	if !c.cfg.SignedConfigs {
		c.forgetSerials()
	}
	c.publish()
}

// heartbeat takes a heartbeat event: the peer's status, its data (configs,
// targets and clears newer than ours are adopted: mergeConfigs first),
// then compat and rejoin; the edits waiting for the peers' adoption are
// looked at again.
func (c *Core) heartbeat(ev PeerEvent, now time.Time) {
	p := c.pv.Peers[ev.Node]
	if p == nil {
		return
	}
	instancesOnly := false
	c.noteFirstHeard(p, ev, now)
	switch ev.Kind {
	case PeerUp:
		p.Up = true
	case PeerDown:
		if p.Up && !c.heldUpAsTwin(p) {
			p.Peer = view.NoteDown(p.Peer)
		}
	case PeerUnseen:
		p.Unseen = append([]string(nil), ev.Unseen...)
	case PeerData:
		if ev.Data == nil {
			return
		}
		instancesOnly = c.takeData(p, ev, now)
	case PeerStale, PeerFresh, PeerDuplicate, PeerDuplicateGone, PeerRunHeld, PeerRunTrusted:
	default:
		return
	}
	c.noteStale(p, ev)
	c.noteDuplicate(p, ev)
	c.updateCompat()
	c.updateConf()
	c.notePeers(now)
	c.updateRejoin(now)
	c.updateQuorum(now)
	if ev.Kind == PeerData {
		c.checkEdits(now)
	}
	// a peer's change is a change of this node's view: decide again (only
	// the services whose instances changed, when that is all: dirty)
	if !instancesOnly {
		c.pv.ViewChanged = true
	}
}

// tick is the periodic tick (at NextTick in the daemon): the periodic status
// checks (CheckInterval, MonitorInterval), the peers' status
// changes that come with time alone (a maintenance grace that ends), the
// end of the rejoin grace period, and the safety-net decision pass (at
// most fullPassPeriod apart, so that nothing waits forever on a lost
// event).
func (c *Core) tick(now time.Time) {
	c.updateRejoin(now)
	c.notePeers(now)
	c.tickChecks(now)
	c.tickQuorum(now)
	if c.ConfigMergesLeft() {
		c.mergeMore(now) // the driver's own turns are quicker (mergeMore)
	}
	c.checkEdits(now)
	c.retryAhead(now)
	if now.Sub(c.lastStep) >= fullPassPeriod {
		c.pv.ViewChanged = true
	}
}

// retryAhead merges the peers' data again once the versions refused as
// ahead of the clock became acceptable.
func (c *Core) retryAhead(now time.Time) {
	if !c.vb.RetryDue(now) {
		return
	}
	c.bumpMergeEra()
	snap := func() monitor.Snapshot { return c.Snapshot(now) }
	for _, pn := range c.pv.Pnames {
		if d := c.pv.Peers[pn].Data; d != nil {
			c.mergeConfigs(pn, d.Configs, now)
			c.mergeTargets(pn, d.Targets, now, snap)
			c.mergeClears(pn, d.Clears, now)
		}
	}
}

// guardReport takes the guard's answer in: a record not taken in yet is
// acted on first (GuardFired); a change of the armed state is published.
func (c *Core) guardReport(in GuardReported) {
	if !c.cfg.Guard.Enabled {
		return
	}
	g := &c.guard
	if g.NotRenewed = in.NotRenewed; g.NotRenewed == "" {
		if g.Held != "" {
			// a start held for want of a renewed lease (guardHoldsStart)
			// may go now: nothing else may come to decide it again (a
			// node whose split freeze ended, its peers quiet)
			c.wakeUp()
		}
		g.Held = ""
	}
	if f := in.Fired; f != nil && !f.Acked && f.ID != g.Fired {
		g.Fired = f.ID
		c.guardFired(*f, in.Now)
	}
	if in.Armed != g.Armed || in.Maintenance != g.Maint || in.Err != g.Err {
		if in.Armed != g.Armed || in.Err != g.Err {
			c.emit(GuardState{Armed: in.Armed, Maintenance: in.Maintenance, Err: in.Err})
		}
		g.Armed, g.Maint, g.Err = in.Armed, in.Maintenance, in.Err
		c.publish()
	}
}

// guardFired: the guard ended the instances of f while this daemon did
// not renew its lease. They are down, and expect to run no more here:
// neither the restart ladder nor a check that still says up brings them
// back; the orchestrator starts them where the cluster places them (here
// too, if this node is the one).
func (c *Core) guardFired(f GuardFiring, now time.Time) {
	c.emit(GuardFired{Services: f.Services, At: f.At, Late: f.Late.Round(time.Millisecond).String()})
	for _, svc := range f.Services {
		inst := c.insts[svc]
		if inst == nil || !inst.Local {
			continue
		}
		c.expect(svc, inst, dataset.ExpectNone)
		inst.Lad.PendRID = ""
		if inst.Mon.State == dataset.Restarting {
			c.setMonitorState(svc, inst, dataset.Idle, "ended by the node guard", now)
		}
		for _, rid := range slices.Sorted(maps.Keys(inst.Res)) {
			r := inst.Res[rid]
			if r.Status == dataset.StatusUp || r.Status == dataset.StatusWarn {
				r.Status, r.Log = dataset.StatusDown, "ended by the node guard"
				inst.Res[rid] = r
			}
		}
		if avail, overall := status.Instance(inst.Res); avail != inst.Avail || overall != inst.Overall {
			c.emit(InstanceStatus{Svc: svc, From: inst.Avail, To: avail, Overall: overall})
			inst.Avail, inst.Overall = avail, overall
		}
		c.checkNow(svc)
	}
	c.publish()
	c.pv.ViewChanged = true
}

// Tick's share of the quorum: the same update (deadlines, backoffs,
// stalls come with time alone).
func (c *Core) tickQuorum(now time.Time) {
	c.updateQuorum(now)
	c.checkDiskSplit(now)
}
