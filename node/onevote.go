package node

import (
	"slices"
	"time"

	"haven/dataset"
	"haven/quorum"
)

// oneVoteBook is this node's standing with each one-vote arbitrator.
type oneVoteBook struct {
	// leases are by arbitrator; nextReport is when the next reports are
	// due.
	leases     map[string]*lease
	nextReport time.Time
}

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

// lease is this node's standing with one one-vote arbitrator.
type lease struct {
	until    time.Time // this node counts the vote until then
	lastSent time.Time // the send time of the newest report answered
	granted  bool      // the newest answer granted
	silent   bool      // the newest report got no answer
	reason   string    // what the newest answer said, or why none came
	winner   []string
	// exclusiveSent is the send time of the newest report granted
	// exclusively, exclusiveAt when that grant came back.
	exclusiveSent, exclusiveAt time.Time
}

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
	if !c.hasOneVote() || now.Before(q.ov.nextReport) {
		return
	}
	q.ov.nextReport = now.Add(quorum.LeaseReportEvery)
	c.wakeAt(q.ov.nextReport)
	part := append([]string{c.cfg.Name}, live...)
	slices.Sort(part)
	running := 0
	for _, inst := range c.ilist {
		if _, r := c.Status(inst.name); inst.local && r {
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
	if c.q.arbs == nil {
		c.updateQuorum(now)
	}
	if c.q.ov.leases == nil {
		c.q.ov.leases = map[string]*lease{}
	}
	l := c.q.ov.leases[name]
	if l == nil {
		l = &lease{}
		c.q.ov.leases[name] = l
	}
	if sent.Before(l.lastSent) {
		return // an answer older than one already taken
	}
	was := l.granted
	l.lastSent = sent
	if errText != "" {
		// no answer: what it said before of its winner is not news
		l.granted, l.reason, l.winner, l.silent = false, errText, nil, true
	} else {
		l.silent = false
		l.granted, l.reason, l.winner = g.Granted, g.Reason, g.Winner
		if g.Granted {
			if end := quorum.NodeLeaseEnd(sent, g.Lease); end.After(l.until) {
				l.until = end
				c.wakeAt(end)
			}
			if g.Exclusive {
				l.exclusiveSent, l.exclusiveAt = sent, now
			}
		}
	}
	if was != l.granted || l.reason == "" {
		c.emit(ArbitratorStatus{Name: name, OK: l.granted, Detail: l.reason, Refused: errText == "" && !g.Granted})
		c.pv.viewChanged = true
	}
	c.voteAgainIfRegained(c.livePeers(now), now)
	c.decideVote(now)
	c.updateGates(now)
}

// leaseRuns reports whether this node counts one-vote arbitrator name's
// vote at now.
func (c *Core) leaseRuns(name string, now time.Time) bool {
	l := c.q.ov.leases[name]
	return l != nil && now.Before(l.until)
}

// exclusiveSince returns when one-vote arbitrator name's newest exclusive
// grant came back, if it answered a report sent at since or later.
func (c *Core) exclusiveSince(name string, since time.Time) (time.Time, bool) {
	l := c.q.ov.leases[name]
	if l == nil || l.exclusiveSent.IsZero() || l.exclusiveSent.Before(since) {
		return time.Time{}, false
	}
	return l.exclusiveAt, true
}

// leaseLapsed reports whether the last vote, which this node survived,
// counted a one-vote arbitrator whose lease has ended since: the vote is
// taken again.
func (c *Core) leaseLapsed(now time.Time) bool {
	q := &c.q
	if q.last == nil || !q.last.Survive || q.split.lost || !q.pending.IsZero() {
		return false
	}
	for _, name := range q.last.Answered {
		if c.oneVote(name) && !c.leaseRuns(name, now) {
			return true
		}
	}
	return false
}

// oneVoteState fills the status of one-vote arbitrator a.
func (c *Core) oneVoteState(st *dataset.ArbitratorState, now time.Time) {
	st.OneVote = true
	l := c.q.ov.leases[st.Name]
	if l == nil {
		st.Detail = "no answer yet"
		return
	}
	st.Answered = now.Before(l.until)
	st.Detail, st.ProbedAt, st.Winner, st.Silent = l.reason, l.lastSent, l.winner, l.silent
	if st.Answered {
		st.LeaseUntil = l.until
	}
	st.Exclusive = l.granted && l.exclusiveSent.Equal(l.lastSent)
}
