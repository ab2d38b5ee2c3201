package node

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"haven/dataset"
	"haven/internal/planted"
	"haven/node/peersm"
	"haven/node/quorumsm"
	"haven/node/view"
	"haven/quorum"
)

// statusProbeEvery is how often the arbitrators are probed for the status
// alone (a vote probes them at once).
const statusProbeEvery = 10 * time.Second

// fenceBackoffMax bounds the pause between two runs of a failing fence.
const fenceBackoffMax = 60 * time.Second

// SelfStop is the takeover gate's timing as the gate computes it
// (timingOf, quorum.Timing.Deadline): how long after a lost peer is
// declared down its services may be started here without a fence. nil
// when cluster.quorum is off (no gate).
func (c *Core) SelfStop() *dataset.SelfStopInfo {
	if !c.quorumOn() {
		return nil
	}
	t, by := c.timingOf()
	ss := &dataset.SelfStopInfo{DeadlineMs: t.Deadline().Milliseconds(), StopBudgetMs: t.StopBudget.Milliseconds(), StopBudgetOf: by,
		Terms: t.Terms(), OneVote: c.hasOneVote(), OneVoteMs: (t.StopBudget + t.Beat).Milliseconds(), Fenced: slices.Clone(c.cfg.Quorum.Stonith)}
	if c.cfg.Guard.Enabled {
		// a lost node that published an armed guard with this node's
		// guard settings: the gate's own rule for it (selfStopDeadline)
		g := &dataset.Node{Guard: &dataset.GuardInfo{LeaseMs: c.cfg.Guard.Lease.Milliseconds(), ActMs: c.cfg.Guard.Act.Milliseconds(),
			Anchored: true, HBTimeoutMs: c.cfg.Quorum.HBTimeout.Milliseconds()}}
		bound, what := c.lostStopBound(g)
		ss.GuardMs, ss.GuardOneVoteMs = c.selfStopDeadline(g).Milliseconds(), bound.Milliseconds()
		if hb, ok := c.anchoredHBTimeout(g); ok {
			ss.GuardTerms = fmt.Sprintf("its guard's anchored lease %s + act %s + margin - hb.timeout %s, counted from its declaration down by every live member", c.cfg.Guard.Lease, c.cfg.Guard.Act, hb)
		} else {
			ss.GuardTerms = fmt.Sprintf("beat %s + arbitrator timeout %s + %s and margin", t.Beat, t.ArbitratorTimeout, what)
		}
	}
	return ss
}

// livePeers are the peers this node hears, whose data is current, and whose
// beats do not list it as unseen: the members of its side. A peer in
// maintenance (within its grace) or shutting counts: it left on purpose;
// so does a peer whose instances are unknown only because its new run is
// held (a restart: duplicate.go), whose data is current.
func (c *Core) livePeers(now time.Time) []string {
	var out []string
	for _, name := range c.pv.Pnames {
		p := c.pv.Peers[name]
		switch view.Status(p.Peer, now, c.cfg.MaintenanceGrace) {
		case dataset.NodeStMaint, dataset.NodeStShutting:
			// announced: a daemon stopped for maintenance (within its
			// grace) or shutting down is no loss
		case dataset.NodeUp:
			if p.Data == nil || view.Unconfirmed(p.Peer) && !p.HeldRunOnly() || c.selfClaimCredited(p, now) {
				continue
			}
		default:
			continue
		}
		out = append(out, name)
	}
	return out
}

// noteFirstHeard records when a peer was first heard in this run, and
// whether one of its beats since did not list this node.
func (c *Core) noteFirstHeard(p *peersm.Peer, ev PeerEvent, now time.Time) {
	if p.FirstHeard.IsZero() && (ev.Kind == PeerUp || ev.Kind == PeerData && ev.Data != nil) {
		p.FirstHeard = now
	}
	if ev.Kind == PeerUnseen && !slices.Contains(ev.Unseen, c.cfg.Name) {
		p.HeardUs = true
	}
}

// selfClaimCredited reports whether the peer's beats list this node as
// declared down, and that claim is about this run of the daemon. A peer
// that declared the previous run down keeps listing it until it hears the
// new one (its next beat then drops it): right after a restart, the claim
// is credited only once a beat of the peer did not list this node (it
// heard this run) or the claim outlasted hb.timeout since the peer was
// first heard (it had time to hear this run and did not: a one-way loss).
func (c *Core) selfClaimCredited(p *peersm.Peer, now time.Time) bool {
	if !slices.Contains(p.Unseen, c.cfg.Name) {
		return false
	}
	return p.HeardUs || p.FirstHeard.IsZero() || !now.Before(p.FirstHeard.Add(c.cfg.Quorum.HBTimeout))
}

