package daemon

import (
	"os"

	"go.uber.org/zap"

	"haven/dataset"
	"haven/fsutil"
	"haven/node"
)

// Config distribution is the node core's (node/configs.go: versions,
// digests, tombstones, which peer config to adopt, the adoption waits of
// the edits made here and their rebase, the deletion which stops the
// instance first). The daemon carries out its ConfigOps: it writes the
// config files and rebuilds the instances, and reports each with
// ConfigDone.

// applyConfig writes (atomically) or removes the config file of a
// ConfigOp of the core, rebuilds or forgets the instance, and reports it.
// The status check of a new config is ordered for the next Ready.
func (d *Daemon) applyConfig(op node.ConfigOp) {
	name := op.Service
	path := d.p.ServiceConf(name)
	if op.Config == nil {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			d.core.ConfigDone(name, err, d.clk.Now())
			return
		}
		delete(d.services, name)
		d.core.RemoveInstance(name)
		delete(d.cfgs.invalid, name)
		d.changed()
		d.log.Info("service deleted", zap.String("svc", name))
		d.core.ConfigDone(name, nil, d.clk.Now())
		return
	}
	cfg := op.Config
	if err := fsutil.WriteAtomic(path, cfg.Raw, 0o600); err != nil {
		d.core.ConfigDone(name, err, d.clk.Now())
		return
	}
	cfg.File = path
	if d.cfgs.invalid[name] != nil {
		delete(d.cfgs.invalid, name)
		d.log.Info("service config repaired: managed again with its kept state", zap.String("svc", name))
	}
	inst := d.installInstance(cfg)
	d.log.Info("service config "+op.What, zap.String("svc", name))
	d.core.ConfigDone(name, nil, d.clk.Now())
	d.core.CheckNow(inst.name)
}

// validConfigs keeps the config entries heard from peer from whose names
// are valid; an invalid one is refused (logged once): it could name a
// path outside the service directory.
func (d *Daemon) validConfigs(from string, es map[string]dataset.ConfigEntry) map[string]dataset.ConfigEntry {
	ok := make(map[string]dataset.ConfigEntry, len(es))
	for _, name := range sortedKeys(es) {
		if d.peerServiceName(from, "configs", name) {
			ok[name] = es[name]
		}
	}
	return ok
}
