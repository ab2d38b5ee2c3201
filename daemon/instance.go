package daemon

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/node"
	"haven/resource"
)

// instance is the loop-owned runtime of one service on this node.
type instance struct {
	name string
	cfg  *config.ServiceConfig // as installed (unexpanded)
	// local is true when this node is one of the service's nodes.
	local bool
	set   *resource.Set
	// buildErr is set when the config could not be turned into drivers here.
	buildErr string
	// retired are the drivers of the config that last had this node, kept
	// when the node was removed from the service's nodes: the core's stop
	// of the instance and the check that ends it run with them.
	retired *resource.Set
	// The monitor, the status, the checks and the action in flight are
	// the node core's (d.core.Instance).
}

// drivers are the resource drivers of the instance's actions and checks:
// its own, or, on a node removed from the service's nodes, those of the
// config that had it (the core stops what runs there with them).
func (i *instance) drivers() *resource.Set {
	if i.set == nil && !i.local {
		return i.retired
	}
	return i.set
}

func (i *instance) hasMonitored() bool {
	if i.cfg == nil {
		return false
	}
	for _, r := range i.cfg.Resources {
		if r.Monitor && !r.Disable {
			return true
		}
	}
	return false
}

// loadServices reads every service config at start-up. A file that does
// not parse is kept as "config invalid" with the service's durable state:
// the daemon keeps running with the good ones and does not act on it.
func (d *Daemon) loadServices() {
	ents, err := os.ReadDir(d.p.ServiceDir)
	if err != nil {
		d.log.Error("read service configs", zap.Error(err))
		return
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		path := filepath.Join(d.p.ServiceDir, e.Name())
		name := config.ServiceNameFromFile(path)
		if config.ValidServiceName(name) != nil {
			d.log.Error("service config file with an invalid service name skipped", zap.String("file", path))
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			d.log.Error("service config unreadable: service kept, not managed until repaired", zap.String("svc", name), zap.Error(err))
			d.setInvalid(name, nil, &config.Error{File: path, Msg: err.Error()})
			continue
		}
		cfg, err := tomlfile.ParseService(path, name, raw)
		if err == nil {
			err = d.sigs().Check(cfg)
		}
		if err != nil && signatureRefused(err) {
			d.log.Error("service config refused for its signature: service kept, not managed; the content recorded for its version is taken back from a peer that holds it", zap.String("svc", name), zap.Error(err))
			d.keepRefused(name, raw, err)
			continue
		}
		if err != nil {
			d.log.Error("service config invalid: service kept, not managed until repaired", zap.String("svc", name), zap.Error(err))
			d.setInvalid(name, raw, err)
			continue
		}
		d.drv.Input(node.LocalFileRead{Service: name, Raw: raw})
		d.installInstance(cfg)
	}
	// forget durable state of services that no longer exist
	for name := range d.dur.Services {
		if _, ok := d.services[name]; !ok && d.cfgs.invalid[name] == nil {
			d.drv.Input(node.ServiceForgotten{Service: name})
		}
	}
}

// installInstance creates or refreshes the runtime of a service from cfg.
func (d *Daemon) installInstance(cfg *config.ServiceConfig) *instance {
	inst := d.services[cfg.Name]
	if inst == nil {
		inst = &instance{name: cfg.Name}
		d.services[cfg.Name] = inst
	}
	local := cfg.HasNode(d.node.Name, d.cluster.NodeNames())
	var set *resource.Set
	var buildErr string
	if local {
		exp, err := cfg.ForNode(d.node.Name, d.p.ServiceVar(cfg.Name))
		if err == nil {
			name := cfg.Name
			env := resource.Env{
				Service: name,
				Node:    d.node.Name,
				VarDir:  d.p.ServiceVar(name),
				Log:     func(rid, line string) { d.svclogs.write(name, rid, line) },
				// the [ocf.NAME] agents' root and recurring monitor interval
				OCFRoot: d.node.OCFRoot, MonitorInterval: d.node.MonitorInterval, RscTmp: d.rscTmp(),
				// every command of the instance runs in its cgroup
				Cgroup: d.serviceCgroup(name),
				// the labels and the engine's environment of its containers
				Cluster: d.cluster.Name, EngineEnv: d.engineEnv(),
			}
			set, err = resource.NewSet(exp.Resources, env)
			if err == nil {
				d.markContainers(cfg)
			}
		}
		if err != nil {
			buildErr = err.Error()
			d.log.Error("service cannot run here", zap.String("svc", cfg.Name), zap.Error(err))
		}
	}
	removed := inst.local && !local
	if removed {
		// the stop the core orders, and the check that ends it, run with
		// the drivers of the config that had this node
		inst.retired = inst.set
	}
	inst.cfg = d.ocfStopLimits(cfg) // the quorum's stop budget counts the agents' stop timeouts
	d.drv.Input(node.InstanceInstalled{Service: cfg.Name, Spec: node.InstanceSpec{Local: local, Runnable: set != nil, Monitored: inst.hasMonitored(),
		Cause: buildErr, Resources: node.LadderSpecs(cfg), MonitorAction: cfg.MonitorAction, Flex: cfg.IsFlex()}, Now: d.clk.Now()})
	if removed {
		// the core stops an instance that runs on a node removed from the
		// service's nodes: its action is bound to the drivers of the
		// config that had it (order), before they are replaced
		d.applyReady()
	}
	inst.local, inst.set, inst.buildErr = local, set, buildErr
	if local {
		inst.retired = nil
	}
	d.changed()
	return inst
}

