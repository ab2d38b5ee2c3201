package node

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"haven/dataset"
	"haven/monitor"
	"haven/node/view"
)

// Targets lists the admin targets this node knows, for the heartbeats.
func (c *Core) Targets() map[string]dataset.Target {
	out := map[string]dataset.Target{}
	for name, ss := range c.state.Services {
		if !ss.Target.Version.IsZero() {
			out[name] = ss.Target
		}
	}
	return out
}

// clears lists the clear requests this node relays.
func (c *Core) clears() map[string]dataset.ClearRequest {
	out := map[string]dataset.ClearRequest{}
	for name, ss := range c.state.Services {
		if !ss.Clear.Version.IsZero() {
			out[name] = ss.Clear
		}
	}
	return out
}

// setTarget records a new admin target for a service, cluster-wide.
func (c *Core) setTarget(svc string, t dataset.Target) dataset.Target {
	t.Version = c.nextVersion()
	if t.ID == "" {
		t.ID = fmt.Sprintf("%s-%d", c.cfg.Name, t.Version.Counter)
	}
	ss := c.state.Services[svc]
	ss.Target = t
	noteTargetSerial(&ss, t)
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
	c.emit(TargetSet{Svc: svc, Target: t})
	return t
}

// mergeTargets adopts the targets of peer from that are newer than ours:
// the logical version decides, never a wall clock. A target whose counter
// is ahead of this node's clock is ignored and said (versions.go). Names
// must have been checked by the driver (a hostile name is never passed
// in). snap gives the view, read only when a peer cleared a target that
// has --wait callers here (to tell them where it stands).
func (c *Core) mergeTargets(from string, ts map[string]dataset.Target, now time.Time, snap func() monitor.Snapshot) {
	for _, name := range slices.Sorted(maps.Keys(ts)) {
		t := ts[name]
		ss, ok := c.state.Services[name]
		if err := c.vb.Check(t.Version, now); err != nil {
			if ok { // a service unknown here: not this node's business
				c.sayRefused("target", name, from, t.Version, err)
			}
			continue
		}
		c.witness(t.Version)
		if !ok || !t.Version.Newer(ss.Target.Version) {
			continue
		}
		if err := c.targetRefused(name, t, ss); err != nil {
			if !c.vb.Said("signed target "+name, t.Version) {
				c.emit(TargetRefused{Svc: name, From: from, Target: t, Err: err.Error()})
			}
			continue
		}
		c.emit(TargetAdopted{Svc: name, Target: t})
		if old := ss.Target; old.ID != "" && old.Expect != dataset.ExpectNone && c.waiting(name, old.ID) {
			switch {
			case t.ID == old.ID && t.Expect == dataset.ExpectNone:
				// a peer saw it reached and cleared it: say what this
				// node knows (reached on the known nodes only?)
				s := snap()
				c.answerWaiters(name, old.ID, c.reachedVerdict(s, name, monitor.Unknown(s, name)))
			case t.ID == old.ID && t.Expect == dataset.ExpectAborted:
				c.answerWaiters(name, old.ID, failedf("%s: target %s (id %s) aborted", name, old.String(), old.ID))
			case t.ID != old.ID:
				c.answerWaiters(name, old.ID, failedf("%s: target %s (id %s) replaced by %s (id %s)", name, old.String(), old.ID, t.String(), t.ID))
			}
		}
		ss.Target = t
		noteTargetSerial(&ss, t)
		c.state.Services[name] = ss
		c.persist()
		c.publish()
	}
}

// targetReached clears the reached target of svc and answers its --wait
// callers (with an error when it is reached on the known nodes only:
// unknown, Decision.TargetUnknown, names the nodes not heard).
func (c *Core) targetReached(svc string, unknown []string, snap monitor.Snapshot) {
	t := c.state.Services[svc].Target
	if t.Expect == "" || t.Expect == dataset.ExpectNone {
		return
	}
	c.emit(TargetReached{Svc: svc, Target: t, Unknown: unknown})
	c.setTarget(svc, dataset.Target{Expect: dataset.ExpectNone, ID: t.ID})
	c.answerWaiters(svc, t.ID, c.reachedVerdict(snap, svc, unknown))
}

