package daemon

import (
	"go.uber.org/zap"

	"haven/dataset"
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
		t := ts[name]
		d.witness(t.Version)
		ds, ok := d.dur.Services[name]
		if !ok || !t.Version.Newer(ds.Target.Version) {
			continue
		}
		d.log.Info("target adopted", zap.String("svc", name), zap.String("target", t.String()),
			zap.String("id", t.ID), zap.String("origin", t.Version.Origin))
		ds.Target = t
		d.dur.Services[name] = ds
		changed = true
	}
	if changed {
		d.saveState()
		d.changed()
	}
}