// check orders a full status check of the instance (the node core runs
// one at a time).
func (d *Daemon) check(inst *instance) {
	if inst != nil {
		d.drv.CheckNow(inst.name)
	}
}

// startCheck runs a check the node core ordered (node.Ready.Check) in a
// worker: every resource when full, else only the monitored ones.
func (d *Daemon) startCheck(ck node.Check) {
	inst := d.services[ck.Service]
	var set *resource.Set
	if inst != nil {
		set = inst.drivers()
	}
	if set == nil {
		// removed or changed meanwhile: the core sees a stale check
		d.drv.Input(node.Checked{Check: ck, Now: d.clk.Now()})
		return
	}
	d.checkQ().push(ck.Service, ck.Periodic, func() {
		ctx := resource.WithFencingToken(d.actx, ck.FencingToken)
		var res map[string]dataset.Resource
		if ck.Full {
			res = set.Status(ctx)
		} else {
			res = set.StatusMonitored(ctx)
		}
		d.post(func() { d.drv.CheckDone(ck, res) })
	})
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

// checkQ is the queue of the checks (made on first use, by the loop).
func (d *Daemon) checkQ() *checkQueue {
	if d.checks.start == nil {
		d.checks.clk, d.checks.max = d.clk, checkSlots()
		d.checks.start = func(job func()) { d.goWorker(func(context.Context) { job() }) }
	}
	return &d.checks
}

// goWorker runs f in a goroutine owned by the daemon; f must post its
// result back to the loop.
func (d *Daemon) goWorker(f func(ctx context.Context)) {
	d.workers.Add(1)
	d.pool.run(func() {
		defer d.workers.Done()
		f(d.actx)
	})
}

// startAction runs an action the node core ordered (node.Ready.Run) in a
// worker. An instance whose drivers could not be built here cannot run
// it: the action fails at once, with the cause.
func (d *Daemon) startAction(a node.Action, set *resource.Set) {
	inst := d.services[a.Service]
	if inst == nil || set == nil {
		err := fmt.Errorf("%s: cannot run here", a.Service)
		if inst != nil && inst.buildErr != "" {
			err = fmt.Errorf("%s: cannot run here: %s", a.Service, inst.buildErr)
		}
		d.drv.Input(node.Acted{Service: a.Service, Kind: a.Kind, Err: err, Now: d.clk.Now()})
		return
	}
	action, rid := a.Kind, a.RID
	if action == "start" {
		d.guardPushKillSet() // the guard knows the instance before it runs
	}
	// a periodic check of the instance that still waits runs before the
	// one that ends the action: not behind the other periodic ones
	d.checkQ().promote(a.Service)
	d.goWorker(func(ctx context.Context) {
		ctx = resource.WithFencingToken(ctx, a.FencingToken)
		var err error
		switch action {
		case "start":
			err = set.Start(ctx)
		case "restart":
			if rid == "" {
				// svcmgr restart: the whole instance
				if err = set.Stop(ctx); err == nil {
					err = set.Start(ctx)
				}
				break
			}
			// the restart ladder: this resource alone, the others keep running
			if err = set.StopOne(ctx, rid); err == nil {
				err = set.StartOne(ctx, rid)
			}
		default:
			err = set.Stop(ctx)
		}
		d.post(func() {
			if d.cg == nil {
				// without cgroups the guard kills the process groups of
				// the starts, known once they ran
				d.guardPushKillSet()
			}
			// the core orders the full check that ends the action
			d.drv.ActionDone(inst.name, action, err)
		})
	})
}

func (d *Daemon) setFrozen(name string, frozen bool, reason string) {
	d.drv.Step(node.FrozenSet{Service: name, Frozen: frozen, Reason: reason})
}

// localNode builds this node's dataset entry: the driver's part, then the
// node core's (node.Core.Dataset).
func (d *Daemon) localNode() dataset.Node {
	n := d.LocalInfo()
	n.Configs = d.core.ConfigEntries()
	return d.core.Dataset(n)
}

// sortedKeys returns the keys of m sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
