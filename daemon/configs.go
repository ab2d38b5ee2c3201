package daemon

import (
	"context"
	"os"

	"go.uber.org/zap"

	"haven/internal/fsutil"
	"haven/node"
)

// Config distribution is the node core's (node/configs.go: versions,
// digests, tombstones, which peer config to adopt, the adoption waits of
// the edits made here and their rebase, the deletion which stops the
// instance first). The daemon carries out its ConfigOps: it writes the
// config files off the loop, in order, rebuilds the instances on the loop
// and reports each with the input node.ConfigWritten. A file written when the daemon stops
// before its version is recorded is found at the next start as changed
// outside Haven: it wins as a new version (node.LocalFileRead).

// applyConfigs writes (atomically) or removes the config files of the
// ConfigOps of one Ready of the core in a worker, off the loop, in order,
// each batch after the one before; configsWritten takes the results on the
// loop in chunks of 1, 2, 4, 8... files: the state records the versions of
// a chunk in one change, so a node installing the N configs of a peer's
// full copy changes (and encodes) its state O(log N) times, not N.
func (d *Daemon) applyConfigs(ops []node.ConfigOp) {
	if len(ops) == 0 {
		return
	}
	prev, done := d.cfgs.last, make(chan struct{})
	d.cfgs.last = done
	d.goWorker(func(context.Context) {
		defer close(done)
		if prev != nil {
			<-prev
		}
		chunk := make([]configResult, 0, 1)
		for _, op := range ops {
			r := configResult{op: op, path: d.p.ServiceConf(op.Service)}
			if op.Config == nil {
				if r.err = os.Remove(r.path); os.IsNotExist(r.err) {
					r.err = nil
				}
			} else {
				r.err = fsutil.WriteAtomic(r.path, op.Config.Raw, 0o600)
			}
			chunk = append(chunk, r)
			if len(chunk) == cap(chunk) {
				got := chunk
				d.post(func() { d.configsWritten(got) })
				chunk = make([]configResult, 0, 2*cap(chunk))
			}
		}
		if len(chunk) > 0 {
			d.post(func() { d.configsWritten(chunk) })
		}
	})
}

// configResult is a config file written (or removed).
type configResult struct {
	op   node.ConfigOp
	path string
	err  error
}

// configsWritten reports a chunk of config files written, in order, then
// carries out what the core asks once, then runs the requests parked for
// them.
func (d *Daemon) configsWritten(rs []configResult) {
	for _, r := range rs {
		d.configWritten(r.op, r.path, r.err)
	}
	d.applyReady()
	for _, r := range rs {
		d.runParked(r.op.Service)
	}
}

// configWritten rebuilds or forgets the instance of a config written, and
// reports it to the core, which records its version; the status check of
// a new config is ordered. The caller takes the core's Ready, then runs
// the requests parked meanwhile.
func (d *Daemon) configWritten(op node.ConfigOp, path string, err error) {
	name := op.Service
	switch {
	case err != nil:
		d.drv.Input(node.ConfigWritten{Service: name, Err: err, Now: d.clk.Now()})
	case op.Config == nil:
		delete(d.cfgs.refused, name)
		delete(d.cfgs.orders, name)
		delete(d.services, name)
		d.drv.Input(node.InstanceRemoved{Service: name})
		delete(d.cfgs.invalid, name)
		d.drv.Changed()
		d.log.Info("service deleted", zap.String("svc", name))
		d.drv.Input(node.ConfigWritten{Service: name, Now: d.clk.Now()})
	default:
		cfg := op.Config
		cfg.File = path
		delete(d.cfgs.refused, name)
		delete(d.cfgs.orders, name)
		if d.cfgs.invalid[name] != nil {
			delete(d.cfgs.invalid, name)
			d.log.Info("service config repaired: managed again with its kept state", zap.String("svc", name))
		}
		inst := d.installInstance(cfg)
		d.log.Info("service config "+op.What, zap.String("svc", name))
		d.drv.Input(node.ConfigWritten{Service: name, Now: d.clk.Now()})
		d.drv.Input(node.CheckOrdered{Service: inst.name})
	}
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

// mergeMoreLater goes on, in later turns of the loop, with the peers'
// configs the core left over at its budget (the input node.MoreConfigs): the
// requests that arrived meanwhile are served in between, instead of
// waiting for thousands of configs to be parsed.
func (d *Daemon) mergeMoreLater() {
	if d.cfgs.merging || !d.core.ConfigMergesLeft() {
		return
	}
	d.cfgs.merging = true
	go d.post(func() { // from a goroutine: the loop never waits on its own queue
		d.cfgs.merging = false
		d.drv.Step(node.MoreConfigs{Now: d.clk.Now()})
		d.mergeMoreLater()
	})
}
