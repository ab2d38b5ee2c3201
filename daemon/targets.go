package daemon

import (
	"go.uber.org/zap"

	"haven/dataset"
	"haven/monitor"
)

// targets lists the admin targets this node knows, for the heartbeats.
func (d *Daemon) targets() map[string]dataset.Target {
	out := map[string]dataset.Target{}
	for name, ds := range d.dur.Services {
		if !ds.Target.Version.IsZero() {
			out[name] = ds.Target
		}
	}
	return out
}

// mergeTargets adopts the peers' targets that are newer than ours: the
// logical version decides, never a wall clock.
func (d *Daemon) mergeTargets(ts map[string]dataset.Target) {
	changed := false
	for _, name := range sortedKeys(ts) {
		if !d.peerServiceName("", "targets", name) || !d.peerNodeName("", "targets", name, ts[name].Node) {
			continue
		}
		t := ts[name]
		d.witness(t.Version)
		ds, ok := d.dur.Services[name]
		if !ok || !t.Version.Newer(ds.Target.Version) {
			continue
		}
		d.log.Info("target adopted", zap.String("svc", name), zap.String("target", t.String()),
			zap.String("id", t.ID), zap.String("origin", t.Version.Origin))
		if old := ds.Target; old.ID != "" && old.Expect != dataset.ExpectNone {
			if t.ID == old.ID && t.Expect == dataset.ExpectNone {
				// a peer saw it reached and cleared it: say what this
				// node knows (reached on the known nodes only?)
				snap := d.snapshot()
				d.answerWaiters(name, old.ID, d.reachedVerdict(snap, name, monitor.Unknown(snap, name)))
			} else if t.ID == old.ID && t.Expect == dataset.ExpectAborted {
				d.answerWaiters(name, old.ID, failed("%s: target %s (id %s) aborted", name, old.String(), old.ID))
			} else if t.ID != old.ID {
				d.answerWaiters(name, old.ID, failed("%s: target %s (id %s) replaced by %s (id %s)", name, old.String(), old.ID, t.String(), t.ID))
			}
		}
		ds.Target = t
		d.dur.Services[name] = ds
		changed = true
	}
	if changed {
		d.saveState()
		d.changed()
	}
}

// clears lists the clear requests this node relays.
func (d *Daemon) clears() map[string]dataset.ClearRequest {
	out := map[string]dataset.ClearRequest{}
	for name, ds := range d.dur.Services {
		if !ds.Clear.Version.IsZero() {
			out[name] = ds.Clear
		}
	}
	return out
}

// requestClear records a cluster-wide clear of a service's failed states
// (on node, or everywhere when node is "") and applies it here.
func (d *Daemon) requestClear(inst *instance, node string) {
	d.applyClear(inst.name, dataset.ClearRequest{Node: node, Version: d.nextVersion()})
}

// mergeClears applies the peers' clear requests that are newer than ours.
func (d *Daemon) mergeClears(cs map[string]dataset.ClearRequest) {
	for _, name := range sortedKeys(cs) {
		if !d.peerServiceName("", "clears", name) || !d.peerNodeName("", "clears", name, cs[name].Node) {
			continue
		}
		d.witness(cs[name].Version)
		d.applyClear(name, cs[name])
	}
}

func (d *Daemon) applyClear(name string, c dataset.ClearRequest) {
	ds, ok := d.dur.Services[name]
	if !ok || !c.Version.Newer(ds.Clear.Version) {
		return
	}
	ds.Clear = c
	d.dur.Services[name] = ds
	d.saveState()
	d.changed()
	if inst := d.services[name]; inst != nil && inst.local && (c.Node == "" || c.Node == d.node.Name) {
		d.clearLocal(inst, "admin clear (from "+c.Version.Origin+")")
	}
}
