package daemon

import (
	"os"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/dataset"
)

// nextVersion returns a new logical version for an edit made on this node.
func (d *Daemon) nextVersion() dataset.Version {
	d.dur.Lamport++
	return dataset.Version{Counter: d.dur.Lamport, Origin: d.node.Name}
}

// witness advances the Lamport clock past a version seen from a peer.
func (d *Daemon) witness(v dataset.Version) {
	if v.Counter > d.dur.Lamport {
		d.dur.Lamport = v.Counter
	}
}

// knownConfigVersion is the version of the config of name this node holds
// (a tombstone counts).
func (d *Daemon) knownConfigVersion(name string) dataset.Version {
	if v, ok := d.dur.Tombstones[name]; ok {
		return v
	}
	return d.dur.Services[name].ConfigVersion
}

// configEntries lists the configs and tombstones this node relays.
func (d *Daemon) configEntries() map[string]dataset.ConfigEntry {
	out := make(map[string]dataset.ConfigEntry, len(d.services)+len(d.dur.Tombstones))
	for name, inst := range d.services {
		out[name] = dataset.ConfigEntry{Version: d.dur.Services[name].ConfigVersion, Raw: string(inst.cfg.Raw)}
	}
	for name, v := range d.dur.Tombstones {
		out[name] = dataset.ConfigEntry{Version: v, Deleted: true}
	}
	return out
}

// mergeConfigs installs the configs of a peer that are newer than ours.
// Every node applies the same rule (the newest version wins, origin name
// breaking ties), so concurrent edits resolve the same way everywhere.
func (d *Daemon) mergeConfigs(from string, entries map[string]dataset.ConfigEntry) {
	for _, name := range sortedKeys(entries) {
		e := entries[name]
		d.witness(e.Version)
		if !e.Version.Newer(d.knownConfigVersion(name)) {
			continue
		}
		if d.refused[name] == e.Version {
			continue
		}
		if e.Deleted {
			d.log.Info("service deleted by a peer", zap.String("svc", name), zap.String("from", from))
			d.removeService(name, e.Version, nil)
			continue
		}
		if err := config.ValidServiceName(name); err != nil {
			d.refused[name] = e.Version
			d.log.Error("config from peer refused", zap.String("svc", name), zap.String("from", from), zap.Error(err))
			continue
		}
		cfg, err := config.ParseService(d.p.ServiceConf(name), name, []byte(e.Raw))
		if err != nil {
			// keep the last good config; log once per version
			d.refused[name] = e.Version
			d.log.Error("config from peer refused, last good config kept", zap.String("svc", name), zap.String("from", from), zap.Error(err))
			continue
		}
		if err := d.install(cfg, e.Version, "received from "+from); err != nil {
			d.log.Error("install config from peer", zap.String("svc", name), zap.Error(err))
		}
	}
	d.saveState()
}

// removeService stops the local instance if it runs, then removes the
// config and leaves a tombstone at version v. done (may be nil) gets the
// result. The private dir {var} is kept.
func (d *Daemon) removeService(name string, v dataset.Version, done func(error)) {
	finish := func(err error) {
		if done != nil {
			done(err)
		}
	}
	remove := func() {
		if err := os.Remove(d.p.ServiceConf(name)); err != nil && !os.IsNotExist(err) {
			finish(failed("remove config: %v", err))
			return
		}
		delete(d.services, name)
		delete(d.dur.Services, name)
		if d.dur.Tombstones == nil {
			d.dur.Tombstones = map[string]dataset.Version{}
		}
		d.dur.Tombstones[name] = v
		d.saveState()
		d.changed()
		d.log.Info("service deleted", zap.String("svc", name))
		d.emit(api.Event{Kind: "config", Service: name, Message: "deleted"})
		finish(nil)
	}
	inst := d.services[name]
	if inst != nil && done == nil && inst.mon.State == dataset.StopFailed && inst.running() {
		// a deletion heard from a peer: its stop failed here already; it
		// is not run again on every heartbeat, the admin clears it
		return
	}
	if inst == nil || inst.set == nil || !inst.running() {
		remove()
		return
	}
	d.runAction(inst, "stop", "service deleted", func(err error) {
		if err != nil {
			finish(failed("not deleted: the stop failed: %v", err))
			return
		}
		remove()
	})
}
