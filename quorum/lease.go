package quorum

import (
	"slices"
	"strings"
	"time"
)

// The one-vote arbitrator's lease. A plain arbitrator answers
// whoever asks, so when only the link between the two nodes of a 2-node
// cluster is cut, both sides count its vote and neither may take over
// without a fence. A one-vote arbitrator gives its vote to one partition
// at a time, as a lease:
//
//   - each node reports, every report period, the members it hears (its
//     partition, itself included) and how many services it runs;
//   - the arbitrator keeps one winning partition per cluster and grants
//     (renews) a lease of Lease only to a node of that partition that
//     reports it; a node of another partition is refused;
//   - the winner changes only when no node reports it any more (each of
//     its members reported another partition, or fell silent for Fresh):
//     the best partition among the fresh reports then wins: the larger,
//     then the one running more services (keep the active side, no
//     needless failover), then the one holding the lowest node name;
//     a partition that grows from the winner (a node came back, and a
//     member of the winner reports the larger one) takes its place;
//   - a grant is exclusive when no node outside the requester's partition
//     holds a lease that has not ended: a survivor may take over a lost
//     peer only with an exclusive grant (the takeover gate), since the
//     peer's lease has then ended at the arbitrator, so earlier at the
//     peer (below), which ran its split_action at that end;
//   - a restarted arbitrator remembers no lease: it grants nothing until
//     the longest lease it may have given before has ended (Lease + the
//     margin after its start).
//
// Time: the book runs on the arbitrator's monotonic clock, and a node
// counts its lease on its own, from the moment it SENT the report that
// the grant answers (which precedes the arbitrator's receipt), shortened
// by the clock-rate bound and a margin (NodeLeaseEnd). So a node's lease
// always ends before the arbitrator's record of it ends: by the time the
// arbitrator gives the vote to the other side (or calls a grant exclusive),
// the old holder has counted it lost.

// The timing of a one-vote arbitrator and of its nodes: a node reports
// every LeaseReportEvery; a grant lasts DefaultLease from the arbitrator's
// receipt; a node's last report stands for its partition for
// DefaultFresh (two report periods and a half).
const (
	LeaseReportEvery = time.Second
	DefaultLease     = 8 * time.Second
	DefaultFresh     = 2*LeaseReportEvery + LeaseReportEvery/2
)

// LeaseConfig holds the timing of a one-vote arbitrator.
type LeaseConfig struct {
	// Lease is how long a grant lasts, from the arbitrator's receipt.
	Lease time.Duration
	// Fresh is how long a node's last report stands for its partition
	// (about two report periods): a silent node stops counting after it.
	Fresh time.Duration
}

// Report is what a node tells the arbitrator, each report period.
type Report struct {
	Node string
	// Partition are the members the node hears and that hear it, itself
	// included (the order does not matter).
	Partition []string
	// Running is the number of failover services the node runs: on a tie
	// of sizes, the side that runs more keeps the vote.
	Running int
}

// GrantAnswer is the arbitrator's answer to a report.
type GrantAnswer struct {
	// Granted: the node holds the vote for Lease from its report's send
	// time (NodeLeaseEnd).
	Granted bool `json:"granted"`
	// Exclusive: no node outside the requester's partition holds a lease
	// that has not ended (the takeover gate may open).
	Exclusive bool          `json:"exclusive,omitempty"`
	Lease     time.Duration `json:"lease"`
	// Winner is the partition that holds the vote ("" names none yet).
	Winner []string `json:"winner,omitempty"`
	// Reason says why it was refused or what the grant is.
	Reason string `json:"reason"`
}

// LeaseBook is the arbitrator's state for one cluster. Pure: every call
// takes now (the arbitrator's monotonic clock).
type LeaseBook struct {
	cfg        LeaseConfig
	blockUntil time.Time
	winner     []string // sorted; nil: none
	grants     map[string]time.Time
	reports    map[string]lastReport
}

type lastReport struct {
	at        time.Time
	partition []string // sorted
	running   int
}

// NewLeaseBook is the book of an arbitrator started at now: it grants
// nothing until a lease it may have given before its start has ended.
func NewLeaseBook(cfg LeaseConfig, now time.Time) *LeaseBook {
	return &LeaseBook{cfg: cfg, blockUntil: now.Add(cfg.Lease + LeaseMargin), grants: map[string]time.Time{}, reports: map[string]lastReport{}}
}

