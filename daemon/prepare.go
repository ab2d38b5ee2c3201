package daemon

import (
	"haven/dataset"
	"haven/node"
	"haven/resource"
)

// prepareOnMonitor runs the pre-start work of an instance during its ready
// window (resource.Preparer: the ip resources probe their address), so
// that the start that follows the window (ready_period, or the peers' acks
// of node.ready_fast_ack) does not begin it only then. The work begins
// when the local instance enters ready, goes on through wait fence and the
// start (which takes its answer), and ends with any other state: the
// window was cancelled, or the start ended.
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
