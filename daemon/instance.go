package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/monitor"
	"haven/resource"
	"haven/status"
	"time"
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

	res     map[string]dataset.Resource
	avail   dataset.Status
	overall dataset.Status
	mon     dataset.InstanceMonitor
	busy    string // action in flight: "start" | "stop"
	leader  bool   // placement leader, from the last decision
	// multiActive lists the nodes where the service was last seen up when
	// more than one ("" otherwise), to warn once per change.
	multiActive string
	flags       string // A C F L, from the last decision
	// targetFailed is the last Decision.TargetFailed, to answer and log once.
	targetFailed string
	checking     bool
	lastFull     time.Time
	lastMon      time.Time
	// pendingCheck asks for a full check as soon as the current one ends.
	pendingCheck bool
	// afterCheck run on the loop when the next full check has ended, so
	// that an action answers once its effect is visible in the status.
	afterCheck []func()
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
		if err != nil {
			d.log.Error("service config invalid: service kept, not managed until repaired", zap.String("svc", name), zap.Error(err))
			d.setInvalid(name, raw, err)
			continue
		}
		d.checkLocalFile(name, raw)
		d.installInstance(cfg)
	}
	// forget durable state of services that no longer exist
	for name := range d.dur.Services {
		if _, ok := d.services[name]; !ok && d.cfgs.invalid[name] == nil {
			delete(d.dur.Services, name)
		}
	}
}

// installInstance creates or refreshes the runtime of a service from cfg.
func (d *Daemon) installInstance(cfg *config.ServiceConfig) *instance {
	inst := d.services[cfg.Name]
	if inst == nil {
		inst = &instance{
			name:    cfg.Name,
			avail:   dataset.StatusUnknown,
			overall: dataset.StatusUnknown,
			res:     map[string]dataset.Resource{},
			mon:     dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: "none", StateSince: d.clk.Now()},
		}
		ds := d.dur.Services[cfg.Name]
		if ds.LocalExpect != "" {
			inst.mon.LocalExpect = ds.LocalExpect
		}
		if ds.StartFailed {
			inst.mon.State = dataset.StartFailed
		}
		d.services[cfg.Name] = inst
	}
	local := cfg.HasNode(d.node.Name, d.cluster.NodeNames())
	if inst.local && !local && inst.set != nil && inst.busy == "" &&
		(inst.avail == dataset.StatusUp || inst.avail == dataset.StatusWarn) {
		// the running action keeps the old drivers
		d.runAction(inst, "stop", "this node was removed from the service's nodes", nil)
	}
	inst.cfg = cfg
	inst.local = local
	inst.set, inst.buildErr = nil, ""
	if inst.local {
		exp, err := cfg.ForNode(d.node.Name, d.p.ServiceVar(cfg.Name))
		if err == nil {
			name := cfg.Name
			env := resource.Env{
				Service: name,
				Node:    d.node.Name,
				VarDir:  d.p.ServiceVar(name),
				Log:     func(rid, line string) { d.svclogs.write(name, rid, line) },
			}
			inst.set, err = resource.NewSet(exp.Resources, env)
		}
		if err != nil {
			inst.buildErr = err.Error()
			d.log.Error("service cannot run here", zap.String("svc", cfg.Name), zap.Error(err))
		}
	}
	d.changed()
	return inst
}

// check runs a status check of the instance's resources in a worker:
// every resource when full, else only the monitored ones.
func (d *Daemon) check(inst *instance, full bool) {
	if inst == nil || !inst.local || inst.set == nil {
		d.runAfterCheck(inst)
		return
	}
	if inst.checking {
		if full {
			inst.pendingCheck = true
		}
		return
	}
	inst.checking = true
	set := inst.set
	d.goWorker(func(ctx context.Context) {
		var res map[string]dataset.Resource
		if full {
			res = set.Status(ctx)
		} else {
			res = set.StatusMonitored(ctx)
		}
		d.post(func() { d.checkDone(inst, set, full, res) })
	})
}

