package node

import (
	"errors"
	"fmt"
	"time"

	"haven/dataset"
)

// LocalRequest is an admin action on this node's instance of a service
// (svcmgr ... --local): freeze, thaw, start, stop (which also freezes it,
// docs/behaviour.md 5), clear. It acts here, without orchestration.
type LocalRequest struct {
	Service string
	Action  string
	Now     time.Time
	// Force lets a start run here while the service runs on another node
	// (a second copy, on purpose: svcmgr start --local --force).
	Force bool
}

// adminLocal takes a --local action. Its answer comes in a Ready: at once,
// or when the action it started ends.
func (c *Core) adminLocal(req LocalRequest) Ticket {
	tk := c.newTicket()
	svc, now := req.Service, req.Now
	inst := c.insts[svc]
	if inst == nil || !inst.Local {
		c.answer(Answer{Ticket: tk, Bad: true, Err: fmt.Errorf("%s: this node is not one of the service's nodes", svc)})
		return tk
	}
	if err := c.undoneByTarget(svc, req.Action); err != nil {
		c.answer(Answer{Ticket: tk, Err: err})
		return tk
	}
	switch req.Action {
	case "freeze", "thaw":
		c.setFrozen(svc, req.Action == "freeze", "admin "+req.Action+" --local")
		c.answer(Answer{Ticket: tk, Result: req.Action + " done"})
	case "start":
		if avail, running := c.Status(svc); avail == dataset.StatusUp || avail == dataset.StatusNA && running {
			// a start would run a second copy: nothing to do
			c.answer(Answer{Ticket: tk, Result: "already up: nothing done"})
			return tk
		}
		// refused where it would run a second copy of a service that runs
		// elsewhere, as restart is, unless forced
		if n := inst.Lad.UpElsewhere; n != "" && !req.Force && c.isFlex(svc) {
			c.answer(Answer{Ticket: tk, Err: fmt.Errorf("%s is a flex service up on %s: the daemon starts its instances up to flex_target (svcmgr -s %s scale --to N); start --local --force runs one more here", svc, n, svc)})
			return tk
		}
		if n := inst.Lad.UpElsewhere; n != "" && !req.Force {
			c.answer(Answer{Ticket: tk, Err: fmt.Errorf("%s runs on %s: starting it here would run a second copy; move it (svcmgr -s %s switch --to %s), or start --local --force", svc, n, svc, c.cfg.Name)})
			return tk
		}
		reason := "admin start --local"
		if req.Force {
			reason += " --force"
		}
		c.runFor(tk, svc, "start", reason, "started", now)
	case "stop":
		// the freeze is written before the stop runs (Ready.Run)
		c.setFrozen(svc, true, "admin stop --local")
		c.runFor(tk, svc, "stop", "admin stop --local", "stopped and frozen", now)
	case "restart":
		// a stop then a start of this node's instance, in one action
		// (restarting throughout: no peer contests meanwhile); refused where
		// it would run a second copy of a service that runs elsewhere
		if n := inst.Lad.UpElsewhere; n != "" && !c.isFlex(svc) {
			c.answer(Answer{Ticket: tk, Err: fmt.Errorf("%s runs on %s: restart it there (svcmgr -s %s restart on %s), or move it (switch --to)", svc, n, svc, n)})
			return tk
		}
		c.runFor(tk, svc, "restart", "admin restart", "restarted", now)
	case "clear":
		if c.clearLocal(svc, "admin clear --local", now) {
			c.answer(Answer{Ticket: tk, Result: "cleared"})
		} else {
			c.answer(Answer{Ticket: tk, Result: "nothing to clear"})
		}
	default:
		c.answer(Answer{Ticket: tk, Bad: true, Err: fmt.Errorf("%s does not take --local", req.Action)})
	}
	return tk
}

// undoneByTarget refuses a --local action that the admin target in
// progress for svc would undo once it ended (docs/behaviour.md 5): the
// target drives every instance until it is reached, so a stop --local
// answered "stopped and frozen" during a thaw target was thawed again
// right after its answer. A target reached but on nodes shut down
// (pendingOnly) drives nothing here; clear never conflicts.
func (c *Core) undoneByTarget(svc, action string) error {
	cur := c.state.Services[svc].Target
	if !activeTarget(cur) || c.pendingOnly(svc, cur) {
		return nil
	}
	var undone bool
	elsewhere := cur.Node == "" || cur.Node != c.cfg.Name // a giveback's destination is the leader's to say
	switch cur.Expect {
	case dataset.ExpectFrozen:
		undone = action == "thaw"
	case dataset.ExpectThawed:
		undone = action == "freeze" || action == "stop"
	case dataset.ExpectStopped:
		undone = action == "thaw" || action == "start" || action == "restart"
	case dataset.ExpectStarted:
		undone = action == "freeze" || action == "stop"
	case dataset.ExpectPlaced:
		undone = action == "freeze" || action == "stop" || elsewhere && (action == "start" || action == "restart")
	}
	if !undone {
		return nil
	}
	return failedf("%s: target %s (id %s) is in progress and would undo %s --local: wait for it (svcmgr -s %s %s --wait), or run abort first",
		svc, cur.String(), cur.ID, action, svc, targetVerb(cur))
}

