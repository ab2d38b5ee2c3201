package daemon

import (
	"go.uber.org/zap"

	"haven/dataset"
	"haven/heartbeat"
	"haven/monitor"
	"haven/node"
	"haven/resource"
)

// prepareOnMonitor runs the pre-start work of an instance during its ready
// window (resource.Preparer: the ip resources probe their address), so
// that the start that follows the window (ready_period, or the peers' acks
// of node.ready_fast_ack) does not begin it only then. The work begins
// when the local instance enters ready, goes on through wait fence and the
// start (which takes its answer), and ends with any other state: the
// window was cancelled, or the start ended. Work begun at the silence of
// the node that ran the service (prepareOnSilence) is taken by the window
// when it is still good (resource.Preparer.Prepare), else begins anew.
func (d *Daemon) prepareOnMonitor(e node.InstanceMonitor) {
	switch e.To {
	case dataset.Ready:
		inst := d.services[e.Svc]
		if inst == nil {
			return
		}
		set := inst.drivers()
		if old := d.prepared[e.Svc]; old != nil && old != set {
			old.Unprepare()
		}
		if set == nil {
			delete(d.prepared, e.Svc)
			return
		}
		if d.prepared == nil {
			d.prepared = map[string]*resource.Set{}
		}
		d.prepared[e.Svc] = set
		set.Prepare(d.actx)
	case dataset.WaitFence, dataset.Starting:
	default:
		if set := d.prepared[e.Svc]; set != nil {
			delete(d.prepared, e.Svc)
			set.Unprepare()
		}
	}
}

// prepareOnSilence begins the pre-start work of the services a silent
// peer runs, before hb.timeout declares it down: with
// node.ready_fast_ack the ready window that follows the down lasts a few
// milliseconds, shorter than the duplicate-address probe of a VIP
// (probe_timeout), which would otherwise delay the start by that much.
//
// On Silent(peer): every local service with pre-start work that is up on
// the peer (in the node core's view of its data) and whose placement
// leader would be this node if the peer were down (monitor.LeaderWithout:
// a forecast, the start still waits for the down and the window) begins
// its early work (resource.Set.PrepareEarly, within hb.timeout). On
// Heard(peer), the peer heard again before its down: that work ends,
// unless a ready window took it. On Down(peer): the ready windows take
// it from here; what none takes ends by itself (hb.timeout +
// probe_timeout after it began). The rules that make the early probe safe
// are resource.addrWatch's: an "in use" answer is never reused, a "free"
// one only within that age, and the start refuses on a holder of the
// window.
func (d *Daemon) prepareOnSilence(ev heartbeat.Event) {
	switch ev.Kind {
	case heartbeat.Silent:
		d.prepareEarly(ev.Node)
	case heartbeat.Heard:
		for _, set := range d.early[ev.Node] {
			set.UnprepareEarly()
		}
		delete(d.early, ev.Node)
	case heartbeat.Down:
		delete(d.early, ev.Node)
	}
}

func (d *Daemon) prepareEarly(peer string) {
	pv, ok := d.core.Peer(peer)
	if !ok || pv.Data == nil || pv.Stale {
		return
	}
	var snap *monitor.Snapshot
	for svc, inst := range pv.Data.Services {
		if monitor.EffectiveAvail(inst) != dataset.StatusUp {
			continue
		}
		local := d.services[svc]
		if local == nil || !local.local {
			continue
		}
		if avail, _ := d.core.Status(svc); avail == dataset.StatusUp {
			continue // it runs here too: nothing to start
		}
		set := local.drivers()
		if set == nil || !set.HasPreparer() {
			continue
		}
		if snap == nil {
			s := d.snapshot()
			snap = &s
		}
		if monitor.LeaderWithout(*snap, svc, peer) != d.node.Name {
			continue
		}
		d.log.Debug("peer silent: probing the service's addresses before its failover",
			zap.String("peer", peer), zap.String("service", svc))
		set.PrepareEarly(d.actx, d.node.HB.Timeout)
		if d.early == nil {
			d.early = map[string][]*resource.Set{}
		}
		d.early[peer] = append(d.early[peer], set)
	}
}
