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
// 3.1). The loop renews the lease first thing in a pass (guardStep), only
// when the renewal moves the lease's end (guardCarries): an anchored
// lease when a newer acknowledgement arrived, looked at on its arrival
// (guardAcks) and every config.GuardRenewEvery at most; a lease of now + guard_lease once what
// is left of it fell to guard_lease - the slack (guardSlack), the loop
// waking for that and for nothing else (guardDue). A loop that is wedged
// or paused renews nothing, and the guard ends the failover services when
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
	// lookAt is the CLOCK_BOOTTIME when the loop looks at the lease next
	// (guardStep; the loop's timer is armed for it: guardDue); loopAt is
	// that of the last pass (the heartbeat's Mute reads it from its
	// goroutines, whatever the guard is sent).
	lookAt time.Duration
	loopAt atomic.Int64
	// force: the next pass makes its exchange even if it carries nothing
	// (an answer taken outside the loop's exchanges goes to the core)
	force bool
	// ackNew: a peer acknowledged a newer beat of this node since the
	// last look (the heartbeat's AckedNotify, taken by the loop while
	// the lease may be anchored: guardAcks): the next pass looks.
	ackNew bool
	// boot reads CLOCK_BOOTTIME (guard.BootNow; tests give their own)
	boot func() time.Duration
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
	d.guardBegin()
}

// guardBegin starts the worker and renews the lease at once, the client
// connected.
func (d *Daemon) guardBegin() {
	g := &d.gl
	g.jobs = make(chan guardJob, 1)
	go d.guardWorker(g.jobs)
	now := g.bootNow()
	req := d.guardRequest(now)
	g.lookAt = d.guardNextLook(now, req)
	d.guardExchange(req, false)
}