func (d *Daemon) checkDone(inst *instance, set *resource.Set, full bool, res map[string]dataset.Resource) {
	inst.checking = false
	now := d.clk.Now()
	if full {
		inst.lastFull = now
	}
	inst.lastMon = now
	if d.services[inst.name] != inst || inst.set != set {
		// the config changed meanwhile: this result is stale
		d.check(inst, true)
		return
	}
	if full && inst.pendingCheck {
		// an action ended while this check ran: only the next one counts
		inst.pendingCheck = false
		d.check(inst, true)
		return
	}
	for rid, r := range res {
		if old, ok := inst.res[rid]; ok && old.Status != r.Status {
			d.svclogs.write(inst.name, rid, "status "+string(old.Status)+" -> "+string(r.Status)+reasonSuffix(r.Log))
			d.log.Info("resource status changed", zap.String("svc", inst.name), zap.String("rid", rid),
				zap.String("from", string(old.Status)), zap.String("to", string(r.Status)), zap.String("reason", r.Log))
			d.emit(api.Event{Kind: "resource_status", Service: inst.name, RID: rid, Message: string(old.Status) + " -> " + string(r.Status)})
		}
		inst.res[rid] = r
	}
	if full {
		for rid := range inst.res {
			if _, ok := res[rid]; !ok {
				delete(inst.res, rid)
			}
		}
	}
	avail, overall := status.Instance(inst.res)
	if avail != inst.avail || overall != inst.overall {
		d.log.Info("instance status changed", zap.String("svc", inst.name),
			zap.String("from", string(inst.avail)), zap.String("to", string(avail)), zap.String("overall", string(overall)))
		d.emit(api.Event{Kind: "instance_status", Service: inst.name, Message: string(inst.avail) + " -> " + string(avail)})
		inst.avail, inst.overall = avail, overall
		d.changed()
	}
	if inst.pendingCheck {
		inst.pendingCheck = false
		d.check(inst, true)
		return
	}
	if full {
		d.runAfterCheck(inst)
	}
}