// LeaseMargin is subtracted from a node's lease (NodeLeaseEnd) and added
// to the arbitrator's wait after a restart: scheduling and the time a
// report takes to travel are far below it.
const LeaseMargin = 500 * time.Millisecond

// ClockRateBound bounds how much faster one host's monotonic clock may run
// than another's (1 ms a second; crystal oscillators drift 100 times less).
const ClockRateBound = 1e-3

// NodeLeaseEnd is when a node stops counting the arbitrator's vote: sent
// is the node's own clock when it sent the report that was granted.
func NodeLeaseEnd(sent time.Time, lease time.Duration) time.Time {
	return sent.Add(lease - time.Duration(2*ClockRateBound*float64(lease)) - LeaseMargin)
}

// Report records r at now and answers it.
func (b *LeaseBook) Report(now time.Time, r Report) GrantAnswer {
	part := normPartition(r.Node, r.Partition)
	b.reports[r.Node] = lastReport{at: now, partition: part, running: r.Running}
	for n, end := range b.grants {
		if !now.Before(end) {
			delete(b.grants, n)
		}
	}
	ans := GrantAnswer{Lease: b.cfg.Lease}
	if now.Before(b.blockUntil) {
		ans.Reason = "the arbitrator started " + b.cfg.Lease.String() + " ago at most: it gives no vote until any lease it may have given before has ended"
		return ans
	}
	b.elect(now, r.Node, part)
	ans.Winner = slices.Clone(b.winner)
	if !slices.Equal(part, b.winner) {
		ans.Reason = "another partition holds the vote: " + strings.Join(b.winner, ",")
		return ans
	}
	b.grants[r.Node] = now.Add(b.cfg.Lease)
	ans.Granted = true
	ans.Exclusive = true
	for n := range b.grants {
		if !slices.Contains(part, n) {
			ans.Exclusive = false
		}
	}
	if ans.Exclusive {
		ans.Reason = "granted, exclusive"
	} else {
		ans.Reason = "granted; a node outside the partition still holds a lease"
	}
	return ans
}

// elect keeps or changes the winning partition after node reported part.
func (b *LeaseBook) elect(now time.Time, node string, part []string) {
	if b.winner != nil && slices.Contains(b.winner, node) && len(part) > len(b.winner) && subset(b.winner, part) {
		b.winner = part // the winner grew: a member of it hears more
		return
	}
	fresh := map[string]*candidate{}
	for _, r := range b.reports {
		if now.Sub(r.at) > b.cfg.Fresh {
			continue
		}
		k := strings.Join(r.partition, ",")
		c := fresh[k]
		if c == nil {
			c = &candidate{members: r.partition}
			fresh[k] = c
		}
		c.running += r.running
	}
	if b.winner != nil && fresh[strings.Join(b.winner, ",")] != nil {
		return // still reported by a member: the active partition keeps it
	}
	var best *candidate
	for _, c := range fresh {
		if best == nil || c.better(best) {
			best = c
		}
	}
	if best != nil {
		b.winner = best.members
	}
}

type candidate struct {
	members []string
	running int
}

// better: the larger partition, then the one running more services, then
// the one holding the lowest node name (the sorted member lists compared
// name by name: two views that share their lowest member still differ).
func (c *candidate) better(o *candidate) bool {
	if len(c.members) != len(o.members) {
		return len(c.members) > len(o.members)
	}
	if c.running != o.running {
		return c.running > o.running
	}
	return slices.Compare(c.members, o.members) < 0 // the lowest node name first
}

// Holders are the nodes whose lease has not ended at now, with the end of
// each (for the arbitrator's status).
func (b *LeaseBook) Holders(now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for n, end := range b.grants {
		if now.Before(end) {
			out[n] = end
		}
	}
	return out
}

// Winner is the partition that holds the vote (nil: none yet).
func (b *LeaseBook) Winner() []string { return slices.Clone(b.winner) }

func normPartition(node string, p []string) []string {
	out := slices.Clone(p)
	if !slices.Contains(out, node) {
		out = append(out, node)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
