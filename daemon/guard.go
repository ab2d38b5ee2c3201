package daemon

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/dataset"
	"haven/guard"
	"haven/node"
	"haven/quorum"
)

// The daemon's end of the node guard (package guard; docs/behaviour.md
// 3.1). The loop renews the lease first thing in every pass, at most
// every config.GuardRenewEvery (guardStep): a loop that is wedged or
// paused renews nothing, and the guard ends the failover services when
// the lease runs out. What the guard answers goes to the core as an input
// when it changed (node.GuardReported): its armed state, published for
// the peers' takeover gate, and the record of a firing, taken in before
// anything else of the pass (a check or the restart ladder must not bring
// back what the guard ended).

// guardTimeout bounds one exchange with the guard (the loop waits for
// it); guardSpawnWait bounds the wait for a guard just started to answer;
// guardRespawnEvery spaces the starts of a guard that keeps not answering.
const (
	guardTimeout      = 500 * time.Millisecond
	guardSpawnWait    = 5 * time.Second
	guardRespawnEvery = 10 * time.Second
)

type guardLink struct {
	on bool
	// program is the guard's program (guard.Program), found when the
	// daemon starts: missing, the daemon does not start
	program string
	// client is the connection to the guard: the loop's synchronous
	// exchanges and the worker's (guardWorker) take mu around it
	client *guard.Client
	mu     sync.Mutex
	// jobs are the worker's exchanges (one at a time: inflight); seq
	// numbers every exchange, applied is the last one whose answer was
	// taken (an older answer arriving late is dropped)
	jobs         chan guardJob
	inflight     bool
	seq, applied uint64
	lease        time.Duration
	// lastTry is the CLOCK_BOOTTIME of the last exchange; loopAt of the
	// last pass (the heartbeat's Mute reads it from its goroutines).
	lastTry time.Duration
	loopAt  atomic.Int64
	// gen numbers the kill set sent last (kill); held is the generation
	// the guard said it holds.
	gen, held uint64
	kill      []guard.Target
	killKey   string
	// killAt is the driver's generation of the local dataset when the
	// kill set was made (an instance that starts, stops or changes
	// status changes it)
	killAt uint64
	// last is the report handed to the core last.
	last node.GuardReported
	// maint: the daemon stops for maintenance and left the guard the
	// lease that covers the grace; nothing is renewed any more.
	maint     bool
	spawnedAt time.Duration
	// rep is the guard's last answer (for the status), why the reason
	// the lease is not renewed now ("" when it is).
	rep guard.Reply
	why string
}

// startGuard attaches to the node's guard, starting one when none
// answers, and renews the lease at once (a daemon restarted within the
// lease keeps every service: this is its first renewal).
func (d *Daemon) startGuard() {
	g := &d.gl
	g.on, g.lease = d.node.Guard, d.node.GuardLease
	if !g.on {
		d.log.Warn("node guard off (node.guard = false): a killed or paused daemon leaves its failover services running")
		// a guard of an earlier run, with the guard on, would still act
		c := guard.NewClient(d.p.GuardSocket(), guardTimeout)
		defer c.Close()
		if _, err := c.Do(guard.Request{Op: guard.OpDisarm}); err == nil {
			c.Do(guard.Request{Op: guard.OpExit})
			d.log.Warn("the node guard of an earlier run was disarmed and stopped (node.guard = false)")
		}
		return
	}
	g.client = guard.NewClient(d.p.GuardSocket(), guardTimeout)
	if rep, err := g.client.Do(guard.Request{Op: guard.OpStatus}); err == nil {
		d.log.Info("node guard re-attached", zap.Int("pid", rep.Pid), zap.Bool("armed", rep.Armed))
	} else {
		d.spawnGuard()
	}
	g.jobs = make(chan guardJob, 1)
	go d.guardWorker(g.jobs)
	now := guard.BootNow()
	g.lastTry = now
	d.guardExchange(d.guardRequest(now), false)
}

// guardJob is one exchange the worker makes.
type guardJob struct {
	req guard.Request
	seq uint64
}

// guardWorker makes the loop's ordinary renewals off the loop: the loop
// never waits for the guard to be scheduled (on a loaded host that took
// tens of milliseconds, during which the loop took no input). The answer
// comes back to the loop, an input like any other. It ends when jobs is
// closed.
func (d *Daemon) guardWorker(jobs <-chan guardJob) {
	g := &d.gl
	for j := range jobs {
		g.mu.Lock()
		rep, err := g.client.Do(j.req)
		g.mu.Unlock()
		d.post(func() {
			g.inflight = false
			d.guardAnswer(j, rep, err, false)
		})
	}
}

