package daemon

import (
	"context"
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
// config files off the loop, in order, rebuilds the instances on the loop
// and reports each with ConfigDone. A file written when the daemon stops
// before its version is recorded is found at the next start as changed
// outside Haven: it wins as a new version (node.Core.CheckLocalFile).

// applyConfig writes (atomically) or removes the config file of a
// ConfigOp of the core in a worker, off the loop, each write after the one
// before; configWritten takes the result on the loop.
func (d *Daemon) applyConfig(op node.ConfigOp) {
	path := d.p.ServiceConf(op.Service)
	prev, done := d.cfgs.last, make(chan struct{})
	d.cfgs.last = done
	d.goWorker(func(context.Context) {
		defer close(done)
		if prev != nil {
			<-prev
		}
		var err error
		if op.Config == nil {
			if err = os.Remove(path); os.IsNotExist(err) {
				err = nil
			}
		} else {
			err = fsutil.WriteAtomic(path, op.Config.Raw, 0o600)
		}
		d.post(func() { d.configWritten(op, path, err) })
	})
}

// configWritten rebuilds or forgets the instance of a config written, and
// reports it to the core, which records its version; the status check of
// a new config is ordered. The requests parked meanwhile run then.
func (d *Daemon) configWritten(op node.ConfigOp, path string, err error) {
	name := op.Service
	switch {
	case err != nil:
		d.core.ConfigDone(name, err, d.clk.Now())
	case op.Config == nil:
		delete(d.services, name)
		d.core.RemoveInstance(name)
		delete(d.cfgs.invalid, name)
		d.changed()
		d.log.Info("service deleted", zap.String("svc", name))
		d.core.ConfigDone(name, nil, d.clk.Now())
	default:
		cfg := op.Config
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
	d.applyReady()
	d.runParked(name)
}

// whenConfigIdle runs f, a request that reads the config of name (get,
// set, unset, create), at once, or once no write of that config is in
// flight: an edit is made on the newest config, which holds every edit
// pending here (node/configs.go).
func (d *Daemon) whenConfigIdle(name string, f func()) {
	if !d.core.ConfigBusy(name) {
		f()
		return
	}
	if d.cfgs.parked == nil {
		d.cfgs.parked = map[string][]func(){}
	}
	d.cfgs.parked[name] = append(d.cfgs.parked[name], f)
}

// runParked runs the requests parked for name while no write of it is in
// flight.
func (d *Daemon) runParked(name string) {
	for len(d.cfgs.parked[name]) > 0 && !d.core.ConfigBusy(name) {
		f := d.cfgs.parked[name][0]
		d.cfgs.parked[name] = d.cfgs.parked[name][1:]
		f()
	}
	if len(d.cfgs.parked[name]) == 0 {
		delete(d.cfgs.parked, name)
	}
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
