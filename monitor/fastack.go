package monitor

import (
	"strings"

	"haven/dataset"
	"haven/placement"
)

// The fast-ack ready window (node.ready_fast_ack, Snapshot.FastAck;
// docs/operations.md "Fast ack"). The ready window exists so that every
// live node of a service sees a claim before anyone starts. With fast ack,
// each node publishes, in its instance of the service, the claim it saw
// and does not contest (Decision.ReadyAck: dataset.ClaimID of the claimer
// and the start of its window), and the claimer starts as soon as every
// live node of the service publishes its claim, before the window ends.
//
// For a flex service the rule and its proof are flexack.go's; what
// follows is a failover service's.
//
// A node acks only when it would not contest: it is idle (or start
// failed, out of the race), with no target, no action; the claimer is the
// only node of the service in a state other than idle or start failed;
// the service is up, warn or unknown nowhere; no lost node of the service
// holds its takeover gate (quorum on: "wait fence"); and its own view of the
// placement agrees that the claimer is the one to start it. So a claimer
// never acks (ready, starting), a better candidate never acks (it claims
// itself), and a node that joins or comes back has not acked the claim
// (the claim id is the window's start: an ack of an older window does not
// count). Two fast starts would need each claimer to have acked the
// other's claim while idle, after it was made, and before making its own:
// a cycle in time. A node whose view changes after it acked and that
// claims in turn cannot start fast (the first claimer, ready or starting,
// never acks it): it waits the whole window, as without fast ack.

// fastAckReason is the reason of a start on acks.
const fastAckReason = "every live node of the service acked the claim: start before the ready period ends (fast ack)"

// allAcked reports whether every other node of the service whose data is
// alive acks the local claim (the ready window now in progress). A node
// up whose data was not heard yet, or heard before it was lost, has not.
func (c *svcCtx) allAcked() bool {
	id := dataset.ClaimID(c.s.Local, c.d.Monitor.StateSince)
	for i, n := range c.nodes {
		if n == c.s.Local || !c.alive[i] {
			continue
		}
		v := c.cluster.View(n)
		if v == nil || !acks(v.Data.Services[c.name].ReadyAck, id) {
			return false
		}
	}
	return true
}

// readyAck sets Decision.ReadyAck: the claim of a peer this node does not
// contest, "" when none. It runs after auto decided the local state.
func (c *svcCtx) readyAck() {
	switch c.d.Monitor.State {
	case dataset.Idle, dataset.StartFailed:
	default:
		return
	}
	if c.cfg.Orchestrate != OrchestrateHA && c.cfg.Orchestrate != OrchestrateStart {
		return
	}
	if c.d.Action != ActionNone || c.hasTarget() || !c.s.Compat || c.s.ConfDiffers != "" || c.cfg.Placement == placement.PolicyNone ||
		c.firstUpish() != "" || c.transNode != "" {
		return
	}
	if n, _ := c.fenceGate(); n != "" {
		return // quorum on: a lost node may still run it, as far as this node knows
	}
	claimer := ""
	for i, n := range c.nodes {
		if n == c.s.Local || !c.alive[i] {
			continue
		}
		switch c.insts[i].State {
		case dataset.Idle, dataset.StartFailed, "":
			continue
		case dataset.Ready:
			if claimer == "" {
				claimer = n
				continue
			}
		}
		return // two claims, or a node waiting (parents, fence...): ack none
	}
	if claimer == "" || c.leader() != claimer {
		return
	}
	v := c.cluster.View(claimer)
	if v == nil {
		return
	}
	c.d.ReadyAck = dataset.ClaimID(claimer, v.Data.Services[c.name].Monitor.StateSince)
}

// acks reports whether a published ReadyAck acks claim id: it is the id,
// or, for a flex service, one of the ids it lists (comma-separated: a flex
// service may have several claims at once, one per free slot).
func acks(readyAck, id string) bool {
	for readyAck != "" {
		var one string
		one, readyAck, _ = strings.Cut(readyAck, ",")
		if one == id {
			return true
		}
	}
	return false
}
