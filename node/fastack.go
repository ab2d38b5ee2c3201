package node

import (
	"time"

	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/quorum"
)

// The node core's part of the fast-ack ready window (node.ready_fast_ack;
// monitor/fastack.go has the rules): when it may act, the acks it
// publishes, and claims that never share an id.

// fastAck is Snapshot.FastAck: node.ready_fast_ack is on and, with
// cluster.quorum on, this node's side holds the quorum now (no vote lost
// or pending; the live members alone make a majority, or the last vote,
// with the arbitrators, survived). Without it the node neither acks nor
// starts early: the whole window again.
func (c *Core) fastAck(now time.Time) bool {
	return c.cfg.ReadyFastAck && c.holdsQuorum(now)
}

// holdsQuorum reports whether this node's side holds the quorum now:
// always with cluster.quorum off; with it on, no vote lost or pending,
// and the live members alone make a majority, or the last vote, with the
// arbitrators, survived.
func (c *Core) holdsQuorum(now time.Time) bool {
	if !c.quorumOn() {
		return true
	}
	q := &c.q
	if q.Split.Lost || !q.Pending.IsZero() {
		return false
	}
	live := 1 + len(c.livePeers(now))
	if decided, survive := quorum.Decided(len(c.cfg.ClusterNodes), live, c.cfg.Quorum.Arbitrators); decided {
		return survive
	}
	return q.Last != nil && q.Last.Survive
}

// noteReadyAck stores the claim the decision acks, and publishes it when
// it changes (nothing claimed: nothing published).
func (c *Core) noteReadyAck(inst *instsm.Instance, ack string) {
	if inst.Fa.Ack == ack {
		return
	}
	inst.Fa.Ack = ack
	c.publish()
}

// newClaim keeps the id of every claim of the instance new: a ready window
// that begins at the same instant as the previous one (two decision passes
// at one time of a coarse or fake clock) begins a nanosecond later, so that
// an ack of the previous window never counts for it.
func (c *Core) newClaim(inst *instsm.Instance, dec *monitor.Decision) {
	if dec.Monitor.State != dataset.Ready || inst.Mon.State == dataset.Ready {
		return
	}
	if !dec.Monitor.StateSince.After(inst.Fa.LastClaim) {
		shift := inst.Fa.LastClaim.Add(time.Nanosecond).Sub(dec.Monitor.StateSince)
		dec.Monitor.StateSince = dec.Monitor.StateSince.Add(shift)
		if !dec.Deadline.IsZero() {
			dec.Deadline = dec.Deadline.Add(shift)
		}
	}
	inst.Fa.LastClaim = dec.Monitor.StateSince
}
