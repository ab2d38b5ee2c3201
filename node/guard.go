package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"haven/dataset"
	"haven/quorum"
)

// The node guard (package guard, docs/behaviour.md 3.1): a process of its
// own that ends this node's failover services when the daemon stops
// renewing its lease. The driver renews it from its loop, first thing in a
// pass, while GuardEntitled says the node may run its services, and hands
// every change of the guard's answer to the core (GuardReported): whether
// it is armed (published, for the peers' takeover gate) and what it ended
// when a lease ran out (the event guard_fired; those instances are down
// and expect to run no more here).

// GuardFiring is a record of the guard: what it ended when a lease ran
// out.
type GuardFiring struct {
	// ID names it (the driver acknowledges it to the guard by it).
	ID string `json:"id"`
	// At is when the guard acted; Late how long after the lease's end
	// (its timer ran late: the whole host was frozen).
	At   time.Time     `json:"at"`
	Late time.Duration `json:"late"`
	// Services are the instances it ended.
	Services []string `json:"services"`
	// Acked: a daemon took it in already.
	Acked bool `json:"acked"`
}

// GuardReported is the guard's answer to the driver (a renewal, a status
// request), or its absence (Err): given when it changes.
type GuardReported struct {
	// Armed: the guard holds a lease (it will end the kill set when it
	// runs out); Maintenance: the lease is the one of a clean stop.
	Armed, Maintenance bool
	// Err says why the guard did not answer ("" when it did).
	Err string
	// Fired is the guard's last record (nil: none).
	Fired *GuardFiring
	// NotRenewed says why the driver does not renew the lease now ("":
	// it does; GuardLease).
	NotRenewed string
	Now        time.Time
}

func (GuardReported) isInput() {}

// GuardEntitled reports whether the driver may renew the guard's lease at
// now: the node may run its services. Always with cluster.quorum off;
// with it on, not once the node lost its vote (its split_action's stop
// then has the lease to end before the guard acts), not while a vote
// waits for the arbitrators (the node may be losing it), and not when
// the daemon did not run for longer than hb.timeout (its peers may have
// declared it down: it votes first). why says why not.
func (c *Core) GuardEntitled(now time.Time) (ok bool, why string) {
	if !c.quorumOn() {
		return true, ""
	}
	q := &c.q
	switch {
	case q.Split.Lost:
		return false, "this node lost the quorum"
	case !q.Pending.IsZero():
		return false, "a quorum vote waits for the arbitrators"
	case !q.LastTick.IsZero() && c.cfg.Quorum.HBTimeout > 0 && now.Sub(q.LastTick) > c.cfg.Quorum.HBTimeout:
		return false, fmt.Sprintf("the daemon did not run for %s (more than hb.timeout): it votes first", now.Sub(q.LastTick).Round(time.Millisecond))
	}
	return true, ""
}

// GuardLease is the end of the lease the driver gives the guard at now,
// ok false (why says why) when it renews nothing. With cluster.quorum
// off, or when this node and the plain arbitrators' weight make a quorum
// alone, it is now + the lease. Otherwise the lease is anchored (docs/
// behaviour.md 3.1): each member that acknowledged a message of this node
// (acked: when this node sent the newest one, Heartbeat.Acked) vouches
// for that send time + the lease, each one-vote arbitrator whose lease
// this node counts for the end of that lease (its own estimate,
// quorum.NodeLeaseEnd) less the guard's act and a margin
// (quorum.GuardBeforeGrant); the lease ends at the latest time that enough of
// them vouch for to make a quorum with this node and the plain
// arbitrators, never past now + the lease. A member that acknowledged a
// message sent at a declares this node down no earlier than a +
// hb.timeout: once cut off, the lease runs out without this node's own
// detection or vote.
func (c *Core) GuardLease(now time.Time, acked func(peer string) (time.Time, bool)) (time.Time, bool, string) {
	if ok, why := c.GuardEntitled(now); !ok {
		return time.Time{}, false, why
	}
	lease := c.cfg.Guard.Lease
	full := now.Add(lease)
	if !c.quorumOn() {
		return full, true, ""
	}
	type voucher struct {
		until time.Time
		w     int
	}
	var vs []voucher
	total, have := len(c.cfg.ClusterNodes), 1
	for _, a := range c.cfg.Quorum.Arbitrators {
		w := max(a.Weight, 0)
		total += w
		switch {
		case !a.OneVote:
			have += w
		case c.leaseRuns(a.Name, now):
			// ended early enough for the guard to have acted by the
			// end of this node's estimate of the arbitrator's lease,
			// so before any exclusive grant to another side
			vs = append(vs, voucher{until: c.q.OneVote.Leases[a.Name].Until.Add(-quorum.GuardBeforeGrant(lease, c.cfg.Guard.Act)), w: w})
		}
	}
	if 2*have > total {
		return full, true, ""
	}
	for _, n := range c.pv.Pnames {
		if at, ok := acked(n); ok {
			vs = append(vs, voucher{until: at.Add(lease), w: 1})
		}
	}
	slices.SortFunc(vs, func(a, b voucher) int { return b.until.Compare(a.until) })
	for _, v := range vs {
		if have += v.w; 2*have > total {
			if !v.until.After(now) {
				return time.Time{}, false, fmt.Sprintf("the newest beat of this node acknowledged by enough members for a quorum is older than the lease (%s)", lease)
			}
			if v.until.After(full) {
				return full, true, ""
			}
			return v.until, true, ""
		}
	}
	return time.Time{}, false, "the members that acknowledged this node's beats (and the one-vote arbitrators' leases) do not make a quorum"
}

