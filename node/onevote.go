package node

import (
	"slices"
	"time"

	"haven/dataset"
	"haven/node/quorumsm"
	"haven/quorum"
)

// One-vote arbitrators (haven://, quorum/lease.go): this node reports its
// partition to each every quorum.LeaseReportEvery, and counts its vote
// while the lease of its last grant runs (quorum.NodeLeaseEnd: from the
// report's send time, shortened by the clock-rate bound and a margin). A
// vote that counted a lease is taken again when the lease ends unrenewed:
// a node cut off from the arbitrator loses its vote then, before the
// arbitrator may give it to the other side. A survivor takes over a lost
// peer only with an exclusive grant answering a report sent after the
// peer was lost (the peer's lease had ended at the arbitrator, so earlier
// at the peer), plus the peer's stop budget.

// oneVote reports whether arbitrator name is a one-vote arbitrator.
func (c *Core) oneVote(name string) bool {
	for _, a := range c.cfg.Quorum.Arbitrators {
		if a.Name == name {
			return a.OneVote
		}
	}
	return false
}

func (c *Core) hasOneVote() bool {
	for _, a := range c.cfg.Quorum.Arbitrators {
		if a.OneVote {
			return true
		}
	}
	return false
}

// reportLeases orders the reports to the one-vote arbitrators that are
// due: this node's partition (itself and its live peers) and how many
// failover services it runs.
func (c *Core) reportLeases(live []string, now time.Time) {
	q := &c.q
	if !c.hasOneVote() || now.Before(q.OneVote.NextReport) {
		return
	}
	q.OneVote.NextReport = now.Add(quorum.LeaseReportEvery)
	c.wakeAt(q.OneVote.NextReport)
	part := append([]string{c.cfg.Name}, live...)
	slices.Sort(part)
	running := 0
	for _, inst := range c.ilist {
		if _, r := c.Status(inst.Name); inst.Local && r {
			running++
		}
	}
	for _, a := range c.cfg.Quorum.Arbitrators {
		if a.OneVote {
			c.ready.Probes = append(c.ready.Probes, Probe{Name: a.Name, Sent: now, Partition: part, Running: running})
		}
	}
}

// oneVoteResult is the answer of one-vote arbitrator name to the report
// sent at sent (Probe.Sent): its grant, or errText when none came.
func (c *Core) oneVoteResult(name string, g quorum.GrantAnswer, errText string, sent, now time.Time) {
	if !c.quorumOn() || !c.oneVote(name) {
		return
	}
	if c.q.Arbs == nil {
		c.updateQuorum(now)
	}
	if c.q.OneVote.Leases == nil {
		c.q.OneVote.Leases = map[string]*quorumsm.Lease{}
	}
	l := c.q.OneVote.Leases[name]
	if l == nil {
		l = &quorumsm.Lease{}
		c.q.OneVote.Leases[name] = l
	}
	if sent.Before(l.LastSent) {
		return // an answer older than one already taken
	}
	was := l.Granted
	l.LastSent = sent
	if errText != "" {
		// no answer: what it said before of its winner is not news
		l.Granted, l.Reason, l.Winner, l.Silent = false, errText, nil, true
	} else {
		l.Silent = false
		l.Granted, l.Reason, l.Winner = g.Granted, g.Reason, g.Winner
		if g.Granted {
			if end := quorum.NodeLeaseEnd(sent, g.Lease); end.After(l.Until) {
				l.Until = end
				c.wakeAt(end)
			}
			if g.Exclusive {
				l.ExclusiveSent, l.ExclusiveAt = sent, now
			}
		}
	}
	if was != l.Granted || l.Reason == "" {
		c.emit(ArbitratorStatus{Name: name, OK: l.Granted, Detail: l.Reason, Refused: errText == "" && !g.Granted})
		c.pv.ViewChanged = true
	}
	c.voteAgainIfRegained(c.livePeers(now), now)
	c.decideVote(now)
	c.updateGates(now)
}

// leaseRuns reports whether this node counts one-vote arbitrator name's
// vote at now.
func (c *Core) leaseRuns(name string, now time.Time) bool {
	l := c.q.OneVote.Leases[name]
	return l != nil && now.Before(l.Until)
}

// exclusiveSince returns when one-vote arbitrator name's newest exclusive
// grant came back, if it answered a report sent at since or later.
func (c *Core) exclusiveSince(name string, since time.Time) (time.Time, bool) {
	l := c.q.OneVote.Leases[name]
	if l == nil || l.ExclusiveSent.IsZero() || l.ExclusiveSent.Before(since) {
		return time.Time{}, false
	}
	return l.ExclusiveAt, true
}

// leaseLapsed reports whether the last vote, which this node survived,
// counted a one-vote arbitrator whose lease has ended since: the vote is
// taken again.
func (c *Core) leaseLapsed(now time.Time) bool {
	q := &c.q
	if q.Last == nil || !q.Last.Survive || q.Split.Lost || !q.Pending.IsZero() {
		return false
	}
	for _, name := range q.Last.Answered {
		if c.oneVote(name) && !c.leaseRuns(name, now) {
			return true
		}
	}
	return false
}

// oneVoteState fills the status of one-vote arbitrator a.
func (c *Core) oneVoteState(st *dataset.ArbitratorState, now time.Time) {
	st.OneVote = true
	l := c.q.OneVote.Leases[st.Name]
	if l == nil {
		st.Detail = "no answer yet"
		return
	}
	st.Answered = now.Before(l.Until)
	st.Detail, st.ProbedAt, st.Winner, st.Silent = l.Reason, l.LastSent, l.Winner, l.Silent
	if st.Answered {
		st.LeaseUntil = l.Until
	}
	st.Exclusive = l.Granted && l.ExclusiveSent.Equal(l.LastSent)
}