// reachedVerdict is the answer to the --wait callers of a reached target
// of svc: nil when every node of the service is known, else an error that
// says the target is reached on the known nodes only, and where it stands.
func (c *Core) reachedVerdict(snap monitor.Snapshot, svc string, unknown []string) error {
	if len(unknown) == 0 {
		return nil
	}
	t := c.state.Services[svc].Target
	return failedf("target %s (id %s) reached on the known nodes only: %s: the service may still run where it is unknown",
		t.String(), t.ID, monitor.Progress(snap, svc))
}

// noteTargetFailed takes the last Decision.TargetFailed of svc: a new
// cause is said once (an event) and answers the --wait callers of the
// target, which stays in place.
func (c *Core) noteTargetFailed(svc, cause string) {
	if cause == c.targetFailed[svc] {
		return
	}
	if cause == "" {
		delete(c.targetFailed, svc)
		return
	}
	c.targetFailed[svc] = cause
	t := c.state.Services[svc].Target
	e := TargetFailed{Svc: svc, Target: t, Reason: cause}
	c.emit(e)
	c.answerWaiters(svc, t.ID, failedf("%s", e.String()))
}

// noteTargetPending takes the last Decision.TargetPending of svc: the
// target is reached but on nodes shut down cleanly, which run nothing. It
// is said once (an event), and the --wait callers are answered with
// success; the target stays in place, for those nodes to apply when they
// come back, and a new admin target may replace it (adminTarget).
func (c *Core) noteTargetPending(svc string, nodes []string) {
	if len(nodes) == 0 {
		delete(c.targetPending, svc)
		return
	}
	t := c.state.Services[svc].Target
	key := t.ID + " " + strings.Join(nodes, ",")
	if c.targetPending[svc] == key {
		return
	}
	c.targetPending[svc] = key
	c.emit(TargetPending{Svc: svc, Target: t, Nodes: nodes})
	c.answerWaitersWith(svc, t.ID, "; "+strings.Join(nodes, ",")+" shut down: applied there when back")
}

// pendingOnly reports whether the target cur of svc is reached but on
// nodes shut down cleanly (noteTargetPending).
func (c *Core) pendingOnly(svc string, cur dataset.Target) bool {
	id, _, _ := strings.Cut(c.targetPending[svc], " ")
	return cur.ID != "" && id == cur.ID
}

// applyClear applies a clear request (made here, or heard from a peer)
// that is newer than the one known: a failed state here is reset.
func (c *Core) applyClear(svc string, cr dataset.ClearRequest, now time.Time) {
	ss, ok := c.state.Services[svc]
	if !ok || !cr.Version.Newer(ss.Clear.Version) {
		return
	}
	ss.Clear = cr
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
	if cr.Node == "" || cr.Node == c.cfg.Name {
		c.clearLocal(svc, "admin clear (from "+cr.Version.Origin+")", now)
	}
}

// mergeClears applies the clear requests of peer from that are newer than
// ours (names checked by the driver, as for mergeTargets; a counter ahead
// of this node's clock is ignored and said, as there).
func (c *Core) mergeClears(from string, cs map[string]dataset.ClearRequest, now time.Time) {
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		if err := c.vb.Check(cs[name].Version, now); err != nil {
			if _, ok := c.state.Services[name]; ok {
				c.sayRefused("clear", name, from, cs[name].Version, err)
			}
			continue
		}
		c.witness(cs[name].Version)
		c.applyClear(name, cs[name], now)
	}
}