// guardHoldsStart reports whether the orchestrator's start of svc here
// waits: with the quorum on, the driver does not renew the guard's lease
// (its acknowledged beats are too old, or the node may not run its
// services). The peers count on that lease having run out; a start now
// would not be in the guard's kill set, and could run while a peer takes
// the service over. Said once per service and reason.
func (c *Core) guardHoldsStart(svc string) bool {
	g := &c.guard
	if !c.cfg.Guard.Enabled || !c.quorumOn() || g.NotRenewed == "" {
		return false
	}
	if g.Held != svc+"\x00"+g.NotRenewed {
		g.Held = svc + "\x00" + g.NotRenewed
		c.emit(GuardHeldStart{Svc: svc, Why: g.NotRenewed})
	}
	return true
}

// guardInfo is what this node publishes of its guard (nil: not armed).
func (c *Core) guardInfo() *dataset.GuardInfo {
	if !c.cfg.Guard.Enabled || !c.guard.Armed {
		return nil
	}
	return &dataset.GuardInfo{LeaseMs: c.cfg.Guard.Lease.Milliseconds(), ActMs: c.cfg.Guard.Act.Milliseconds(), Maintenance: c.guard.Maint,
		Anchored: c.quorumOn(), HBTimeoutMs: c.cfg.Quorum.HBTimeout.Milliseconds()}
}

// lostStopBound is how long after lost peer d lost its vote (or its
// one-vote arbitrator lease ended) its services are certainly ended: with
// its guard armed, the guard's lease and act and a margin
// (quorum.GuardStop), nothing when its lease was anchored (its guard
// acted by the end of its arbitrator lease: GuardLease);
// without, its stop budget and a beat for a crash to take it down. The
// takeover gate's one rule for it (updateGates, gateBlocked).
func (c *Core) lostStopBound(d *dataset.Node) (time.Duration, string) {
	if d != nil && d.Guard != nil {
		lease, act := time.Duration(d.Guard.LeaseMs)*time.Millisecond, time.Duration(d.Guard.ActMs)*time.Millisecond
		if d.Guard.Anchored {
			return 0, fmt.Sprintf("nothing more (its anchored guard lease %s ended its act %s and a margin before its arbitrator lease)", lease, act)
		}
		return quorum.GuardStop(lease, act), fmt.Sprintf("its guard's lease %s and act %s", lease, act)
	}
	t := c.timing()
	return t.StopBudget + t.Beat, "its stop budget"
}

// selfStopDeadline is how long after the gate of lost peer d started the
// survivors wait for its services to be certainly ended by its own side.
// For a peer whose guard's lease is anchored on its acknowledged beats:
// quorum.GuardAfterHeard with the shortest hb.timeout of this node and
// its live members (the gate starts no earlier than the declaration of
// the peer down by every one of them, and one of them vouched for the
// peer's lease). Otherwise: its detection of the loss (a beat), its vote
// (the longest arbitrator timeout), then lostStopBound.
func (c *Core) selfStopDeadline(d *dataset.Node) time.Duration {
	if hb, ok := c.anchoredHBTimeout(d); ok {
		lease, act := time.Duration(d.Guard.LeaseMs)*time.Millisecond, time.Duration(d.Guard.ActMs)*time.Millisecond
		return quorum.GuardAfterHeard(lease, act, hb)
	}
	t := c.timing()
	bound := t.StopBudget + t.Beat
	if d != nil && d.Guard != nil {
		bound = quorum.GuardStop(time.Duration(d.Guard.LeaseMs)*time.Millisecond, time.Duration(d.Guard.ActMs)*time.Millisecond)
	}
	return t.Beat + t.ArbitratorTimeout + bound
}