// targetVerb is the svcmgr action that sets a target like t.
func targetVerb(t dataset.Target) string {
	switch t.Expect {
	case dataset.ExpectStarted:
		return "start"
	case dataset.ExpectStopped:
		return "stop"
	case dataset.ExpectFrozen:
		return "freeze"
	case dataset.ExpectThawed:
		return "thaw"
	case dataset.ExpectPlaced:
		if t.Node != "" {
			return "switch --to " + t.Node
		}
		return "giveback"
	}
	return t.Expect
}

// runFor runs an action for the request of ticket tk, answered with ok
// when it succeeds.
func (c *Core) runFor(tk Ticket, svc, kind, reason, ok string, now time.Time) {
	atk, err := c.runAction(svc, kind, reason, now)
	if err != nil {
		c.answer(Answer{Ticket: tk, Err: err})
		return
	}
	c.relays[atk] = relay{to: tk, ok: ok}
}

// adminNode takes a node action: freeze, thaw, drain (freeze the node,
// then stop every local instance that runs; the answer comes when every
// stop has ended).
func (c *Core) adminNode(action string, now time.Time) Ticket {
	tk := c.newTicket()
	switch action {
	case "freeze", "thaw":
		c.setNodeFrozen(action == "freeze", "admin "+action)
		if action == "thaw" {
			// an admin's thaw ends a split freeze too: the node is back
			// in the race at once (its takeovers still wait for the
			// quorum and their gates)
			c.setSplitFrozen(false, "admin thaw")
		}
		c.answer(Answer{Ticket: tk})
	case "drain":
		c.setNodeFrozen(true, "admin drain")
		c.setNodeMonitor(dataset.NodeDraining, "admin drain")
		d := &drain{ticket: tk, pending: map[Ticket]bool{}}
		for _, inst := range c.ilist {
			svc := inst.Name
			if _, running := c.Status(svc); !inst.Local || !inst.Spec.Runnable || !running {
				continue
			}
			atk, err := c.runAction(svc, "stop", "node drain", now)
			if err != nil {
				d.errs = append(d.errs, err)
				continue
			}
			d.pending[atk] = true
			c.drains[atk] = d
		}
		if len(d.pending) == 0 {
			c.drainDone(d)
		}
	default:
		c.answer(Answer{Ticket: tk, Bad: true, Err: fmt.Errorf("unknown node action %q (freeze | thaw | drain)", action)})
	}
	return tk
}

func (c *Core) drainOf(tk Ticket) *drain { return c.drains[tk] }

// drainStep takes the end of one stop of a drain.
func (c *Core) drainStep(d *drain, tk Ticket, err error) {
	delete(c.drains, tk)
	delete(d.pending, tk)
	if err != nil {
		d.errs = append(d.errs, err)
	}
	if len(d.pending) == 0 {
		c.drainDone(d)
	}
}

func (c *Core) drainDone(d *drain) {
	c.setNodeMonitor(dataset.NodeIdle, "drain done")
	c.answer(Answer{Ticket: d.ticket, Err: errors.Join(d.errs...)})
}

// beginStop is the stop of the daemon ("stop", "restart": maintenance,
// the services keep running; "shutdown": every local instance that runs
// is stopped, the node announces shutting). No decision pass runs after.
func (c *Core) beginStop(mode string, now time.Time) {
	if c.stopping {
		return
	}
	c.stopping = true
	c.shutdown = mode == "shutdown"
	if mode == "shutdown" {
		c.setNodeMonitor(dataset.NodeShutting, "daemon shutdown requested")
		for _, inst := range c.ilist {
			svc := inst.Name
			if _, running := c.Status(svc); inst.Local && inst.Spec.Runnable && running {
				c.runAction(svc, "stop", "daemon shutdown", now)
			}
		}
		return
	}
	c.setNodeMonitor(dataset.NodeMaintenance, "daemon "+mode+" requested: services keep running")
}

// Stopping reports whether the daemon stops.
func (c *Core) Stopping() bool { return c.stopping }