// TargetRequest is an admin action on a service that is not --local:
// a target (start, stop, switch, takeover, giveback, freeze, thaw...),
// abort, or clear.
type TargetRequest struct {
	Service string
	Action  string
	// Node is --to or --node.
	Node string
	// Nodes are the service's nodes (its config).
	Nodes []string
	// Wait keeps the ticket open until the target is reached (or cannot
	// be, or Deadline passes; a zero Deadline waits as long as the caller).
	Wait     bool
	Deadline time.Time
	// Now is the time of the request.
	Now time.Time
	// Sig is the admin's signature of the target (svcmgr ACTION --key),
	// needed with [admin_keys] (node/configsigned.go).
	Sig string
}

// adminTarget takes an admin's request on a service. Its answer comes in
// a Ready, at once or (Wait) when the target is reached.
func (c *Core) adminTarget(req TargetRequest) Ticket {
	tk := c.newTicket()
	svc := req.Service
	t, isTarget := view.ActionTarget(req.Action, c.cfg.Name, req.Node)
	switch {
	case isTarget:
	case req.Action == "abort":
		cur := c.state.Services[svc].Target
		if !activeTarget(cur) {
			c.answer(Answer{Ticket: tk, Result: "no target to abort"})
			return tk
		}
		if err := c.vb.Err(c.state.Lamport, req.Now); err != nil {
			c.answer(Answer{Ticket: tk, Err: err})
			return tk
		}
		c.setTarget(svc, dataset.Target{Expect: dataset.ExpectAborted, ID: cur.ID})
		c.answerWaiters(svc, cur.ID, failedf("%s: target %s aborted", svc, cur.String()))
		c.answer(Answer{Ticket: tk, ID: cur.ID, Result: "target " + cur.String() + " aborted"})
		return tk
	case req.Action == "clear":
		if err := c.vb.Err(c.state.Lamport, req.Now); err != nil {
			c.answer(Answer{Ticket: tk, Err: err})
			return tk
		}
		c.applyClear(svc, dataset.ClearRequest{Node: req.Node, Version: c.nextVersion()}, req.Now)
		c.answer(Answer{Ticket: tk, Result: "clear requested"})
		return tk
	default:
		c.answer(Answer{Ticket: tk, Bad: true, Err: fmt.Errorf("unknown action %q", req.Action)})
		return tk
	}
	if err := flexRefused(c.isFlex(svc), svc, req.Action, req.Node); err != nil {
		c.answer(Answer{Ticket: tk, Bad: true, Err: err})
		return tk
	}
	if req.Action == "start" || req.Action == "stop" {
		// --node: that node's instance of a flex service (flexRefused)
		t.Node = req.Node
	}
	c.noteWasFrozen(tk, svc, req.Nodes)
	if t.Node != "" && !slices.Contains(req.Nodes, t.Node) {
		c.answer(Answer{Ticket: tk, Bad: true, Err: fmt.Errorf("%s: %s is not one of the service's nodes (%v)", svc, t.Node, req.Nodes)})
		return tk
	}
	cur := c.state.Services[svc].Target
	pending := activeTarget(cur) && c.pendingOnly(svc, cur)
	switch {
	case activeTarget(cur) && (cur.Expect != t.Expect || cur.Node != t.Node) && !pending:
		c.answer(Answer{Ticket: tk, Err: failedf("%s: target %s (id %s) is in progress: wait for it, or run abort first", svc, cur.String(), cur.ID)})
		return tk
	case activeTarget(cur) && cur.Expect == t.Expect && cur.Node == t.Node:
		t = cur // the same target again: join it
	default:
		// none, or one reached but on nodes shut down: replaced
		t.Sig = req.Sig
		if err := c.targetRefused(svc, t, c.state.Services[svc]); err != nil {
			c.answer(Answer{Ticket: tk, Err: err, Bad: true})
			return tk
		}
		if err := c.vb.Err(c.state.Lamport, req.Now); err != nil {
			c.answer(Answer{Ticket: tk, Err: err})
			return tk
		}
		t = c.setTarget(svc, t)
	}
	accepted := "target " + t.String() + " accepted (id " + t.ID + ")"
	if !req.Wait {
		c.answer(Answer{Ticket: tk, ID: t.ID, Result: accepted})
		return tk
	}
	if t.ID == cur.ID && pending {
		// joined a target reached but where nothing runs
		_, nodes, _ := strings.Cut(c.targetPending[svc], " ")
		c.answer(Answer{Ticket: tk, ID: t.ID, Result: "target " + t.String() + " reached (id " + t.ID + "); " + nodes + " shut down: applied there when back"})
		return tk
	}
	if cause := c.targetFailed[svc]; t.ID == cur.ID && cause != "" {
		// joined a target that cannot be reached: say so at once
		c.answer(Answer{Ticket: tk, ID: t.ID, Err: failedf("%s", TargetFailed{Svc: svc, Target: t, Reason: cause}.String())})
		return tk
	}
	c.waiters = append(c.waiters, waiter{ticket: tk, svc: svc, id: t.ID, deadline: req.Deadline,
		result: "target " + t.String() + " reached (id " + t.ID + ")"})
	return tk
}

