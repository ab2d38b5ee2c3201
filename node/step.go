package node

import (
	"time"

	"haven/dataset"
	"haven/node/instsm"
	"haven/node/peersm"
	"haven/quorum"
)

// Input is one input of the core, as a value: the driver hands every input
// to Step, so that the inputs of a run can be logged and replayed. The
// queries (Instance, Peer, Status, Snapshot, ...) stay methods: they change
// nothing.
type Input interface{ isInput() }

// The inputs that are not requests of their own. Each carries Now where
// time matters.
type (
	// Started is the start of the daemon's loop (start).
	Started struct{ Now time.Time }
	// PeerNews is the heartbeat's news of a peer (heartbeat).
	PeerNews struct {
		Event PeerEvent
		Now   time.Time
	}
	// Ticked is the periodic tick (tick).
	Ticked struct{ Now time.Time }
	// Woken is the end of the wake-up timer armed at Ready.WakeAt (wakeUp).
	Woken struct{}
	// Resumed: the host was suspended for Slept, which Now does not count
	// (its clock is CLOCK_MONOTONIC's); the driver says it before any
	// other input once the host runs again (resume).
	Resumed struct {
		Slept time.Duration
		Now   time.Time
	}
	// Pass is a decision pass; ViewOnly when only the view changed since
	// the last one (passView), else a full one (pass).
	Pass struct {
		Now      time.Time
		ViewOnly bool
	}
	// Persisted is the outcome of the write of the state numbered Seq
	// (persistDone).
	Persisted struct {
		Seq uint64
		Err error
		Now time.Time
	}
	// RetryWrite is the tick's retry of a failing state write
	// (retryPersist).
	RetryWrite struct{}
	// Acted is the end of an action (actionDone).
	Acted struct {
		Service, Kind string
		Err           error
		Now           time.Time
	}
	// Checked is the end of a status check (checkDone).
	Checked struct {
		Check     Check
		Resources map[string]dataset.Resource
		Now       time.Time
	}
	// CheckOrdered orders a full status check of Service (checkNow).
	CheckOrdered struct{ Service string }
	// ConfigWritten is a config file written or removed (configDone).
	ConfigWritten struct {
		Service string
		Err     error
		Now     time.Time
	}
	// MoreConfigs goes on with the peers' configs left over (mergeMore).
	MoreConfigs struct{ Now time.Time }
	// Voted is an arbitrator's answer (arbitratorResult).
	Voted struct {
		Arbitrator string
		OK         bool
		Detail     string
		Sent, Now  time.Time
	}
	// Granted is a one-vote arbitrator's answer (oneVoteResult).
	Granted struct {
		Arbitrator string
		Grant      quorum.GrantAnswer
		ErrText    string
		Sent, Now  time.Time
	}
	// FenceEnded is the end of a fence (fenceEnded); How says how it was
	// done when it was not by a fence command (through the disk).
	FenceEnded struct {
		Node string
		How  string
		Err  error
		Now  time.Time
	}
	// Stopping is the stop of the daemon (beginStop).
	Stopping struct {
		Mode string
		Now  time.Time
	}
	// NodeAdmin is a node action, freeze, thaw or drain (adminNode): it
	// has a ticket.
	NodeAdmin struct {
		Action string
		Now    time.Time
	}
	// Deletion deletes a service everywhere (deleteService): it has a
	// ticket.
	Deletion struct {
		Service string
		Now     time.Time
		// Sig is the admin's signature of the deletion (svcmgr delete
		// --key), needed with [admin_keys] (node/configsigned.go).
		Sig string
	}
	// CheckWait answers once the next full check of Service ended
	// (whenChecked): it has a ticket.
	CheckWait struct{ Service string }
	// Barrier answers once every state handed out is on disk
	// (afterPersist, from the PersistSeq of when the request began): it
	// has a ticket.
	Barrier struct{ From uint64 }
	// FrozenSet freezes or thaws the local instance of Service by the
	// daemon's own decision (setFrozen).
	FrozenSet struct {
		Service string
		Frozen  bool
		Reason  string
	}
	// NodeFrozenSet freezes or thaws this node by the daemon's own
	// decision (setNodeFrozen).
	NodeFrozenSet struct {
		Frozen bool
		Reason string
	}
	// NodeMonitorSet sets the node monitor state (setNodeMonitor).
	NodeMonitorSet struct {
		Monitor dataset.NodeMonitor
		Reason  string
	}
	// InstanceInstalled adds or replaces the instance of a config
	// (addInstance).
	InstanceInstalled struct {
		Service string
		Spec    instsm.Spec
		Now     time.Time
	}
	// InstanceRemoved forgets the instance of a deleted config
	// (removeInstance).
	InstanceRemoved struct{ Service string }
	// OwnAction is the driver's own start or stop of the local instance
	// of Service (a deletion, this node removed from the service's
	// nodes, a stop after a fence): it has a ticket, answered when the
	// action ends, or at once when it cannot run (runAction).
	OwnAction struct {
		Service, Kind, Reason string
		Now                   time.Time
	}
	// LocalFileRead is a config file read at start-up (checkLocalFile):
	// one changed outside Haven gets a new version.
	LocalFileRead struct {
		Service string
		Raw     []byte
	}
	// Durable says that the state, as it is now, is what the state file
	// holds: the driver wrote it itself or read it back (markDurable).
	Durable struct{}
	// IdentityRecorded records the cluster this node is a member of
	// (nil: alone), checked by the driver at start-up against the one
	// recorded.
	IdentityRecorded struct{ Cluster *ClusterIdentity }
	// IncarnationRecorded records the number of this run in the
	// heartbeat envelope, chosen by the driver at start-up.
	IncarnationRecorded struct{ Incarnation uint64 }
	// ServiceKept keeps the durable state of a service whose config is
	// there but does not parse (created empty when there is none).
	// Restore: the file was refused for its signature (changed outside
	// Haven on a cluster with admin keys): the content recorded for its
	// version is taken back from a peer that holds it.
	ServiceKept struct {
		Service string
		Restore bool
	}
	// ServiceForgotten forgets the durable state of a service that has no
	// config file any more, read at start-up.
	ServiceForgotten struct{ Service string }
)

