package node

import (
	"errors"
	"fmt"
	"time"

	"haven/dataset"
	"haven/node/instsm"
)

// Resource faults (the OCF agents' exit codes, as Pacemaker reads them):
// a check says, in dataset.Resource.Fault, that a resource cannot run on
// this node ("hard": the agent is not installed here, or its monitor
// exited 2 to 5) or is not configured right ("fatal": exit 6); a failed
// action says the same in its error (an error with a Fault method).
//
//   - hard: this node is out of the service's candidates while the fault
//     lasts (Instance.Excluded, as a monitor_action switch's exclusion; it
//     ends by itself once a check finds the resource fine again, e.g. the
//     agent installed), and an instance running here is stopped so that
//     the next node takes the service. A start that fails hard leaves the
//     instance `start failed`, which keeps the node out until a clear.
//   - fatal: the service is stopped everywhere and frozen (the cluster
//     target `stopped`, which freezes every instance, then stops it where
//     it runs), with an error event naming the resource and the agent's
//     reason: no node can run a resource configured wrong. `svcmgr start`
//     once the config is fixed.
//
// Optional and disabled resources have no say.

// Fault severities of dataset.Resource.Fault.
const (
	FaultHard  = "hard"
	FaultFatal = "fatal"
)

// faultOf returns the first resource of the instance (in start order)
// whose last check found a fault of severity sev, with its reason.
func faultOf(inst *instsm.Instance, sev string) (rid, reason string) {
	for _, spec := range inst.Spec.Resources {
		r, ok := inst.Res[spec.RID]
		if ok && r.Fault == sev && !r.Optional && !r.Disabled {
			return spec.RID, r.Log
		}
	}
	return "", ""
}

// hardExclusion is why the node is out of the instance's candidates for
// a hard fault ("" when none).
func hardExclusion(inst *instsm.Instance) string {
	rid, reason := faultOf(inst, FaultHard)
	if rid == "" {
		return ""
	}
	return dataset.FaultExclusion(rid, reason)
}

// excludedText is the Instance.Excluded published: a monitor_action
// switch's exclusion (durable), else a hard fault's (while it lasts).
func excludedText(switched string, inst *instsm.Instance) string {
	if switched != "" {
		return switched
	}
	return hardExclusion(inst)
}

// resourceFaults acts on the faults of the last check of a local
// instance (checkDone).
func (c *Core) resourceFaults(svc string, inst *instsm.Instance, now time.Time) {
	if !inst.Local || !inst.Spec.Runnable {
		return
	}
	hardRID, _ := faultOf(inst, FaultHard)
	hard := hardExclusion(inst)
	fatalRID, fatalWhy := faultOf(inst, FaultFatal)
	key := hard + "\x00" + fatalRID + ": " + fatalWhy
	if key != inst.Chk.Faults {
		inst.Chk.Faults = key
		c.publish() // Instance.Excluded changed
		if hard != "" {
			c.emit(ResourceFault{Svc: svc, RID: hardRID, Severity: FaultHard,
				Reason: hard + ": this node is out of the service's candidates while it lasts"})
		}
		if fatalRID != "" {
			c.fatalFault(svc, fatalRID, fatalWhy)
		}
	}
	switch {
	case fatalRID != "":
		// its state is not known: stopped here at once (the target
		// stops it where else it runs), and the ladder stays out
		c.stopFaulted(svc, inst, fatalRID+" is not configured right", now)
	case hard != "":
		c.stopFaulted(svc, inst, hard, now)
	}
}

// stopFaulted stops the instance running here when one of its resources
// cannot run here (the next node takes the service) or is not configured
// right.
func (c *Core) stopFaulted(svc string, inst *instsm.Instance, why string, now time.Time) {
	if inst.Act.Busy != "" || inst.Chk.Ending != nil || inst.Chk.Checking || c.stopping ||
		inst.Mon.LocalExpect != dataset.ExpectStarted || inst.Mon.State != dataset.Idle ||
		c.state.Services[svc].Frozen || c.state.NodeFrozen || c.state.SplitFrozen {
		return
	}
	c.expect(svc, inst, dataset.ExpectNone)
	c.beginTocStop(svc, inst, why+": stopped here, the service goes to a node that can run it", now)
}

// fatalFault stops the service everywhere and freezes it (the target
// stopped), once: not again while that target stands.
func (c *Core) fatalFault(svc, rid, why string) {
	reason := fmt.Sprintf("%s is not configured right (%s): the service is stopped on every node and frozen; fix the config, then svcmgr start", rid, why)
	c.emit(ResourceFault{Svc: svc, RID: rid, Severity: FaultFatal, Reason: reason})
	if t := c.state.Services[svc].Target; t.Active() && t.Expect == dataset.ExpectStopped {
		return
	}
	c.setTarget(svc, dataset.Target{Expect: dataset.ExpectStopped})
}

// actionFault takes the fault of a failed action (its error's Fault): a
// fatal one stops and freezes the service as a check's would.
func (c *Core) actionFault(svc string, err error) {
	var f interface{ Fault() (string, string) }
	if err == nil || !errors.As(err, &f) {
		return
	}
	if rid, sev := f.Fault(); sev == FaultFatal {
		c.fatalFault(svc, rid, err.Error())
	}
}

// ResourceFault: a resource cannot run on this node (hard), or is not
// configured right (fatal).
type ResourceFault struct {
	Svc      string `json:"svc"`
	RID      string `json:"rid"`
	Severity string `json:"severity"`
	Reason   string `json:"reason"`
}

func (ResourceFault) Kind() string      { return "resource_fault" }
func (e ResourceFault) Service() string { return e.Svc }
func (ResourceFault) Level() Level      { return Error }
func (e ResourceFault) String() string {
	return e.Severity + " fault of " + e.RID + ": " + e.Reason
}