// spawnGuard starts a guard: the guard's program, beside this binary.
func (d *Daemon) spawnGuard() {
	g := &d.gl
	g.spawnedAt = guard.BootNow()
	var args []string
	if d.p.Root != "" {
		args = append(args, "--root", d.p.Root)
	}
	cg := ""
	if d.cg != nil {
		cg = d.cg.Guard()
	}
	pid, err := guard.Spawn(g.program, args, d.p.GuardLog(), cg, d.p.GuardSocket(), guardSpawnWait)
	if err != nil {
		d.log.Error("node guard not started: the failover services are not guarded", zap.Error(err))
		return
	}
	d.log.Info("node guard started", zap.Int("pid", pid), zap.String("program", g.program), zap.String("log", d.p.GuardLog()))
}

// guardStep is the guard's share of a loop pass, before the pass's input:
// the loop is alive (Mute), and every GuardRenewEvery the lease is renewed
// (or, when the node may not run its services, only asked about), by the
// worker. After a gap (the loop did not pass for two renewal periods: the
// daemon was paused or wedged) the exchange is made here, before the
// pass's input: a daemon resumed learns first whether its guard acted.
func (d *Daemon) guardStep() {
	g := &d.gl
	if !g.on {
		return
	}
	now := guard.BootNow()
	g.loopAt.Store(int64(now))
	gap := now - g.lastTry
	if g.maint || gap < config.GuardRenewEvery && g.held == g.gen || g.inflight && gap < 2*config.GuardRenewEvery {
		return
	}
	g.lastTry = now
	req := d.guardRequest(now)
	if gap >= 2*config.GuardRenewEvery {
		d.guardExchange(req, false)
		return
	}
	g.seq++
	select {
	case g.jobs <- guardJob{req: req, seq: g.seq}:
		g.inflight = true
	default: // the worker is still busy: the next pass tries again
	}
}

// guardRequest is the request of a pass at now: a renewal with the kill
// set (whole when the guard does not hold its generation) while the node
// may run its services, else a status request.
func (d *Daemon) guardRequest(now time.Duration) guard.Request {
	g := &d.gl
	deadline, ok, why := d.guardDeadline(now)
	g.why = why
	if !ok {
		if g.last.Armed {
			d.log.Warn("node guard lease not renewed: it ends the failover services when it runs out", zap.String("reason", why),
				zap.Duration("lease", g.lease))
		}
		return guard.Request{Op: guard.OpStatus}
	}
	d.guardKillSet()
	req := guard.Request{Op: guard.OpRenew, Deadline: int64(deadline), Gen: g.gen}
	if g.held != g.gen {
		req.SetKill, req.Kill = true, g.kill
	}
	return req
}

// guardDeadline is the lease's end (CLOCK_BOOTTIME) for a renewal at
// boot time now: the core's GuardLease (anchored on the acknowledged
// beats of this node with the quorum on), false when nothing is renewed.
func (d *Daemon) guardDeadline(now time.Duration) (time.Duration, bool, string) {
	clk := d.clk.Now()
	acked := func(peer string) (time.Time, bool) {
		if d.hb == nil {
			return time.Time{}, false
		}
		a, ok := d.hb.Acked(peer)
		return a.Sent, ok
	}
	until, ok, why := d.core.GuardLease(clk, acked)
	if !ok {
		return 0, false, why
	}
	return now + until.Sub(clk), true, ""
}

// guardExchange sends req from the loop and waits for the answer
// (guardAnswer; maint: the lease of a clean stop).
func (d *Daemon) guardExchange(req guard.Request, maint bool) {
	g := &d.gl
	g.mu.Lock()
	rep, err := g.client.Do(req)
	g.mu.Unlock()
	g.seq++
	d.guardAnswer(guardJob{req: req, seq: g.seq}, rep, err, maint)
}