func (Started) isInput()             {}
func (PeerNews) isInput()            {}
func (Ticked) isInput()              {}
func (Woken) isInput()               {}
func (Resumed) isInput()             {}
func (Pass) isInput()                {}
func (Persisted) isInput()           {}
func (RetryWrite) isInput()          {}
func (Acted) isInput()               {}
func (Checked) isInput()             {}
func (CheckOrdered) isInput()        {}
func (ConfigWritten) isInput()       {}
func (MoreConfigs) isInput()         {}
func (Voted) isInput()               {}
func (Granted) isInput()             {}
func (FenceEnded) isInput()          {}
func (Stopping) isInput()            {}
func (NodeAdmin) isInput()           {}
func (Deletion) isInput()            {}
func (CheckWait) isInput()           {}
func (Barrier) isInput()             {}
func (FrozenSet) isInput()           {}
func (NodeFrozenSet) isInput()       {}
func (NodeMonitorSet) isInput()      {}
func (InstanceInstalled) isInput()   {}
func (InstanceRemoved) isInput()     {}
func (OwnAction) isInput()           {}
func (LocalFileRead) isInput()       {}
func (Durable) isInput()             {}
func (IdentityRecorded) isInput()    {}
func (IncarnationRecorded) isInput() {}
func (ServiceKept) isInput()         {}
func (ServiceForgotten) isInput()    {}
func (TargetRequest) isInput()       {}
func (LocalRequest) isInput()        {}
func (ConfigRequest) isInput()       {}