func (g *guardLink) bootNow() time.Duration {
	if g.boot != nil {
		return g.boot()
	}
	return guard.BootNow()
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
	g.spawnedAt = g.bootNow()
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
// the loop is alive (Mute), whatever is sent to the guard. Once the look
// is due (lookAt), or at once when the guard does not hold the kill set,
// the lease is renewed when that moves its end (guardCarries), or, when
// the node may not run its services, only asked about, by the worker.
// When the pass comes a renewal period or more after the look was due
// (the daemon was paused or wedged) the exchange is made here, before the
// pass's input: a daemon resumed learns first whether its guard acted.
func (d *Daemon) guardStep() {
	g := &d.gl
	if !g.on {
		return
	}
	now := g.bootNow()
	g.loopAt.Store(int64(now))
	late := now - g.lookAt
	if g.maint || !guardLooks(late, g.ackNew, g.held == g.gen, g.force, g.inflight) {
		return
	}
	g.ackNew = false
	req := d.guardRequest(now)
	g.lookAt = d.guardNextLook(now, req)
	if late >= config.GuardRenewEvery {
		g.force = false
		d.guardExchange(req, false)
		return
	}
	if req.Op == guard.OpRenew && !req.SetKill && !g.force && g.why == g.last.NotRenewed && g.last.Err == "" &&
		guardCarries(g.rep, req.Deadline, now) == "" {
		return // the guard holds that end already, the core knows it is renewed: nothing to send
	}
	g.force = false
	g.seq++
	select {
	case g.jobs <- guardJob{req: req, seq: g.seq}:
		g.inflight = true
	default: // the worker is still busy: a later pass tries again
		g.lookAt = min(g.lookAt, now+config.GuardRenewEvery)
	}
}

// guardLooks says whether a pass looks at the lease: late after the look
// was due, or at once when a peer acknowledged a newer beat (ackNew), the
// guard does not hold the kill set, or an answer waits for the core
// (force); not while the worker's exchange is in flight, unless the look
// is a renewal period late (a newer acknowledgement is then looked at
// after the answer, which is an input of the loop).
func guardLooks(late time.Duration, ackNew, killHeld, force, inflight bool) bool {
	if inflight && late < config.GuardRenewEvery {
		return false
	}
	return late >= 0 || ackNew || !killHeld || force
}

// guardAcks is the heartbeat's AckedNotify while the lease may be
// anchored on the acknowledged beats (cluster.quorum on, peers to
// acknowledge), else nil (a loop that selects it never wakes for it):
// a newer acknowledgement is what moves an anchored lease's end, and it
// arrives with the peers' beats, in step with this node's own round
// (heartbeat: beats in step). Looked at on its arrival, the renewal goes
// in the same wake-up as the round instead of at a phase of its own
// (the loop's timer, R after the last look, stays the bound).
func (d *Daemon) guardAcks() <-chan struct{} {
	g := &d.gl
	if !g.on || g.maint || d.hb == nil || d.cluster == nil || !d.cluster.Quorum {
		return nil
	}
	return d.hb.AckedNotify()
}

// guardCarries says what a renewal to deadline (CLOCK_BOOTTIME, ns) at
// now brings a guard whose last answer was held: "" when nothing (the
// guard holds that end already, within guardSame). Any earlier end is
// sent (the safe direction: the guard must act no later than the core's
// lease says); a later one only by more than guardSame, so that a lease
// anchored on the acknowledged beats is renewed once per newer
// acknowledgement, not once per pass.
func guardCarries(held guard.Reply, deadline int64, now time.Duration) string {
	want, end := time.Duration(deadline), time.Duration(held.Deadline)
	switch {
	case !held.Armed || held.Error != "":
		return "not armed"
	case want < end-guardSameEarlier:
		return "an earlier end"
	case want > end+guardSameLater:
		return "a later end"
	}
	return ""
}

// A renewal whose end is within guardSameEarlier before, or guardSameLater
// after, the end the guard holds carries nothing. The end is computed
// from two clocks (the loop's and CLOCK_BOOTTIME) read one after the
// other, so the same anchor gives ends a few microseconds apart (earlier,
// never later: BOOTTIME is read first); an end held later than the true
// one by guardSameEarlier at most is within the guard's margin, one held
// earlier only makes it act sooner.
const (
	guardSameEarlier = time.Millisecond
	guardSameLater   = 5 * time.Millisecond
)

// guardSlack is D of docs/behaviour.md 3.1: a lease of now + L (not
// anchored) is renewed once what is left of it fell to L - D. With
// cluster.quorum on, D is GuardRenewEvery (the check of guard_lease
// against the arbitrators' timeout counts on it); a lease of 2D or less
// is renewed at half its length.
func (d *Daemon) guardSlack() time.Duration {
	if d.cluster != nil && d.cluster.Quorum {
		return config.GuardRenewEvery
	}
	return min(config.GuardSlack, d.gl.lease/2)
}

// guardNextLook is when the loop looks at the lease next after the look
// at now that made req.
func (d *Daemon) guardNextLook(now time.Duration, req guard.Request) time.Duration {
	return guardNextLook(now, req, d.gl.rep, d.gl.lease, d.guardSlack())
}

// guardNextLook is when the loop looks at the lease next after the look
// at now that made req, the guard's last answer being held. A renewal to
// now + lease (not anchored: its end moves with time alone) is due once
// what is left of the end the guard holds fell to lease - slack, and
// nothing needs the loop before; otherwise (an anchored lease, which
// moves when a newer acknowledgement arrives; a status request) a
// renewal period later.
func guardNextLook(now time.Duration, req guard.Request, held guard.Reply, lease, slack time.Duration) time.Duration {
	if req.Op != guard.OpRenew || time.Duration(req.Deadline)-now != lease {
		return now + config.GuardRenewEvery
	}
	end := time.Duration(req.Deadline)
	if guardCarries(held, req.Deadline, now) == "" {
		end = time.Duration(held.Deadline) // not sent: the end held
	}
	return max(end-lease+slack, now+config.GuardRenewEvery/2)
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
		if g.bootNow()-g.spawnedAt > guardRespawnEvery {
			d.spawnGuard()
		}
		g.lookAt = min(g.lookAt, g.bootNow()+config.GuardRenewEvery)
	} else {
		in.Armed, in.Maintenance = rep.Armed, rep.Armed && maint
		g.held, g.rep = rep.Gen, rep
		if rep.Error != "" || j.req.Op == guard.OpRenew && !rep.Armed {
			// refused, or fired first: looked at again a period later
			g.lookAt = min(g.lookAt, g.bootNow()+config.GuardRenewEvery)
		}
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
	req := guard.Request{Op: guard.OpRenew, Deadline: int64(g.bootNow() + lease), Gen: g.gen, SetKill: true, Kill: g.kill}
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
	return at != 0 && d.gl.bootNow()-time.Duration(at) > d.gl.lease
}

// guardDue is when the loop must pass next for the guard (zero: never):
// its next look, at once when an answer waits for the core (force).
func (d *Daemon) guardDue() time.Time {
	g := &d.gl
	if !g.on || g.maint {
		return time.Time{}
	}
	if g.force {
		return d.clk.Now()
	}
	return d.clk.Now().Add(max(g.lookAt-g.bootNow(), 0))
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
	now := g.bootNow()
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
	g.force = true // the next pass hands an answer to the core
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
		st.LeftMs = max(0, (time.Duration(g.rep.Deadline) - g.bootNow()).Milliseconds())
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