// guardAnswer hands the guard's answer to the core when it changed; a
// record not taken in yet is acknowledged after the core took it. An
// answer older than one already taken is dropped.
func (d *Daemon) guardAnswer(j guardJob, rep guard.Reply, err error, maint bool) {
	g := &d.gl
	if j.seq < g.applied {
		return
	}
	g.applied = j.seq
	in := node.GuardReported{Now: d.clk.Now(), NotRenewed: g.why}
	if err != nil {
		in.Err = err.Error()
		if guard.BootNow()-g.spawnedAt > guardRespawnEvery {
			d.spawnGuard()
		}
	} else {
		in.Armed, in.Maintenance = rep.Armed, rep.Armed && maint
		g.held, g.rep = rep.Gen, rep
		if d.metrics != nil {
			d.metrics.guardDeadline.Store(rep.Deadline) // 0 when not armed
		}
		if rep.Error != "" {
			d.log.Error("node guard refused a request", zap.String("op", j.req.Op), zap.String("error", rep.Error))
		}
		if f := rep.Fired; f != nil {
			in.Fired = &node.GuardFiring{ID: f.ID, At: f.At, Late: f.Late, Services: f.Services(), Acked: f.Acked}
		}
	}
	if !sameGuardReport(in, g.last) {
		g.last = in
		d.drv.Step(in)
	}
	if f := in.Fired; f != nil && !f.Acked {
		g.mu.Lock()
		rep, err := g.client.Do(guard.Request{Op: guard.OpAck, Fired: f.ID})
		g.mu.Unlock()
		if err == nil && rep.Fired != nil && rep.Fired.Acked {
			g.last.Fired.Acked = true
		}
	}
}

func sameGuardReport(a, b node.GuardReported) bool {
	if a.Armed != b.Armed || a.Maintenance != b.Maintenance || a.Err != b.Err || a.NotRenewed != b.NotRenewed || (a.Fired == nil) != (b.Fired == nil) {
		return false
	}
	return a.Fired == nil || a.Fired.ID == b.Fired.ID && a.Fired.Acked == b.Fired.Acked
}

// guardKillSet makes the kill set of the running failover instances
// (orchestrate = ha: what a peer may start without this node), a new
// generation when it changed. An instance counts from the start of its
// start until a check says it is down (unknown counts: a daemon just
// started ends what may run).
func (d *Daemon) guardKillSet() {
	g := &d.gl
	if g.gen != 0 && d.drv.Gen() == g.killAt {
		return // the local dataset has not changed since: nor has the set
	}
	g.killAt = d.drv.Gen()
	var kill []guard.Target
	for _, name := range d.serviceNames() {
		inst := d.services[name]
		set := inst.drivers()
		if inst.cfg == nil || inst.cfg.Orchestrate != "ha" || set == nil {
			continue
		}
		avail, running := d.core.Status(name)
		if !running && avail != dataset.StatusUnknown && d.core.Busy(name) == "" {
			continue
		}
		t := guard.Target{Service: name, Cgroup: d.serviceCgroup(name)}
		ends := set.Ends()
		t.Groups, t.Mounts = ends.Groups, ends.Mounts
		for _, a := range ends.Addrs {
			t.Addrs = append(t.Addrs, guard.Addr{Dev: a.Dev, Prefix: a.Prefix})
		}
		kill = append(kill, t)
	}
	b, _ := json.Marshal(kill)
	if key := string(b); key != g.killKey || g.gen == 0 {
		g.killKey, g.kill = key, slices.Clip(kill)
		g.gen++
	}
}

// guardMaintenance is the guard's share of a clean stop (nodemgr daemon
// stop), before the node announces maintenance: the lease becomes the one
// that ends before maintenance_grace_period (quorum.GuardMaintenanceLease),
// and nothing renews it any more. A daemon back within it takes it over;
// one that never comes back has its services ended before the peers take
// them over.
func (d *Daemon) guardMaintenance() {
	g := &d.gl
	if !g.on || g.maint {
		return
	}
	lease := quorum.GuardMaintenanceLease(d.node.MaintenanceGracePeriod, config.GuardAct)
	d.guardKillSet()
	req := guard.Request{Op: guard.OpRenew, Deadline: int64(guard.BootNow() + lease), Gen: g.gen, SetKill: true, Kill: g.kill}
	if ok, why := d.core.GuardEntitled(d.clk.Now()); !ok {
		// no renewal: the lease in place ends sooner
		d.log.Warn("clean stop: the node guard's lease is not extended for maintenance", zap.String("reason", why))
		req = guard.Request{Op: guard.OpStatus}
	} else {
		d.log.Info("clean stop: the node guard's lease now covers maintenance_grace_period", zap.Duration("lease", lease),
			zap.Duration("maintenance_grace_period", d.node.MaintenanceGracePeriod))
	}
	g.maint = true
	d.guardExchange(req, true)
}