func (d *Daemon) runAfterCheck(inst *instance) {
	if inst == nil {
		return
	}
	fs := inst.afterCheck
	inst.afterCheck = nil
	for _, f := range fs {
		f()
	}
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

// goWorker runs f in a goroutine owned by the daemon; f must post its
// result back to the loop.
func (d *Daemon) goWorker(f func(ctx context.Context)) {
	d.workers.Add(1)
	go func() {
		defer d.workers.Done()
		f(d.actx)
	}()
}

// runAction starts or stops the local instance in a worker. done (may be
// nil) runs on the loop with the result.
func (d *Daemon) runAction(inst *instance, action, reason string, done func(error)) {
	if inst.busy != "" {
		if done != nil {
			done(fmt.Errorf("%s: an action is already running (%s)", inst.name, inst.busy))
		}
		return
	}
	if inst.set == nil {
		err := fmt.Errorf("%s: cannot run here: %s", inst.name, inst.buildErr)
		if !inst.local {
			err = fmt.Errorf("%s: this node is not one of the service's nodes", inst.name)
		}
		if done != nil {
			done(err)
		}
		return
	}
	inst.busy = action
	state := dataset.Starting
	if action == "stop" {
		state = dataset.Stopping
	}
	d.setInstanceMonitor(inst, state, reason)
	d.log.Info("action", zap.String("svc", inst.name), zap.String("action", action), zap.String("reason", reason))
	d.svclogs.write(inst.name, "", action+": "+reason)
	d.emit(api.Event{Kind: "action_begin", Service: inst.name, Message: action + ": " + reason})
	set := inst.set
	d.goWorker(func(ctx context.Context) {
		var err error
		if action == "start" {
			err = set.Start(ctx)
		} else {
			err = set.Stop(ctx)
		}
		d.post(func() { d.actionDone(inst, action, err, done) })
	})
}

// actionDone runs on the loop when an action's commands have ended. The
// instance stays busy until the status check that follows has ended, so
// that no decision is taken on the status from before the action.
func (d *Daemon) actionDone(inst *instance, action string, err error, done func(error)) {
	result := "ok"
	if err != nil {
		result = "failed: " + err.Error()
		d.log.Error("action failed", zap.String("svc", inst.name), zap.String("action", action), zap.Error(err))
	} else {
		d.log.Info("action succeeded", zap.String("svc", inst.name), zap.String("action", action))
	}
	d.svclogs.write(inst.name, "", action+" "+result)
	d.emit(api.Event{Kind: "action_end", Service: inst.name, Message: action + " " + result})
	inst.afterCheck = append(inst.afterCheck, func() {
		inst.busy = ""
		now := d.clk.Now()
		if action == "stop" && err == nil {
			// the commands said ok, the check says otherwise: the check wins
			if err = stillUp(inst.res); err != nil {
				d.log.Error("action failed", zap.String("svc", inst.name), zap.String("action", action), zap.Error(err))
				d.svclogs.write(inst.name, "", "stop failed: "+err.Error())
				d.emit(api.Event{Kind: "action_end", Service: inst.name, Message: "stop failed: " + err.Error()})
			}
		}
		var next dataset.InstanceMonitor
		if action == "start" {
			next = monitor.AfterStart(inst.mon, err == nil, now)
		} else {
			next = monitor.AfterStop(inst.mon, err == nil, now)
		}
		reason := action + " succeeded"
		if err != nil {
			reason = err.Error()
			next = monitor.Failure(next, reason)
		}
		d.setInstanceMonitor(inst, next.State, reason)
		inst.mon = next
		d.persistMonitor(inst)
		if done != nil {
			done(err)
		}
	})
	d.check(inst, true)
}

// stillUp returns an error naming the required resources whose check
// still says up after a stop whose commands succeeded, nil when none.
func stillUp(res map[string]dataset.Resource) error {
	var up []string
	for _, rid := range sortedKeys(res) {
		r := res[rid]
		if r.Disabled || r.Optional || r.Status != dataset.StatusUp {
			continue
		}
		s := rid + ": its check still says up after its stop"
		if r.Log != "" {
			s += " (last line: " + r.Log + ")"
		}
		up = append(up, s)
	}
	if len(up) == 0 {
		return nil
	}
	return errors.New(strings.Join(up, "; "))
}

// running reports whether the local instance may run something a stop
// must end: up or warn, or n/a and started (monitor.EffectiveAvail).
func (i *instance) running() bool {
	switch monitor.EffectiveAvail(dataset.Instance{Avail: i.avail, Monitor: i.mon}) {
	case dataset.StatusDown, dataset.StatusNA:
		return false
	}
	return true
}

func (d *Daemon) setInstanceMonitor(inst *instance, s dataset.MonitorState, reason string) {
	if inst.mon.State == s {
		return
	}
	d.log.Info("instance monitor state", zap.String("svc", inst.name),
		zap.String("from", string(inst.mon.State)), zap.String("to", string(s)), zap.String("reason", reason))
	d.emit(api.Event{Kind: "instance_monitor", Service: inst.name, Message: string(inst.mon.State) + " -> " + string(s) + ": " + reason})
	inst.mon.State = s
	inst.mon.StateSince = d.clk.Now()
	d.changed()
}

// frozen reports whether the instance is frozen (its own flag).
func (d *Daemon) frozen(name string) bool { return d.dur.Services[name].Frozen }

func (d *Daemon) setFrozen(name string, frozen bool, reason string) {
	ds := d.dur.Services[name]
	if ds.Frozen == frozen {
		return
	}
	ds.Frozen = frozen
	d.dur.Services[name] = ds
	d.saveState()
	word := map[bool]string{true: "frozen", false: "thawed"}[frozen]
	d.log.Info("instance "+word, zap.String("svc", name), zap.String("reason", reason))
	d.emit(api.Event{Kind: "instance_" + word, Service: name, Message: word + ": " + reason})
	d.changed()
}

// localNode builds this node's dataset entry.
func (d *Daemon) localNode() dataset.Node {
	n := dataset.Node{
		Name:        d.node.Name,
		Monitor:     d.monitor,
		Frozen:      d.dur.NodeFrozen,
		Compat:      d.opts.Compat,
		Load15:      d.load15,
		MemAvailPct: d.memPct,
		Labels:      d.node.Labels,
		Services:    map[string]dataset.Instance{},
		Configs:     d.configEntries(),
		Targets:     d.targets(),
		Clears:      d.clears(),
		Gen:         d.gen,

		FrozenReason: d.dur.NodeFrozenReason,
	}
	for name := range d.cfgs.invalid {
		n.Services[name] = d.invalidInstance(name)
	}
	for name, inst := range d.services {
		if !inst.local {
			continue
		}
		res := make(map[string]dataset.Resource, len(inst.res))
		for k, v := range inst.res {
			res[k] = v
		}
		n.Services[name] = dataset.Instance{
			Avail:           inst.avail,
			Overall:         inst.overall,
			Frozen:          d.frozen(name),
			Monitor:         inst.mon,
			PlacementLeader: inst.leader,
			Flags:           inst.flags,
			Resources:       res,
			ConfigVersion:   d.dur.Services[name].ConfigVersion,
		}
	}
	return n
}

// sortedKeys returns the keys of m sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
