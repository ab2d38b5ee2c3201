package monitor

import (
	"slices"
	"strings"

	"haven/dataset"
	"haven/placement"
)

// The fast ack of a flex service's claims (node.ready_fast_ack,
// docs/design-notes.md "Fast ack for flex services"). A node acks every
// claim it would not contest: it is idle, start failed or claiming itself
// (running an instance or not; never in an action), no target, no lost
// node of the service holding its takeover gate, and in its view the
// claims all fit in flex_target with the instances running (its own
// included) and each claimer is among the best candidates without an
// instance. A claimer starts once every live node of the service acked
// its claim and its own count still fits (flexContested), before its
// window ends.
//
// Why it never takes the instances beyond flex_target: take instances S
// up at once and j the one of them that claimed last, at tj. If j started
// at its window's end, the window's argument holds (behaviour.md 10.4).
// If j started on acks, every other live member i of S acked j's claim,
// so after tj (a claim's id is its window's start); i claimed at ti <= tj
// and from then on was claiming, starting or running (a claim that
// starts never goes back to idle between), and the ack is in i's
// instance data with that state. So j held, when it started, data of
// every i newer than i's claim, showing i ready, starting or running: j
// counted each of them, and started only if S fits in flex_target. The
// argument never needs the acker to be idle: unlike a failover claim
// (whose proof is that two fast starters would each have acked the
// other's claim while idle), two flex claims that fit together ack each
// other, so that several slots fill at once. A lost node is the takeover
// gate's, as for the window.

// flexReadyAck sets Decision.ReadyAck for a flex service: the claims of
// peers this node does not contest, comma-separated in the order of the
// service's nodes, "" when none.
func (c *svcCtx) flexReadyAck() {
	switch c.d.Monitor.State {
	case dataset.Idle, dataset.StartFailed, dataset.Ready:
	default:
		return
	}
	if c.d.Action != ActionNone || c.hasTarget() || !c.flexOrchestrated().none() {
		return
	}
	if n, _ := c.fenceGate(); n != "" {
		return
	}
	fc := c.flexCount()
	if len(fc.claims) == 0 {
		return
	}
	taken, leaving := fc.taken, fc.leaving
	if flexRunning(placement.InstanceState{Avail: c.inst.Avail, State: c.d.Monitor.State}) {
		if c.inst.Leaving() {
			leaving++
		} else {
			taken++
		}
	}
	free := c.cfg.FlexTarget - taken
	if len(fc.claims) > free || taken+leaving+len(fc.claims) > c.cfg.FlexMax {
		return // more claims than free slots: they sort it out by their windows
	}
	best := fc.free[:min(max(free, 0), len(fc.free))]
	var ids []string
	for _, n := range fc.claims {
		if !slices.Contains(best, n) {
			return // a claim this node would have made in its place
		}
		v := c.cluster.View(n)
		if v == nil {
			return
		}
		ids = append(ids, dataset.ClaimID(n, v.Data.Services[c.name].Monitor.StateSince))
	}
	c.d.ReadyAck = strings.Join(ids, ",")
}
