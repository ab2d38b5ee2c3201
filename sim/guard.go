package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"haven/config"
	"haven/node"
	"haven/quorum"
)

// The node guard (docs/behaviour.md 3.1), with `guard=true` on the cluster
// line (`guard_lease=` its lease, 12s by default): each machine has one,
// which survives its daemon (a pause, a stop) but not the machine (a
// crash). The daemon renews it first thing in a turn with the end the core
// gives (Core.GuardLease, the daemon's own rule: anchored on the beats the
// peers acknowledged with the quorum on, none while the core says the node
// may not run its services), and hands its answer to the core when it
// changed (node.GuardReported), so that the core publishes it armed and
// the peers' takeover gates are the daemon's. When the lease runs out
// unrenewed (the daemon paused, or cut off with the quorum on) the guard
// ends the machine's running failover services by itself (the cluster's
// truth: their processes die at once, its act taking no time here) and
// keeps a record, which the daemon takes in at its next turn
// (guard_fired).
//
// A clean stop (nodemgr daemon stop) leaves the guard the lease that ends
// before maintenance_grace_period (guardMaintenance), or the lease in
// place when the core says the node may not run its services; a daemon
// restart leaves the lease in place (the new daemon renews it); a
// shutdown, its instances stopped, disarms it. The guard survives the
// daemon: a daemon stopped while cut off from its peers, who never hear
// it announce maintenance, has its services ended by its guard before
// their takeover gate opens.
//
// Departure: the guard acts at once (the daemon's has up to 2.5s, which
// the gates count).

// simGuard is a machine's guard.
type simGuard struct {
	armed bool
	until time.Time
	// fired is the record not taken in by a daemon yet; seq numbers them.
	fired *node.GuardFiring
	seq   int
}

// guardStep renews the lease and reports the guard's state to the core
// when it changed (daemon.guardStep, guardAnswer). It reports whether it
// handed the core anything.
func (d *daemon) guardStep() bool {
	if !d.c.opt.Guard {
		return false
	}
	g := &d.n.guard
	now := d.c.clk.Now()
	until, ok, why := d.core.GuardLease(now, func(peer string) (time.Time, bool) {
		a, ok := d.hb.Acked(peer)
		return a.Sent, ok
	})
	if ok && d.mode != "stop" { // a clean stop renews nothing after its maintenance lease
		g.armed, g.until = true, until
	}
	in := node.GuardReported{Armed: g.armed, NotRenewed: why, Fired: g.fired, Now: now}
	g.fired = nil // taken in (acknowledged) by this report
	if in.Armed == d.guardLast.Armed && in.NotRenewed == d.guardLast.NotRenewed && in.Fired == nil {
		return false
	}
	d.guardLast = in
	d.drv.Step(in)
	return true
}

// fireGuards ends the services of every machine whose guard's lease ran
// out; it reports whether one acted.
func (c *Cluster) fireGuards() bool {
	now := c.clk.Now()
	acted := false
	for _, name := range c.names {
		n := c.nodes[name]
		g := &n.guard
		if !g.armed || now.Before(g.until) || !n.machineUp {
			continue
		}
		g.armed = false
		var ended []string
		for svc, up := range c.running[name] {
			if cfg := c.svcs[svc]; up && cfg != nil && cfg.Orchestrate == "ha" {
				c.running[name][svc] = false
				ended = append(ended, svc)
			}
		}
		slices.Sort(ended)
		g.seq++
		g.fired = &node.GuardFiring{ID: fmt.Sprintf("sim-%d", g.seq), At: now, Services: ended}
		c.logf(name, "", "node guard: the lease ran out unrenewed; ended [%s]", strings.Join(ended, " "))
		acted = true
	}
	return acted
}

// guardMaintenance is the guard's share of a clean stop, as the daemon's:
// the lease becomes quorum.GuardMaintenanceLease from now, and nothing
// renews it any more; when the core says the node may not run its
// services, the lease in place stands.
func (d *daemon) guardMaintenance() {
	g := &d.n.guard
	if !d.c.opt.Guard || !g.armed {
		return
	}
	now := d.c.clk.Now()
	if ok, _ := d.core.GuardEntitled(now); ok {
		g.until = now.Add(quorum.GuardMaintenanceLease(d.c.opt.MaintenanceGrace, config.GuardAct))
		d.c.logf(d.name, "", "node guard: the lease now covers maintenance_grace_period (ends at %s)", fmtTime(g.until.Sub(T0)))
	}
}