// Step takes one input. It returns the ticket of the answer of a request
// (TargetRequest, LocalRequest, ConfigRequest, NodeAdmin, Deletion,
// CheckWait, Barrier, OwnAction), zero for the other inputs. What the input asks of
// the driver is in the next Ready.
func (c *Core) Step(in Input) Ticket {
	switch in := in.(type) {
	case Started:
		c.start(in.Now)
	case PeerNews:
		c.heartbeat(in.Event, in.Now)
	case Ticked:
		c.tick(in.Now)
	case Woken:
		c.wakeUp()
	case Resumed:
		c.resume(in.Slept, in.Now)
	case Pass:
		c.orchestrate(in.Now, in.ViewOnly)
	case Persisted:
		c.persistDone(in.Seq, in.Err, in.Now)
	case RetryWrite:
		c.retryPersist()
	case Acted:
		c.actionDone(in.Service, in.Kind, in.Err, in.Now)
	case Checked:
		c.checkDone(in.Check, in.Resources, in.Now)
	case CheckOrdered:
		c.checkNow(in.Service)
	case ConfigWritten:
		c.configDone(in.Service, in.Err, in.Now)
	case MoreConfigs:
		c.mergeMore(in.Now)
	case Voted:
		c.arbitratorResult(in.Arbitrator, in.OK, in.Detail, in.Sent, in.Now)
	case Granted:
		c.oneVoteResult(in.Arbitrator, in.Grant, in.ErrText, in.Sent, in.Now)
	case FenceEnded:
		c.fenceDone(in.Node, in.How, in.Err, in.Now)
	case Stopping:
		c.beginStop(in.Mode, in.Now)
	case NodeAdmin:
		return c.adminNode(in.Action, in.Now)
	case Deletion:
		return c.deleteService(in.Service, in.Sig, in.Now)
	case CheckWait:
		return c.whenChecked(in.Service)
	case Barrier:
		return c.afterPersist(in.From)
	case FrozenSet:
		c.setFrozen(in.Service, in.Frozen, in.Reason)
	case NodeFrozenSet:
		c.setNodeFrozen(in.Frozen, in.Reason)
	case NodeMonitorSet:
		c.setNodeMonitor(in.Monitor, in.Reason)
	case InstanceInstalled:
		c.addInstance(in.Service, in.Spec, in.Now)
	case InstanceRemoved:
		c.removeInstance(in.Service)
	case OwnAction:
		tk, err := c.runAction(in.Service, in.Kind, in.Reason, in.Now)
		if err != nil {
			tk = c.newTicket()
			c.answer(Answer{Ticket: tk, Err: err})
		}
		return tk
	case LocalFileRead:
		c.checkLocalFile(in.Service, in.Raw)
	case Durable:
		c.markDurable()
	case IdentityRecorded:
		c.state.Cluster = in.Cluster
		c.persist()
	case IncarnationRecorded:
		c.state.Incarnation = in.Incarnation
		c.persist()
	case ServiceKept:
		c.install(in.Service)
		if in.Restore {
			c.cd.Restore(in.Service)
		}
	case ServiceForgotten:
		if _, ok := c.state.Services[in.Service]; ok {
			delete(c.state.Services, in.Service)
			c.persist()
		}
	case DiskRead:
		c.diskRead(in.Lost, in.Now)
	case GuardReported:
		c.guardReport(in)
	case TargetRequest:
		return c.adminTarget(in)
	case LocalRequest:
		return c.adminLocal(in)
	case RolloutRequest:
		return c.beginRollout(in)
	case RollbackRequest:
		return c.rollbackByHand(in)
	case ConfigRequest:
		return c.editConfig(in)
	}
	return 0
}

// New returns the core of a node whose durable state, as read back by the
// driver, is st. The core owns st from now on.
func New(cfg Config, st State) *Core {
	if st.Services == nil {
		st.Services = map[string]ServiceState{}
	}
	if cfg.Local == nil {
		cfg.Local = emptyLocal{}
	}
	c := &Core{cfg: cfg, state: st, insts: map[string]*instsm.Instance{}, targetFailed: map[string]string{}, targetPending: map[string]string{}, drains: map[Ticket]*drain{}, relays: map[Ticket]relay{},
		pv: peersm.View{Compat: true}, monitor: dataset.NodeIdle}
	c.vb.Anchor(st.Lamport)
	c.initPeers()
	c.markDurable()
	return c
}

// Ready returns what the inputs since the last call ask of the driver and
// forgets it.
func (c *Core) Ready() Ready {
	r := c.ready
	c.ready = Ready{}
	c.ps.Hold(&r, c.cfg.WriteThrough)
	c.ps.Drain(&r)
	c.stampAnswers(r.Answers)
	return r
}

// HasReady reports whether Ready would return anything.
func (c *Core) HasReady() bool {
	return !c.ready.Empty() || c.ps.Released()
}