// guardDisarm is the end of a shutdown: every local instance stopped, the
// guard has nothing to end; it exits (a daemon started again starts
// another).
func (d *Daemon) guardDisarm() {
	g := &d.gl
	if !g.on {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.client.Do(guard.Request{Op: guard.OpDisarm}); err != nil {
		d.log.Warn("node guard not disarmed", zap.Error(err))
	} else if rep, err := g.client.Do(guard.Request{Op: guard.OpExit}); err != nil || rep.Error != "" {
		d.log.Warn("node guard disarmed, but not stopped", zap.Error(err), zap.String("refused", rep.Error))
	} else {
		d.log.Info("node guard disarmed and stopped")
	}
	g.client.Close()
}

// stopGuardWorker ends the worker once the loop has ended.
func (d *Daemon) stopGuardWorker() {
	if d.gl.jobs != nil {
		close(d.gl.jobs)
	}
}

// guardMute is the heartbeat's Mute: the loop has not passed for a lease
// (wedged): its peers must see it dead.
func (d *Daemon) guardMute() bool {
	at := d.gl.loopAt.Load()
	return at != 0 && guard.BootNow()-time.Duration(at) > d.gl.lease
}

// guardDue is when the loop must pass next for the guard (zero: never).
func (d *Daemon) guardDue() time.Time {
	if !d.gl.on || d.gl.maint {
		return time.Time{}
	}
	left := config.GuardRenewEvery - (guard.BootNow() - d.gl.lastTry)
	return d.clk.Now().Add(max(left, 0))
}

// guardPushKillSet sends the kill set when it changed: before a start
// runs (the core marked the instance busy: a daemon killed in the middle
// of a start leaves nothing the guard does not know), and, without
// cgroups, after each action (the process groups of a start are known
// once it ran). The answer reaches the core at the next pass (this may
// run inside the driver's Apply).
func (d *Daemon) guardPushKillSet() {
	g := &d.gl
	if !g.on || g.maint || !g.last.Armed {
		return
	}
	now := guard.BootNow()
	deadline, ok, _ := d.guardDeadline(now)
	if !ok {
		return
	}
	if d.guardKillSet(); g.held == g.gen {
		return
	}
	g.mu.Lock()
	rep, err := g.client.Do(guard.Request{Op: guard.OpRenew, Deadline: int64(deadline), Gen: g.gen, SetKill: true, Kill: g.kill})
	g.mu.Unlock()
	if err == nil {
		g.held = rep.Gen
	}
	g.lastTry = now - config.GuardRenewEvery // the next pass hands an answer to the core
}

// guardStatus is the node's guard in the status object (nil: guard off).
func (d *Daemon) guardStatus() *dataset.GuardStatus {
	g := &d.gl
	if !g.on {
		return nil
	}
	st := &dataset.GuardStatus{Armed: g.last.Armed, Maintenance: g.last.Maintenance, LeaseMs: g.lease.Milliseconds(),
		ActMs: config.GuardAct.Milliseconds(), Pid: g.rep.Pid, Targets: g.rep.Targets, NotRenewing: g.why, Error: g.last.Err}
	if st.Armed {
		st.LeftMs = max(0, (time.Duration(g.rep.Deadline) - guard.BootNow()).Milliseconds())
	}
	if f := g.rep.Fired; f != nil {
		st.LastFired = &dataset.GuardFired{At: f.At, LateMs: f.Late.Milliseconds(), Services: f.Services()}
	}
	return st
}

// explainGuard is svcmgr explain's word on the guards of svc's nodes:
// this node's guard and the instance here, and each other node's armed
// guard as it publishes it (the takeover of a lost node counts on it).
func (d *Daemon) explainGuard(svc string, nodes []string) []string {
	var out []string
	g := &d.gl
	inst := d.services[svc]
	switch {
	case !g.on:
		out = append(out, d.node.Name+": no guard (node.guard = false): a killed or paused daemon leaves its instances running")
	case inst == nil || inst.cfg == nil || inst.cfg.Orchestrate != "ha":
		out = append(out, d.node.Name+": the guard does not end "+svc+" (orchestrate is not ha: no peer starts it by itself)")
	case slices.ContainsFunc(g.kill, func(t guard.Target) bool { return t.Service == svc }):
		s := fmt.Sprintf("%s: %s is in the kill set: the guard ends it %s after the daemon's last renewal (+%s)", d.node.Name, svc, g.lease, config.GuardAct)
		if g.why != "" {
			s += "; NOT RENEWED: " + g.why
		}
		out = append(out, s)
	default:
		out = append(out, d.node.Name+": "+svc+" does not run here: not in the guard's kill set")
	}
	for _, n := range nodes {
		if n == d.node.Name {
			continue
		}
		if p, ok := d.core.Peer(n); ok && p.Data != nil && p.Data.Guard != nil {
			gi := p.Data.Guard
			out = append(out, fmt.Sprintf("%s: guard armed (lease %s, act %s): a takeover of its services counts on it", n,
				time.Duration(gi.LeaseMs)*time.Millisecond, time.Duration(gi.ActMs)*time.Millisecond))
		}
	}
	return out
}
