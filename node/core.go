package node

import (
	"math"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node/configdist"
	"haven/node/incpass"
	"haven/node/instsm"
	"haven/node/peersm"
	"haven/node/persist"
	"haven/node/quorumsm"
	"haven/node/versionbound"
)

// Core is one node's logic, driven by package driver (in package
// daemon for real, package sim in the simulation). It does no IO and reads no clock: every
// input that depends on time carries now. After each input the driver
// takes the Ready and carries it out.
type Core struct {
	cfg   Config
	state State

	insts  map[string]*instsm.Instance
	inames []string           // sorted
	ilist  []*instsm.Instance // in name order
	// nextCheck is no later than the first periodic check due (zero:
	// look at every instance at the next tick).
	nextCheck time.Time
	// drains are the node drains in progress, by ticket.
	drains map[Ticket]*drain
	// relays answer a request when the action it started ends.
	relays map[Ticket]relay
	// stopping is set once the daemon stops: no decision pass any more.
	stopping bool
	// shutdown is set when that stop is a shutdown: an instance whose start
	// was in flight is stopped once the start ends.
	shutdown bool

	// pv is what the node knows of the other members (peers.go).
	pv      peersm.View
	monitor dataset.NodeMonitor
	started time.Time
	// lastStep is the time of the last decision pass.
	lastStep time.Time
	// inc is what the incremental passes keep (incremental.go).
	inc incpass.State

	// targetFailed is the last cause given for a service's target that
	// cannot be reached (monitor's Decision.TargetFailed), to say it once.
	targetFailed map[string]string
	// targetPending is, by service, the target (its id, then the nodes)
	// reached but on nodes shut down cleanly (Decision.TargetPending):
	// said once; a new admin target may replace it.
	targetPending map[string]string

	waiters    []waiter
	nextTicket Ticket
	// wasFrozen is the frozen state of a service before an admin action,
	// for its answer (wasfrozen.go).
	wasFrozen map[Ticket]string

	// ps is the acknowledgement of state writes (persist.go).
	ps persist.Book
	// cd is config distribution (configs.go).
	cd configdist.Book
	// vb is the bound of version counters (node/versionbound).
	vb versionbound.Bound
	// q is the quorum's state (quorum.go).
	q quorumsm.State
	// disk is the split decision of a node that lost its fencing disk
	// (disksplit.go).
	disk quorumsm.DiskSplit
	// guard is what the core knows of the node guard (guard.go).
	guard quorumsm.Guard

	ready Ready
}

type emptyLocal struct{}

func (emptyLocal) LocalInfo() dataset.Node                         { return dataset.Node{} }
func (emptyLocal) LocalServices() map[string]*config.ServiceConfig { return nil }

// name returns the node's name.
func (c *Core) name() string { return c.cfg.Name }

// State returns the durable state the core owns. The driver reads it to
// write it.
func (c *Core) State() *State { return &c.state }

func (c *Core) persist()        { c.ready.Persist = &c.state }
func (c *Core) publish()        { c.ready.Publish = true }
func (c *Core) emit(e Event)    { c.ready.Events = append(c.ready.Events, e) }
func (c *Core) answer(a Answer) { c.ready.Answers = append(c.ready.Answers, a) }

// waiter is a --wait caller of target id of svc. A zero deadline waits as
// long as the caller.
type waiter struct {
	ticket   Ticket
	svc, id  string
	deadline time.Time
	result   string // the answer once reached
}

func (c *Core) newTicket() Ticket {
	c.nextTicket++
	return c.nextTicket
}

// nextVersion returns a new logical version for a change made on this node.
func (c *Core) nextVersion() dataset.Version {
	if c.state.Lamport < math.MaxUint64 { // saturates: never wraps to 0
		c.state.Lamport++
	}
	c.persist()
	return dataset.Version{Counter: c.state.Lamport, Origin: c.cfg.Name}
}

// witness advances the Lamport clock past a version seen from a peer,
// once vb.Check took it (a counter ahead of this node's clock is
// refused and never witnessed: versions.go).
func (c *Core) witness(v dataset.Version) {
	if v.Counter > c.state.Lamport {
		c.state.Lamport = v.Counter
		c.persist()
	}
}

// known reports whether the service has durable state here.
func (c *Core) known(svc string) bool {
	_, ok := c.state.Services[svc]
	return ok
}