// waiting reports whether a --wait caller waits on target id of svc.
func (c *Core) waiting(svc, id string) bool {
	for _, w := range c.waiters {
		if w.svc == svc && w.id == id {
			return true
		}
	}
	return false
}

// answerWaiters ends the --wait calls waiting on target id of svc.
func (c *Core) answerWaiters(svc, id string, err error) { c.answerWaitersOf(svc, id, err, "") }

// answerWaitersWith ends the --wait calls waiting on target id of svc with
// success, more added to their result.
func (c *Core) answerWaitersWith(svc, id, more string) { c.answerWaitersOf(svc, id, nil, more) }

func (c *Core) answerWaitersOf(svc, id string, err error, more string) {
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if w.svc == svc && (id == "" || w.id == id) {
			a := Answer{Ticket: w.ticket, ID: w.id, Err: err}
			if err == nil {
				a.Result = w.result + more
			}
			c.answer(a)
			continue
		}
		keep = append(keep, w)
	}
	c.waiters = keep
}

// expireWaiters answers the --wait callers whose time is up with where
// the target stands (monitor.Progress: the unknown nodes, the state of
// each known one), and returns the next deadline (zero: none).
func (c *Core) expireWaiters(now time.Time, snap monitor.Snapshot) time.Time {
	var next time.Time
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if w.deadline.IsZero() {
			keep = append(keep, w)
			continue
		}
		if now.Before(w.deadline) {
			if next.IsZero() || w.deadline.Before(next) {
				next = w.deadline
			}
			keep = append(keep, w)
			continue
		}
		t := c.state.Services[w.svc].Target
		c.answer(Answer{Ticket: w.ticket, ID: w.id, Err: failedf("timed out waiting for target %s (id %s): %s (the target stays in place: see print status, or abort)",
			t.String(), w.id, monitor.Progress(snap, w.svc))})
	}
	c.waiters = keep
	return next
}

// Waiters returns the number of --wait callers.
func (c *Core) Waiters() int { return len(c.waiters) }

// flexRefused refuses the cluster-wide targets a flex service does not
// take (switch, takeover, giveback): it is driven by its flex_target,
// start and stop (every instance, or one node's with --node), freeze and
// thaw. --node with start or stop is for a flex service only.
func flexRefused(flex bool, svc, action, node string) error {
	switch {
	case !flex && node != "" && (action == "start" || action == "stop"):
		return fmt.Errorf("%s: %s --node is for a flex service (one node's instance); a failover service runs on one node: move it with `svcmgr -s %s switch --to %s`, or act on this node's instance with --local", svc, action, svc, node)
	case !flex:
		return nil
	}
	switch action {
	case "switch", "takeover", "giveback":
		return fmt.Errorf("%s: %s does not apply to a flex service (its instances are not one to move): set the number of instances with `svcmgr -s %s scale --to N`; `stop --node N` stops and holds one node's instance (the count refills elsewhere), `start --node N` lets it run there again", svc, action, svc)
	}
	return nil
}