// updateQuorum runs after every heartbeat event and tick: a loss of live
// members starts a vote; the vote is decided once the arbitrators
// answered; the takeover gates follow the lost peers; a split stop that
// outlasts its deadline escalates to crash.
func (c *Core) updateQuorum(now time.Time) {
	if !c.quorumOn() {
		return
	}
	q := &c.q
	if q.Live == nil {
		q.Live = map[string]bool{}
		q.Arbs = map[string]quorumsm.ArbResult{}
		q.Gates = map[string]*quorumsm.Gate{}
	}
	stalled := time.Duration(0)
	if gap := now.Sub(q.LastTick) + q.Slept; !q.LastTick.IsZero() && c.cfg.Quorum.HBTimeout > 0 && gap > c.cfg.Quorum.HBTimeout {
		stalled = gap
	}
	q.LastTick, q.Slept = now, 0
	if c.cfg.Quorum.SplitAction == SplitStop && q.Split.Lost != c.state.SplitFrozen {
		// the split freeze is the lost state of a split_action stop: an
		// admin's thaw ended it (the node is back in the race), or it
		// was restored from the state file (a daemon restarted frozen)
		q.Split.Lost = c.state.SplitFrozen
		q.Split.SplitSvcs = nil
	}
	live := c.livePeers(now)
	cur := make(map[string]bool, len(live))
	var lost []string
	for _, n := range live {
		cur[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(q.Live)) {
		if !cur[n] {
			lost = append(lost, n)
		}
	}
	if c.monitor == dataset.NodeRejoin {
		// Just started, not every member heard yet: this node has never
		// had sight of the cluster in this run, and it starts nothing
		// before the end of the rejoin (which freezes it when members are
		// still missing). It does not run the race: a member not heard yet
		// is no loss, nor an arbitrator not probed yet.
		q.Live, q.Rejoined = cur, false
		lost, stalled = nil, 0
	} else if !q.Rejoined {
		// The rejoin ended: the members heard in this run that are not
		// live now (declared down since, or not hearing this node) are
		// lost, and voted on as usual.
		q.Rejoined = true
		for _, n := range c.pv.Pnames {
			if c.pv.Peers[n].Data != nil && !cur[n] && !slices.Contains(lost, n) {
				lost = append(lost, n)
			}
		}
	}
	q.Live = cur
	if c.state.SplitFrozen && stalled == 0 && c.monitor != dataset.NodeRejoin && len(live) == len(c.pv.Pnames) && !c.justStalled(now) {
		c.endSplitFreeze("the cluster is whole again: every member hears this node and is heard")
	}
	if stalled > 0 {
		// this daemon did not run for longer than hb.timeout: its peers
		// may have declared it down and taken over; count it alone
		c.emit(QuorumStall{Gap: stalled.Round(time.Millisecond).String()})
		c.startVote(now, nil, c.pv.Pnames)
		q.StallAt = now
	} else if len(lost) > 0 {
		c.startVote(now, live, lost)
	} else if c.leaseLapsed(now) {
		// a one-vote arbitrator's lease counted by the last vote ended
		// unrenewed: the vote is taken again without it
		c.startVote(now, live, nil)
		q.Again = "a one-vote arbitrator's lease ended unrenewed"
	} else {
		c.voteAgainIfRegained(live, now)
	}
	c.reportLeases(live, now)
	c.decideVote(now)
	if !q.NextProbe.IsZero() && !now.Before(q.NextProbe) || q.NextProbe.IsZero() && len(c.cfg.Quorum.Arbitrators) > 0 {
		q.NextProbe = now.Add(statusProbeEvery)
		c.probeAll(now)
	}
	c.updateGates(now)
	c.splitProgress(now)
}

func (c *Core) probeAll(now time.Time) {
	for _, a := range c.cfg.Quorum.Arbitrators {
		if a.OneVote {
			continue // reported to every quorum.LeaseReportEvery (reportLeases)
		}
		c.ready.Probes = append(c.ready.Probes, Probe{Name: a.Name, Sent: now})
	}
}

// mayRegain says why the vote is taken again ("" when it is not): the
// last vote was lost and still holds this node back (its split freeze, or
// the takeover gates of its lost peers), and the votes counted now (the
// live members, the one-vote leases that run, the plain arbitrators that
// answered a probe sent since that vote) are a majority. The vote itself
// decides, with fresh answers. A node whose crash or reboot was ordered
// is left alone.
func (c *Core) mayRegain(live []string, now time.Time) string {
	q := &c.q
	if !q.Pending.IsZero() || c.monitor == dataset.NodeRejoin {
		return ""
	}
	if c.justStalled(now) {
		return ""
	}
	switch {
	case c.state.SplitFrozen:
	case q.Split.Lost:
		return "" // crashing or rebooting
	case q.Last != nil && !q.Last.Survive && len(q.Gates) > 0:
	default:
		return ""
	}
	arbs := make([]quorum.Arbitrator, len(c.cfg.Quorum.Arbitrators))
	copy(arbs, c.cfg.Quorum.Arbitrators)
	for i, a := range arbs {
		if a.OneVote {
			arbs[i].Answered = c.leaseRuns(a.Name, now)
			continue
		}
		r, heard := q.Arbs[a.Name]
		arbs[i].Answered = heard && r.Ok && !r.Sent.Before(q.LastAt)
	}
	v := quorum.Vote(quorum.Input{ClusterNodes: len(c.cfg.ClusterNodes), Live: append([]string{c.cfg.Name}, live...), Arbitrators: arbs})
	if !v.Survive {
		return ""
	}
	return fmt.Sprintf("this side may hold the quorum again (%d of %d votes)", v.Votes, v.Total)
}

// justStalled reports whether this daemon found it had stalled less than
// hb.timeout ago: the peers' beats taken since may be older than their
// loss of this node, so its split freeze is not ended on their account
// yet (a wake-up is asked for the end of that wait).
func (c *Core) justStalled(now time.Time) bool {
	q := &c.q
	if q.StallAt.IsZero() || !now.Before(q.StallAt.Add(c.cfg.Quorum.HBTimeout)) {
		return false
	}
	c.wakeAt(q.StallAt.Add(c.cfg.Quorum.HBTimeout))
	return true
}

// voteAgainIfRegained takes the vote again when mayRegain says why: a
// lost vote holds this node back (its split freeze, or the takeovers of
// its lost peers) and the votes it sees now make a majority.
func (c *Core) voteAgainIfRegained(live []string, now time.Time) {
	if why := c.mayRegain(live, now); why != "" {
		c.startVote(now, live, nil)
		c.q.Again = why
	}
}

// endSplitFreeze ends the freeze of a split_action stop: this node holds
// the quorum again, or the cluster is whole. Its takeovers still wait for
// their gates, which start again from now (restartGate).
func (c *Core) endSplitFreeze(why string) {
	q := &c.q
	if !c.state.SplitFrozen {
		return
	}
	c.setSplitFrozen(false, why)
	if c.cfg.Quorum.SplitAction == SplitStop {
		q.Split.Lost, q.Split.SplitSvcs = false, nil
	}
	c.pv.ViewChanged = true
}

// startVote begins a vote: lost members were lost at now; live are the
// members of this side (nil: this node alone).
func (c *Core) startVote(now time.Time, live, lost []string) {
	q := &c.q
	q.Again = ""
	q.Pending = now
	q.PendingLive = append([]string{c.cfg.Name}, live...)
	q.PendingLost = append([]string(nil), lost...)
	if ok, _ := quorum.Decided(len(c.cfg.ClusterNodes), len(q.PendingLive), c.cfg.Quorum.Arbitrators); !ok {
		c.probeAll(now)
	}
}

// decideVote decides the pending vote once every arbitrator answered a
// probe sent for it (or at once when the members alone decide).
func (c *Core) decideVote(now time.Time) {
	q := &c.q
	if q.Pending.IsZero() {
		return
	}
	arbs := make([]quorum.Arbitrator, len(c.cfg.Quorum.Arbitrators))
	copy(arbs, c.cfg.Quorum.Arbitrators)
	if ok, _ := quorum.Decided(len(c.cfg.ClusterNodes), len(q.PendingLive), arbs); !ok {
		for i, a := range arbs {
			if a.OneVote {
				// its standing is current (reported every second): the
				// lease that runs now counts, none is waited for
				arbs[i].Answered = c.leaseRuns(a.Name, now)
				continue
			}
			r, heard := q.Arbs[a.Name]
			if !heard || r.Sent.Before(q.Pending) {
				return // wait for its answer (the driver bounds it by its timeout)
			}
			arbs[i].Answered = r.Ok
		}
	}
	// a node frozen by an admin (or by the daemon's rejoin rule) does not
	// run the race; a split freeze does: it ends when this side wins
	v := quorum.Vote(quorum.Input{ClusterNodes: len(c.cfg.ClusterNodes), Live: q.PendingLive, Arbitrators: arbs, Frozen: c.state.NodeFrozen})
	started := q.Pending
	q.Pending = time.Time{}
	if q.Split.Lost && !v.Survive {
		// already out of the race (stopped and frozen, or crashed): one
		// vote said it
		return
	}
	q.Last, q.LastAt = &v, now
	c.emit(QuorumVote{Verdict: v, Lost: q.PendingLost, SplitAction: c.cfg.Quorum.SplitAction, Again: q.Again})
	c.publish()
	c.pv.ViewChanged = true
	if v.Survive && c.state.SplitFrozen {
		c.endSplitFreeze("this node holds the quorum again: " + v.String())
	}
	if v.Survive || v.Skipped || q.Split.Lost {
		return // a node that already lost stays stopped (or crashed)
	}
	c.splitAction(started, now, v)
}

// splitAction is what a node that lost the vote does at once.
func (c *Core) splitAction(started, now time.Time, v quorum.Verdict) {
	q := &c.q
	reason := fmt.Sprintf("quorum lost (%d of %d votes): split_action %s", v.Votes, v.Total, c.cfg.Quorum.SplitAction)
	switch c.cfg.Quorum.SplitAction {
	case SplitDisabled:
		return // the vote event said it
	case SplitCrash, SplitReboot:
		q.Split.Lost = true
		c.splitNodeAction(c.cfg.Quorum.SplitAction, reason)
		return
	}
	q.Split.Lost = true
	c.setSplitFrozen(true, reason+": every local instance stopped, node frozen until it holds the quorum again or the cluster is whole (nodemgr thaw ends it sooner)")
	q.Split.EscalateAt = started.Add(c.timing().EscalateAfter())
	q.Split.Escalated = false
	q.Split.SplitSvcs = q.Split.SplitSvcs[:0]
	for _, inst := range c.ilist {
		if inst.Local && inst.Spec.Runnable {
			q.Split.SplitSvcs = append(q.Split.SplitSvcs, inst.Name)
		}
	}
	c.splitProgress(now)
	c.wakeAt(q.Split.EscalateAt)
}

// splitProgress stops what still runs after a lost vote (an action in
// flight is let end first), and crashes the node when a stop failed or the
// escalation deadline passed with an instance still running.
func (c *Core) splitProgress(now time.Time) {
	q := &c.q
	if !q.Split.Lost || q.Split.Escalated || c.cfg.Quorum.SplitAction != SplitStop {
		return
	}
	var left []string
	for _, svc := range q.Split.SplitSvcs {
		inst := c.insts[svc]
		if inst == nil {
			continue
		}
		_, running := c.Status(svc)
		if inst.Mon.State == dataset.StopFailed {
			c.escalate(fmt.Sprintf("the split stop of %s failed (%s)", svc, inst.Mon.Error))
			return
		}
		if inst.Act.Busy == "" && running {
			c.runAction(svc, "stop", "quorum lost: split_action stop", now)
		}
		if inst.Act.Busy != "" || running {
			left = append(left, svc)
		}
	}
	if len(left) > 0 && !now.Before(q.Split.EscalateAt) {
		c.escalate(fmt.Sprintf("the split stop did not end by its deadline (%s still running)", strings.Join(left, ", ")))
	}
}

func (c *Core) escalate(why string) {
	c.q.Split.Escalated = true
	c.splitNodeAction(SplitCrash, "quorum lost and "+why+": escalate to crash, as a watchdog would")
}

// arbitratorResult is the answer of a probe of arbitrator name sent at
// sent (Probe.Sent): ok when it answered 2xx or accepted, detail says what
// it answered or why not.
func (c *Core) arbitratorResult(name string, ok bool, detail string, sent, now time.Time) {
	if !c.quorumOn() {
		return
	}
	if c.q.Arbs == nil {
		c.updateQuorum(now)
	}
	prev, had := c.q.Arbs[name]
	if had && sent.Before(prev.Sent) {
		return
	}
	c.q.Arbs[name] = quorumsm.ArbResult{Ok: ok, Detail: detail, Sent: sent}
	if !had || prev.Ok != ok {
		c.emit(ArbitratorStatus{Name: name, OK: ok, Detail: detail})
	}
	c.voteAgainIfRegained(c.livePeers(now), now)
	c.decideVote(now)
	c.updateGates(now)
}

// fenceEnded is the end of a fence run of node: err nil when the command
// exited 0.
func (c *Core) fenceEnded(node string, err error, now time.Time) { c.fenceDone(node, "", err, now) }

// fenceDone is fenceEnded; how says how a fence that was no command was
// done ("" for a command).
func (c *Core) fenceDone(node, how string, err error, now time.Time) {
	g := c.q.Gates[node]
	if g == nil || !g.Fencing {
		return
	}
	g.Fencing = false
	g.Attempts++
	if err == nil {
		g.Fenced = true
		c.emit(Fenced{Node: node, How: how})
	} else {
		back := time.Second << min(g.Attempts-1, 6)
		back = min(back, fenceBackoffMax)
		g.NextTry = now.Add(back)
		g.FenceErr = err.Error()
		c.emit(FenceFailed{Node: node, Err: err.Error(), Attempt: g.Attempts, Retry: back.String()})
		c.wakeAt(g.NextTry)
	}
	c.updateGates(now)
}

// hasStonith reports whether node has a fence command.
func (c *Core) hasStonith(node string) bool { return slices.Contains(c.cfg.Quorum.Stonith, node) }

// updateGates follows the lost peers: a gate opens when a peer heard
// before is declared down, closes when it is heard again; it clears once
// the peer is fenced or certainly stopped by its own split_action.
func (c *Core) updateGates(now time.Time) {
	q := &c.q
	for _, name := range c.pv.Pnames {
		p := c.pv.Peers[name]
		down := p.Data != nil && p.Data.Monitor != dataset.NodeShutting &&
			view.Status(p.Peer, now, c.cfg.MaintenanceGrace) == dataset.NodeDown
		g := q.Gates[name]
		switch {
		case down && g == nil:
			g = &quorumsm.Gate{Since: now, LostAt: now, Deadline: now.Add(c.selfStopDeadline(p.Data)), LiveAt: maps.Clone(q.Live)}
			q.Gates[name] = g
		case !down && g != nil:
			delete(q.Gates, name)
			if g.Blocked != "" {
				c.emit(TakeoverGate{Node: name, Closed: true})
			}
			c.pv.ViewChanged = true
			continue
		case !down:
			continue
		}
		why := c.gateBlocked(name, p.Peer, g, now)
		if why == g.Blocked && g.Said {
			continue
		}
		g.Blocked, g.Said = why, true
		c.pv.ViewChanged = true
		if why == "" {
			c.emit(TakeoverGate{Node: name, Cleared: true, Reason: c.gateCleared(g)})
		} else {
			c.emit(TakeoverGate{Node: name, Reason: why})
		}
	}
}

// restartGate starts a gate again at now. It was held by this node's lost
// quorum, or by a live member that still heard the peer: meanwhile the
// peer may have kept its quorum (with that member, or while this side had
// none), so its self-stop deadline, and a one-vote arbitrator's grant to
// this side alone, count from now, when nothing of that is left. A fence
// that succeeded stays.
func (c *Core) restartGate(g *quorumsm.Gate, d *dataset.Node, now time.Time) {
	g.Restart = false
	g.Since, g.Deadline, g.LiveAt = now, now.Add(c.selfStopDeadline(d)), maps.Clone(c.q.Live)
	g.OneVoteAt, g.OneVoteBy = time.Time{}, ""
	if !g.Fencing && g.Attempts == 0 {
		g.RaceChecked, g.RaceDelay = false, false
	}
}

func (c *Core) gateCleared(g *quorumsm.Gate) string {
	if g.Fenced {
		return "fenced"
	}
	return "self-stop deadline passed"
}

// gateBlocked says why the services of lost peer name may not be taken
// over yet, "" when they may.
func (c *Core) gateBlocked(name string, p view.Peer, g *quorumsm.Gate, now time.Time) string {
	q := &c.q
	if g.Fenced {
		return ""
	}
	if !q.Pending.IsZero() {
		return "this node's quorum vote waits for the arbitrators"
	}
	if q.Split.Lost || q.Last != nil && !q.Last.Survive {
		g.Restart, g.From = true, "this node held the quorum again"
		return "this node lost the quorum"
	}
	for _, n := range c.pv.Pnames {
		if q.Live[n] {
			if !slices.Contains(c.pv.Peers[n].Unseen, name) {
				g.Restart, g.From = true, "no live member heard "+name+" any more"
				return n + " still hears " + name
			}
		}
	}
	if d := p.Data; d != nil && d.Guard != nil && d.Guard.Anchored {
		// the peer's lease counts from a member's declaration of it down:
		// a member live since the gate started declared it maybe later
		for _, n := range c.pv.Pnames {
			if q.Live[n] && !g.LiveAt[n] {
				g.Restart, g.From = true, n+" became live"
			}
		}
	}
	if g.Restart {
		c.restartGate(g, p.Data, now)
	}
	if c.hasStonith(name) {
		if !g.RaceChecked {
			// Both sides may have kept the quorum (2 nodes and an
			// arbitrator both reach): each would fence the other. One
			// fences at once, the other after the self-stop deadline, as
			// Pacemaker's fence delay does (fencerace.go).
			g.RaceChecked = true
			agree := len(q.Live) + 1
			if !quorum.CertainlyLost(len(c.cfg.ClusterNodes), agree, c.cfg.Quorum.Arbitrators) {
				if g.RaceDelay, g.RaceWhy = c.fencesSecond(name); g.RaceDelay {
					g.NextTry = g.Deadline
					c.wakeAt(g.NextTry)
				}
			}
		}
		switch {
		case g.Fencing:
			return "fencing " + name
		case g.RaceDelay && g.Attempts == 0 && now.Before(g.NextTry):
			return fmt.Sprintf("fence of %s delayed until %s: %s may have kept the quorum too, and %s (so that two survivors never fence each other)",
				name, g.NextTry.UTC().Format("15:04:05.000"), name, g.RaceWhy)
		case now.Before(g.NextTry):
			return fmt.Sprintf("fence of %s failed (attempt %d: %s), next try at %s", name, g.Attempts, g.FenceErr, g.NextTry.UTC().Format("15:04:05.000"))
		}
		g.Fencing = true
		c.ready.Fences = append(c.ready.Fences, Fence{Node: name, Reason: "lost peer: fence before the takeover"})
		return "fencing " + name
	}
	d := p.Data
	switch {
	case guardCoversMaintenance(d):
		// its guard's lease ended before its grace: nothing of it runs
		return ""
	case d.Monitor == dataset.NodeMaintenance:
		return name + "'s daemon was stopped (maintenance): it runs no split_action and its services may still run; only a fence ([stonith." + name + "]) proves they stopped"
	case d.Monitor == dataset.NodeRejoin:
		return name + " was in rejoin (its daemon had just started): it does not run the race until it heard every member; only a fence ([stonith." + name + "]) proves it stopped"
	case d.Frozen:
		return name + " was frozen: it does not run the race and keeps its services; only a fence ([stonith." + name + "]) proves it stopped"
	case d.SplitAction == "" || d.SplitAction == SplitDisabled:
		return name + "'s split_action is disabled (or unknown): only a fence ([stonith." + name + "]) proves it stopped"
	}
	agree := len(q.Live) + 1
	// a one-vote arbitrator that granted this side alone, answering a
	// report made after the peer was lost, counts for this side only
	ours := func(a string) bool {
		if planted.On(planted.PlainVoteOurs) && !c.oneVote(a) {
			return true
		}
		at, ok := c.exclusiveSince(a, g.Since)
		if ok && c.oneVote(a) && g.OneVoteAt.IsZero() {
			// the peer's lease had ended: its stop budget runs from here,
			// and the gate's deadline (shown in the status) moves with it
			g.OneVoteAt, g.OneVoteBy = at, a
			bound, _ := c.lostStopBound(d)
			if d := at.Add(bound); d.After(g.Deadline) {
				g.Deadline = d
			}
		}
		return ok && c.oneVote(a)
	}
	lost := quorum.CertainlyLostExcept(len(c.cfg.ClusterNodes), agree, c.cfg.Quorum.Arbitrators, ours)
	deadline, by := g.Deadline, ""
	if !g.OneVoteAt.IsZero() {
		by = g.OneVoteBy
	}
	if !lost {
		if c.hasOneVote() {
			return name + " may still hold the vote of a one-vote arbitrator: waiting for it to grant this side alone (the lease of " + name + "'s side must end first), or a fence ([stonith." + name + "])"
		}
		return name + " may have kept the quorum (its side can reach the arbitrators): only a fence ([stonith." + name + "]) proves it stopped"
	}
	if now.Before(deadline) && !planted.On(planted.NoStopDeadline) {
		c.wakeAt(deadline)
		bound, what := c.lostStopBound(d)
		switch {
		case by != "" && (bound > 0 || !g.OneVoteAt.Before(deadline)):
			return fmt.Sprintf("waiting for %s's self-stop: %s granted this side alone, so %s's arbitrator lease ended; %s runs until %s", name,
				by, name, what, deadline.UTC().Format("15:04:05.000"))
		case by != "":
			// the grant came before the anchored lease's bound
			return fmt.Sprintf("waiting for %s's self-stop: %s granted this side alone, so %s's arbitrator lease ended; its guard's anchored lease, act and margin run until %s (counted from %s + %s)", name,
				by, name, deadline.UTC().Format("15:04:05.000"), g.Since.UTC().Format("15:04:05.000"), deadline.Sub(g.Since))
		}
		if !g.Since.Equal(g.LostAt) {
			return fmt.Sprintf("waiting for %s's self-stop deadline at %s (lost at %s; counted from %s, when %s, + %s)", name,
				deadline.UTC().Format("15:04:05.000"), g.LostAt.UTC().Format("15:04:05.000"), g.Since.UTC().Format("15:04:05.000"), g.From, deadline.Sub(g.Since))
		}
		return fmt.Sprintf("waiting for %s's self-stop deadline at %s (lost at %s + %s)", name,
			deadline.UTC().Format("15:04:05.000"), g.Since.UTC().Format("15:04:05.000"), deadline.Sub(g.Since))
	}
	return ""
}

// fencing is Snapshot.Fencing: the lost peers whose services may not be
// taken over yet.
func (c *Core) fencing() map[string]string {
	if !c.quorumOn() || len(c.q.Gates) == 0 {
		return nil
	}
	out := map[string]string{}
	for name, g := range c.q.Gates {
		if g.Blocked != "" {
			out[name] = g.Blocked
		}
	}
	return out
}

// QuorumInfo is what svcmon and the JSON status show of the quorum: the
// votes now (the live members and the last answers of the arbitrators),
// the last vote, the takeover gates. nil when cluster.quorum is off.
func (c *Core) QuorumInfo(now time.Time) *dataset.QuorumInfo {
	if !c.quorumOn() {
		return nil
	}
	q := &c.q
	qi := &dataset.QuorumInfo{SplitAction: c.cfg.Quorum.SplitAction, Pending: !q.Pending.IsZero(), Lost: q.Split.Lost, SelfStop: c.SelfStop()}
	live := append([]string{c.cfg.Name}, c.livePeers(now)...)
	sort.Strings(live)
	qi.Live = live
	qi.Votes, qi.Total = len(live), len(c.cfg.ClusterNodes)
	for _, a := range c.cfg.Quorum.Arbitrators {
		r, heard := q.Arbs[a.Name]
		st := dataset.ArbitratorState{Name: a.Name, Weight: a.Weight, Answered: heard && r.Ok, Detail: r.Detail}
		if heard {
			st.ProbedAt = r.Sent
		}
		if a.OneVote {
			c.oneVoteState(&st, now)
		}
		qi.Total += max(a.Weight, 0)
		if st.Answered {
			qi.Votes += max(a.Weight, 0)
		}
		qi.Arbitrators = append(qi.Arbitrators, st)
	}
	if q.Last != nil {
		qi.LastVote, qi.LastVoteAt, qi.LastSurvive = q.Last.String(), q.LastAt, q.Last.Survive
	}
	for _, name := range slices.Sorted(maps.Keys(q.Gates)) {
		g := q.Gates[name]
		qi.Gates = append(qi.Gates, dataset.GateState{Node: name, Since: g.Since, Deadline: g.Deadline, Blocked: g.Blocked, Fenced: g.Fenced})
	}
	return qi
}
