package daemon

import (
	"os"

	"go.uber.org/zap"

	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/node"
)

// nextVersion returns a new logical version for an edit made on this node.
func (d *Daemon) nextVersion() dataset.Version { return d.core.NextVersion() }

// witness advances the Lamport clock past a version seen from a peer.
func (d *Daemon) witness(v dataset.Version) { d.core.Witness(v) }

// knownConfig is the version, digest and lineage of the config of name
// this node holds (a tombstone counts), without its text.
func (d *Daemon) knownConfig(name string) dataset.ConfigEntry {
	if v, ok := d.dur.Tombstones[name]; ok {
		return dataset.ConfigEntry{Version: v, Deleted: true}
	}
	ds := d.dur.Services[name]
	return dataset.ConfigEntry{Version: ds.ConfigVersion, Digest: ds.ConfigDigest, Includes: ds.ConfigIncludes}
}

// newEntry makes the entry of an edit made on this node: a new version
// whose lineage is the current config's plus this edit.
func (d *Daemon) newEntry(name string, raw []byte) dataset.ConfigEntry {
	v := d.nextVersion()
	inc := map[string]uint64{}
	for o, c := range d.knownConfig(name).Includes {
		inc[o] = c
	}
	inc[d.node.Name] = v.Counter
	return dataset.ConfigEntry{Version: v, Digest: dataset.ConfigDigest(raw), Includes: inc, Raw: string(raw)}
}

// configEntries lists the configs and tombstones this node relays. A config
// that does not parse here is not relayed.
func (d *Daemon) configEntries() map[string]dataset.ConfigEntry {
	out := make(map[string]dataset.ConfigEntry, len(d.services)+len(d.dur.Tombstones))
	for name, inst := range d.services {
		e := d.knownConfig(name)
		e.Raw = string(inst.cfg.Raw)
		out[name] = e
	}
	for name, v := range d.dur.Tombstones {
		out[name] = dataset.ConfigEntry{Version: v, Deleted: true}
	}
	return out
}

// checkLocalFile compares a config file read at start-up with the digest
// recorded for its version. A file that differs was changed outside Haven
// (a hand edit, a restored backup, or a crash between the write of the
// file and that of its version): the file on disk wins, as a hand edit
// would, and gets a new version so that every node converges on it.
func (d *Daemon) checkLocalFile(name string, raw []byte) {
	ds, known := d.dur.Services[name]
	dig := dataset.ConfigDigest(raw)
	switch {
	case ds.ConfigDigest == dig:
		return
	case known && ds.ConfigDigest == "" && !ds.ConfigVersion.IsZero():
		// recorded before versions carried a digest: adopt it as is
		ds.ConfigDigest = dig
	default:
		e := d.newEntry(name, raw)
		d.log.Warn("service config changed outside Haven (its content is not the one recorded for its version): the file on disk wins as a new version",
			zap.String("svc", name), zap.String("file", d.p.ServiceConf(name)),
			zap.Uint64("old_version", ds.ConfigVersion.Counter), zap.String("old_origin", ds.ConfigVersion.Origin),
			zap.Uint64("version", e.Version.Counter))
		ds.ConfigVersion, ds.ConfigDigest, ds.ConfigIncludes = e.Version, e.Digest, e.Includes
		delete(d.dur.Tombstones, name)
	}
	d.dur.Services[name] = ds
	d.core.StateChanged()
}

// mergeConfigs installs the configs of a peer that win over ours. Every
// node applies the same rule (dataset.ConfigEntry.Wins: the newest
// version, then the higher digest), so concurrent edits resolve the same
// way everywhere.
func (d *Daemon) mergeConfigs(from string, entries map[string]dataset.ConfigEntry) {
	for _, name := range sortedKeys(entries) {
		if !d.peerServiceName(from, "configs", name) {
			continue
		}
		e := entries[name]
		d.witness(e.Version)
		cur := d.knownConfig(name)
		if !e.Wins(cur) {
			continue
		}
		if r, ok := d.refused[name]; ok && r == e.Version {
			continue
		}
		if e.Deleted {
			d.log.Info("service deleted by a peer", zap.String("svc", name), zap.String("from", from))
			d.failPending(name, failed("%s: deleted concurrently on %s", name, from))
			d.removeService(name, e.Version, nil)
			continue
		}
		if err := config.ValidServiceName(name); err != nil {
			d.refused[name] = e.Version
			d.log.Error("config from peer refused", zap.String("svc", name), zap.String("from", from), zap.Error(err))
			continue
		}
		if dig := dataset.ConfigDigest([]byte(e.Raw)); e.Digest != dig {
			if e.Digest != "" {
				d.refused[name] = e.Version
				d.log.Error("config from peer refused: its digest does not match its content", zap.String("svc", name), zap.String("from", from))
				continue
			}
			e.Digest = dig // a peer of a build without digests
		}
		cfg, err := tomlfile.ParseService(d.p.ServiceConf(name), name, []byte(e.Raw))
		if err != nil {
			// keep the last good config; log once per version
			d.refused[name] = e.Version
			d.log.Error("config from peer refused, last good config kept", zap.String("svc", name), zap.String("from", from), zap.Error(err))
			continue
		}
		if e.Version == cur.Version && !cur.Deleted {
			d.log.Warn("config conflict: a peer holds another content under the same version: the higher digest wins on every node",
				zap.String("svc", name), zap.String("from", from), zap.Uint64("version", e.Version.Counter),
				zap.String("origin", e.Version.Origin), zap.String("digest", e.Digest[:12]), zap.String("ours", shortDigest(cur.Digest)))
		}
		if err := d.install(cfg, e, "received from "+from); err != nil {
			d.log.Error("install config from peer", zap.String("svc", name), zap.Error(err))
			continue
		}
		d.rebasePending(name, from)
	}
	d.core.StateChanged()
}

func shortDigest(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
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
		d.failPending(name, failed("%s: deleted meanwhile", name))
		delete(d.services, name)
		d.core.RemoveInstance(name)
		delete(d.cfgs.invalid, name)
		delete(d.dur.Services, name)
		if d.dur.Tombstones == nil {
			d.dur.Tombstones = map[string]dataset.Version{}
		}
		d.dur.Tombstones[name] = v
		d.core.StateChanged()
		d.changed()
		d.log.Info("service deleted", zap.String("svc", name))
		d.logEvent(node.ConfigChanged{Svc: name, Change: "deleted"})
		finish(nil)
	}
	inst := d.services[name]
	if inst != nil && done == nil && d.monitorState(name) == dataset.StopFailed && d.running(inst) {
		// a deletion heard from a peer: its stop failed here already; it
		// is not run again on every heartbeat, the admin clears it
		return
	}
	if inst == nil || inst.set == nil || !d.running(inst) {
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