// Frozen reports whether the instance of svc is frozen (its own flag).
func (c *Core) Frozen(svc string) bool { return c.state.Services[svc].Frozen }

// NodeFrozen reports whether the node is frozen.
func (c *Core) NodeFrozen() bool { return c.state.NodeFrozen }

// Target returns the target of svc this node knows.
func (c *Core) Target(svc string) dataset.Target { return c.state.Services[svc].Target }

// install records svc as known (its config is installed here), with no
// state yet if it had none.
func (c *Core) install(svc string) {
	if _, ok := c.state.Services[svc]; !ok {
		c.state.Services[svc] = ServiceState{}
		c.persist()
	}
}

// setFrozen freezes or thaws the instance of svc.
func (c *Core) setFrozen(svc string, frozen bool, reason string) {
	ss := c.state.Services[svc]
	if ss.Frozen == frozen {
		return
	}
	ss.Frozen = frozen
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
	c.emit(InstanceFrozen{Svc: svc, Frozen: frozen, Reason: reason})
}

// setNodeFrozen freezes or thaws the node.
func (c *Core) setNodeFrozen(frozen bool, reason string) {
	c.setNodeFreeze(&c.state.NodeFrozen, &c.state.NodeFrozenReason, frozen, reason, false)
}

// SplitFrozen reports whether the node is frozen by its split_action.
func (c *Core) SplitFrozen() bool { return c.state.SplitFrozen }

// setSplitFrozen sets or ends the freeze of a split_action stop, apart
// from the node's other freeze (setNodeFrozen): the quorum rule ends it
// (quorum.go), an admin thaw too.
func (c *Core) setSplitFrozen(frozen bool, reason string) {
	c.setNodeFreeze(&c.state.SplitFrozen, &c.state.SplitFrozenReason, frozen, reason, true)
}

// setNodeFreeze sets one of the node's two freezes (flag, with its reason
// while set), durably, and says so.
func (c *Core) setNodeFreeze(flag *bool, why *string, frozen bool, reason string, split bool) {
	if *flag == frozen {
		return
	}
	*flag, *why = frozen, ""
	if frozen {
		*why = reason
	}
	c.persist()
	c.publish()
	c.emit(NodeFrozen{Frozen: frozen, Reason: reason, Split: split})
}

// setLocalState records what must survive a restart of the instance
// monitor of svc: whether its start failed, and its local expect.
func (c *Core) setLocalState(svc string, startFailed bool, localExpect string) {
	ss := c.state.Services[svc]
	if ss.StartFailed == startFailed && ss.LocalExpect == localExpect {
		return
	}
	ss.StartFailed, ss.LocalExpect = startFailed, localExpect
	c.state.Services[svc] = ss
	c.persist()
}

// relay answers a request's ticket when the action it started ends.
type relay struct {
	to Ticket
	ok string
}

// drain is a node drain in progress: the stops it waits for.
type drain struct {
	ticket  Ticket
	pending map[Ticket]bool
	errs    []error
}

// quorumOn reports whether cluster.quorum is on.
func (c *Core) quorumOn() bool { return c.cfg.Quorum.Enabled }

// wakeAt asks the driver to call again at t (the earliest wins).
func (c *Core) wakeAt(t time.Time) {
	if t.IsZero() {
		return
	}
	c.inc.NoteWake(t)
	if c.ready.WakeAt.IsZero() || t.Before(c.ready.WakeAt) {
		c.ready.WakeAt = t
	}
}

// passInstances are the instances the pass under way decides, in name
// order: every one, or those of an incremental pass.
func (c *Core) passInstances() []*instsm.Instance {
	if c.inc.Only == nil {
		return c.ilist
	}
	return c.inc.Only
}

// FlexTarget returns the number of instances the flex service svc keeps
// up as the last decision pass saw it (flex_target, or in the global mode
// the nodes where an instance belongs); false when no pass decided it
// here (the local node is none of its nodes).
func (c *Core) FlexTarget(svc string) (int, bool) {
	inst := c.insts[svc]
	if inst == nil || !inst.Local || !inst.Spec.Flex {
		return 0, false
	}
	return inst.Flex.Target, true
}

// isFlex reports whether svc is a flex service (DEFAULT.topology).
func (c *Core) isFlex(svc string) bool { inst := c.insts[svc]; return inst != nil && inst.Spec.Flex }

// earliest returns the earlier of a and b, ignoring a zero time.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