// anchoredHBTimeout is, for peer d whose guard's lease is anchored, the
// shortest hb.timeout of this node and its live members; false when d's
// lease is not anchored, or a live member did not say its hb.timeout (it
// has no armed guard, or an earlier release): the gate is then the
// unanchored one.
func (c *Core) anchoredHBTimeout(d *dataset.Node) (time.Duration, bool) {
	if d == nil || d.Guard == nil || !d.Guard.Anchored || c.cfg.Quorum.HBTimeout <= 0 {
		return 0, false
	}
	hb := c.cfg.Quorum.HBTimeout
	for n := range c.q.Live {
		p := c.pv.Peers[n]
		if p == nil || p.Data == nil || p.Data.Guard == nil || p.Data.Guard.HBTimeoutMs <= 0 {
			return 0, false
		}
		hb = min(hb, time.Duration(p.Data.Guard.HBTimeoutMs)*time.Millisecond)
	}
	return hb, true
}

// guardCoversMaintenance: peer d stopped for maintenance with its guard
// armed on a lease that ends before its grace does: once it is down (its
// grace passed), its services were ended.
func guardCoversMaintenance(d *dataset.Node) bool {
	return d != nil && d.Monitor == dataset.NodeMaintenance && d.Guard != nil && d.Guard.Maintenance
}

// GuardFired: the guard ended instances while the daemon did not renew
// its lease (it was killed, hung, paused, or lost the quorum and did not
// stop them in time).
type GuardFired struct {
	Services []string  `json:"services"`
	At       time.Time `json:"at"`
	Late     string    `json:"late"`
}

func (GuardFired) Kind() string    { return "guard_fired" }
func (GuardFired) Service() string { return "" }
func (GuardFired) Level() Level    { return Error }
func (e GuardFired) String() string {
	what := "nothing was running"
	if len(e.Services) > 0 {
		what = "ended " + strings.Join(e.Services, ", ")
	}
	return fmt.Sprintf("the node guard acted at %s (%s after the lease's end): the daemon had not renewed its lease; %s (those instances stay down here unless the cluster places them here)",
		e.At.UTC().Format("15:04:05.000"), e.Late, what)
}

// GuardState: the guard became armed or not, or stopped answering.
type GuardState struct {
	Armed       bool   `json:"armed"`
	Maintenance bool   `json:"maintenance,omitempty"`
	Err         string `json:"error,omitempty"`
}

func (GuardState) Kind() string    { return "guard" }
func (GuardState) Service() string { return "" }
func (e GuardState) Level() Level {
	if e.Err != "" {
		return Error
	}
	if !e.Armed {
		return Warn
	}
	return Info
}
func (e GuardState) String() string {
	switch {
	case e.Err != "":
		return "the node guard does not answer (" + e.Err + "): the failover services are not guarded; the peers count on this node's own stop"
	case e.Armed && e.Maintenance:
		return "node guard armed for maintenance: it ends the failover services before the peers take them over, unless a daemon is back in time"
	case e.Armed:
		return "node guard armed"
	}
	return "node guard disarmed: it ends nothing"
}

// GuardHeldStart: the orchestrator's start of a service here waits, the
// guard's lease not being renewed.
type GuardHeldStart struct {
	Svc string `json:"svc"`
	Why string `json:"why"`
}

func (GuardHeldStart) Kind() string      { return "guard_held_start" }
func (e GuardHeldStart) Service() string { return e.Svc }
func (GuardHeldStart) Level() Level      { return Warn }
func (e GuardHeldStart) String() string {
	return "start held: the node guard's lease is not renewed (" + e.Why + "): the peers may be taking the service over"
}

// timing is the self-stop timing: the configured one, its stop budget
// raised to the longest stop of a service known here (the sum of its
// resources' timeouts: they stop one after the other, each bounded).
func (c *Core) timing() quorum.Timing {
	t, _ := c.timingOf()
	return t
}

// timingOf is timing and the service whose stop makes the stop budget
// ("" when the configured floor does): what the takeover gate waits, and
// what svcmon and svcmgr explain show of it (SelfStop).
func (c *Core) timingOf() (quorum.Timing, string) {
	t, by := c.cfg.Quorum.Timing, ""
	for name, cfg := range c.cfg.Local.LocalServices() {
		if cfg == nil {
			continue
		}
		var sum time.Duration
		for _, r := range cfg.Resources {
			if !r.Disable {
				sum += r.StopBound() // an ocf agent's stop: its own limit
			}
		}
		// the longest; among equals the first by name, the same every time
		if sum > t.StopBudget || sum == t.StopBudget && by != "" && name < by {
			t.StopBudget, by = sum, name
		}
	}
	return t, by
}
