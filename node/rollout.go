package node

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/planted"
	"haven/monitor"
	"haven/node/instsm"
)

// Rollouts (docs/behaviour.md 11, design-notes.md "Rolling a config out to
// running instances"): a record made once on the node that takes
// `svcmgr rollout`, relayed in every node's instance entry of the service
// and durable in each node's state; every node decides its own turn from
// it and the other nodes' marks (monitor.Turn), restarts its instance in
// place, watches it for the rollout's monitor time and announces how its
// turn went. No leader, nothing to hand over when a node is lost.

// RolloutRequest asks for a rollout of the config this node holds of
// Service to the instances that run (svcmgr rollout).
type RolloutRequest struct {
	Service string
	Now     time.Time
}

func (RolloutRequest) isInput() {}

// RolloutStarted: a rollout began here, or was adopted from a peer (What
// says which).
type RolloutStarted struct {
	Svc  string `json:"svc"`
	ID   string `json:"id"`
	What string `json:"what"`
}

func (RolloutStarted) Kind() string      { return "rollout_started" }
func (e RolloutStarted) Service() string { return e.Svc }
func (RolloutStarted) Level() Level      { return Info }
func (e RolloutStarted) String() string  { return "rollout " + e.ID + ": " + e.What }

// RolloutTurn: this node's turn in a rollout changed (State: delay,
// restarting, monitoring, ok, failed with its Cause).
type RolloutTurn struct {
	Svc   string `json:"svc"`
	ID    string `json:"id"`
	State string `json:"state"`
	Cause string `json:"cause,omitempty"`
}

func (RolloutTurn) Kind() string      { return "rollout_turn" }
func (e RolloutTurn) Service() string { return e.Svc }
func (e RolloutTurn) Level() Level {
	if e.State == dataset.TurnFailed || strings.HasPrefix(e.Cause, "refused") {
		return Warn
	}
	return Info
}
func (e RolloutTurn) String() string {
	s := "rollout " + e.ID + ": this node's turn: " + e.State
	if e.Cause != "" {
		s += ": " + e.Cause
	}
	return s
}

// running reports whether an instance, as announced, runs (up or warn, or
// in an action).
func running(i dataset.Instance) bool {
	a := monitor.EffectiveAvail(i)
	return a == dataset.StatusUp || a == dataset.StatusWarn || i.Monitor.State.Transitioning()
}

// beginRollout makes the rollout record of req: the config this node
// holds, to the nodes whose instance runs an older one, in the order of
// the service's nodes, with the service's update_* policy. Answered once the record is
// on disk here; the peers adopt it at their next pass.
func (c *Core) beginRollout(req RolloutRequest) Ticket {
	tk := c.newTicket()
	svc, now := req.Service, req.Now
	inst := c.insts[svc]
	if inst == nil || !inst.Local {
		c.answer(Answer{Ticket: tk, Bad: true, Err: fmt.Errorf("%s: this node is not one of the service's nodes: run the rollout on one of them", svc)})
		return tk
	}
	if c.cd.Busy(svc) {
		c.answer(Answer{Ticket: tk, Err: failedf("%s: a config write is in progress here: retry", svc)})
		return tk
	}
	ss := c.state.Services[svc]
	if ss.ConfigDigest == "" {
		c.answer(Answer{Ticket: tk, Err: failedf("%s: no config installed here", svc)})
		return tk
	}
	snap := c.Snapshot(now)
	cfg := snap.Services[svc]
	if cfg == nil {
		c.answer(Answer{Ticket: tk, Err: failedf("%s: no config installed here", svc)})
		return tk
	}
	nodes, runs := c.runningOld(svc, snap, ss.ConfigDigest)
	switch {
	case runs == 0:
		c.answer(Answer{Ticket: tk, Err: failedf("%s: no instance runs: nothing to roll out (each starts on the config it finds)", svc)})
		return tk
	case len(nodes) == 0:
		c.answer(Answer{Ticket: tk, Result: fmt.Sprintf("every instance runs config %s already: nothing to do", dataset.ShortDigest(ss.ConfigDigest))})
		return tk
	}
	if err := c.vb.Err(c.state.Lamport, now); err != nil {
		c.answer(Answer{Ticket: tk, Err: err})
		return tk
	}
	v := c.nextVersion()
	r := &dataset.Rollout{
		ID: fmt.Sprintf("%s-%d", c.cfg.Name, v.Counter), Version: v, Digest: ss.ConfigDigest, Nodes: nodes,
		Parallelism: cfg.UpdateParallelism, DelayMs: cfg.UpdateDelay.Milliseconds(), MonitorMs: cfg.UpdateMonitor.Milliseconds(),
		MaxFailureRatio: cfg.UpdateMaxFailureRatio, FailureAction: cfg.UpdateFailureAction, DownNodes: downNodes(cfg.UpdateDownNodes),
	}
	if cfg.UpdateOrder == dataset.OrderStartFirst && cfg.IsFlex() {
		r.Order = dataset.OrderStartFirst
	}
	c.setRollout(svc, r, fmt.Sprintf("begun here: config %s on %v, %d at a time", dataset.ShortDigest(r.Digest), nodes, max(1, r.Parallelism)))
	inst.RolloutSpoke = r.ID + "/begun" // its first batch is said (rolloutReport)
	res := fmt.Sprintf("rollout %s accepted: config %s on %s (of %d instances up)", r.ID, dataset.ShortDigest(r.Digest), strings.Join(nodes, ", "), runs)
	c.answer(Answer{Ticket: tk, ID: r.ID, Result: res})
	c.publish()
	return tk
}

// setRollout records r as the rollout of svc, durable and announced.
func (c *Core) setRollout(svc string, r *dataset.Rollout, what string) {
	ss := c.state.Services[svc]
	ss.Rollout = r
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
	c.emit(RolloutStarted{Svc: svc, ID: r.ID, What: what})
}

// setMark records this node's turn in the rollout of svc.
func (c *Core) setMark(svc string, m dataset.RolloutMark, now time.Time) {
	m.SinceMs = now.UnixMilli()
	ss := c.state.Services[svc]
	ss.RolloutMark = &m
	c.state.Services[svc] = ss
	c.persist()
	c.publish()
	c.emit(RolloutTurn{Svc: svc, ID: m.ID, State: m.State, Cause: m.Cause})
}

// mergeRollouts adopts the rollout records of peer from's instances of
// the services listed (keys of insts when svcs is nil) that are newer than
// ours, for the services known here, as mergeTargets adopts targets.
func (c *Core) mergeRollouts(from string, insts map[string]dataset.Instance, svcs map[string]bool, now time.Time) {
	adopt := func(svc string, r *dataset.Rollout) {
		ss, known := c.state.Services[svc]
		if r == nil || !known || ss.Rollout != nil && !r.Version.Newer(ss.Rollout.Version) {
			return
		}
		if err := c.vb.Check(r.Version, now); err != nil {
			c.sayRefused("rollout", svc, from, r.Version, err)
			return
		}
		c.witness(r.Version)
		c.setRollout(svc, r, "adopted from "+from)
	}
	var names []string // those with a record, in order (events in order)
	if svcs == nil {
		for svc, i := range insts {
			if i.Rollout != nil {
				names = append(names, svc)
			}
		}
	} else {
		for svc := range svcs {
			if i, ok := insts[svc]; ok && i.Rollout != nil {
				names = append(names, svc)
			}
		}
	}
	slices.Sort(names)
	for _, svc := range names {
		adopt(svc, insts[svc].Rollout)
	}
}

// rollouts takes this node's turn in the rollout of every local instance
// of the pass (only: the services of an incremental pass, nil for all)
// whose turn is not taken yet. It returns when it must run again (zero:
// not for a rollout).
func (c *Core) rollouts(snap monitor.Snapshot, now time.Time, only []*instsm.Instance) (next time.Time) {
	list := c.ilist
	if only != nil {
		list = only
	}
	for _, inst := range list {
		if !inst.Local || c.stopping {
			continue
		}
		next = earliest(next, c.rolloutOf(inst, snap, now))
	}
	return next
}

// rolloutOf is rollouts for one local instance.
func (c *Core) rolloutOf(inst *instsm.Instance, snap monitor.Snapshot, now time.Time) time.Time {
	svc := inst.Name
	ss := c.state.Services[svc]
	r := ss.Rollout
	if r == nil {
		return time.Time{}
	}
	mine := ss.RolloutMark
	if mine != nil && mine.ID == r.ID && mine.State == dataset.TurnReplacing {
		return c.replaced(inst, r, snap, now)
	}
	interrupted := mine != nil && mine.ID == r.ID && mine.State == dataset.TurnRestarting && inst.Act.Busy == ""
	if interrupted {
		// the restart this turn began runs no more and never ended: the
		// daemon stopped, or the node crashed, during it (its mark is on
		// the disk, the action was not). Nothing waits for its end: the
		// turn is taken again (not running here: ok, it starts on the
		// new config; running: restarted), where it would hold the
		// rollout for ever
		mine = nil
	}
	if mine != nil && mine.ID == r.ID && mine.State != dataset.TurnDelay || !slices.Contains(r.Nodes, c.cfg.Name) {
		return time.Time{} // taken, or none to take
	}
	marks := c.rolloutMarks(svc, r, snap)
	if interrupted {
		delete(marks, c.cfg.Name)
	}
	turn := monitor.Turn(r, marks, c.cfg.Name)
	if !turn.Go {
		inst.SkipSeen = time.Time{}
		return time.Time{}
	}
	if r.DownNodes == "skip" && !monitor.Turn(r, c.liveMarks(svc, r, snap), c.cfg.Name).Go {
		// this turn comes only by skipping nodes down: only once this
		// node saw them so for hb.timeout (the peers of a partition are
		// declared down one after the other: a node cut off from the
		// others sees itself in the minority by then, and waits)
		if inst.SkipSeen.IsZero() {
			inst.SkipSeen = now
		}
		since := inst.SkipSeen
		if due := since.Add(c.cfg.Quorum.HBTimeout); now.Before(due) {
			return due
		}
	}
	if idx := slices.Index(r.Nodes, c.cfg.Name) / max(1, r.Parallelism); idx > 0 && r.DelayMs > 0 {
		// update_delay from when this node saw the batch before end, on
		// its own clock (its mark "delay", durable)
		if mine == nil || mine.ID != r.ID {
			c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnDelay}, now)
			mine = c.state.Services[svc].RolloutMark
		}
		if due := time.UnixMilli(mine.SinceMs).Add(time.Duration(r.DelayMs) * time.Millisecond); now.Before(due) {
			return due
		}
	}
	if ss.ConfigDigest != r.Digest || c.cd.Busy(svc) || inst.Act.Busy != "" || ss.Frozen || c.state.NodeFrozen || c.state.SplitFrozen {
		// the config is still on its way here, an action runs, or the
		// instance or the node is frozen (the daemon restarts nothing
		// there): a later pass (the config's install, the action's end, a
		// thaw) goes on
		return time.Time{}
	}
	inst.SkipSeen = time.Time{} // the turn is taken now
	if _, run := c.Status(svc); !run {
		cause := "not running here: it starts on the new config when it starts"
		if r.Rollback && inst.Mon.State.Failed() {
			// its turn failed on the config rolled back (a node of a
			// rollback's list runs another config, or failed its turn in
			// the rollout undone; its mark may be update_delay's): the failed
			// state goes, and placement starts it again where it is
			// wanted (never above flex_max), on the previous config
			// (not expected here any more: its monitored resources,
			// down, are not restarted by the ladder in the meantime)
			c.clearLocal(svc, "rollback "+r.ID+": the config this node's turn failed on is rolled back", now)
			c.expect(svc, inst, dataset.ExpectNone)
			cause = "not running here: its failed state cleared, it starts on the previous config when placement starts it"
		}
		c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnOK, Cause: cause}, now)
		return time.Time{}
	}
	if why := rolloutRefused(r, snap.Services[svc]); why != "" {
		// what a record can make this node do is bounded by the config it
		// holds (admin-signed with [admin_keys]; the record is not): its
		// turn ends without a restart (docs/security.md, "Rollout records")
		c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnOK, Cause: why}, now)
		return time.Time{}
	}
	if r.Order == dataset.OrderStartFirst {
		// start-first: the instance runs on and leaves its slot to a
		// replacement (placement starts it on a spare candidate); it
		// stops once the replacement is up (replaced, next passes)
		c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnReplacing}, now)
		return c.replaced(inst, r, snap, now)
	}
	c.restartTurn(svc, r, turn.Why, "", now)
	return time.Time{}
}

// restartTurn takes this node's turn in r by a restart in place
// (stop-first, or start-first without a spare: cause says so).
func (c *Core) restartTurn(svc string, r *dataset.Rollout, why, cause string, now time.Time) {
	c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnRestarting, Cause: cause}, now)
	if _, err := c.runAction(svc, "restart", why, now); err != nil {
		c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnFailed, Cause: "restart not run: " + err.Error()}, now)
	}
}

// replaced goes on with this node's start-first turn in r (its mark
// replacing: the instance left its slot to a replacement). The old
// instance stops once flex_target instances are up elsewhere, not
// counting those of its own batch whose turn has not ended (they may be
// leaving theirs too, unseen yet); when no replacement can come (the
// instances elsewhere and the spare candidates cannot make flex_target),
// the turn falls back to a restart in place (stop-first), and says so.
func (c *Core) replaced(inst *instsm.Instance, r *dataset.Rollout, snap monitor.Snapshot, now time.Time) time.Time {
	svc := inst.Name
	cfg := snap.Services[svc]
	if cfg == nil || inst.Act.Busy != "" || c.cd.Busy(svc) {
		return time.Time{} // an action runs: its end comes back here
	}
	if _, run := c.Status(svc); !run {
		c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnOK, Cause: "not running here: it starts on the new config when it starts"}, now)
		return time.Time{}
	}
	if ss := c.state.Services[svc]; ss.Frozen || c.state.NodeFrozen || c.state.SplitFrozen {
		return time.Time{}
	}
	up, coming := monitor.Replacements(snap, svc, r)
	switch {
	case up >= cfg.FlexTarget || planted.On(planted.ReplacedEarly) && up+1 >= cfg.FlexTarget:
		reason := fmt.Sprintf("rollout %s (start-first): %d instances up elsewhere for a flex target of %d: the replaced instance stops", r.ID, up, cfg.FlexTarget)
		if _, err := c.runAction(svc, "stop", reason, now); err != nil {
			c.setMark(svc, dataset.RolloutMark{ID: r.ID, State: dataset.TurnFailed, Cause: "stop not run: " + err.Error()}, now)
		}
	case coming < cfg.FlexTarget:
		cause := fmt.Sprintf("no spare candidate for a replacement (%d instances up or coming elsewhere for a flex target of %d): restarted in place (stop-first)", coming, cfg.FlexTarget)
		c.restartTurn(svc, r, "rollout "+r.ID+": "+cause, cause, now)
	}
	return time.Time{}
}

// rolloutActed ends this node's restart for a rollout (its action's end):
// watched from now on, or failed with the cause.
func (c *Core) rolloutActed(svc, kind string, err error, now time.Time) {
	ss := c.state.Services[svc]
	m := ss.RolloutMark
	if m != nil && ss.Rollout != nil && m.ID == ss.Rollout.ID && m.State == dataset.TurnReplacing && kind == "stop" {
		// start-first: the old instance stopped once replaced (a stop that
		// failed is a failure as any: the turn fails with it)
		if err != nil {
			c.setMark(svc, dataset.RolloutMark{ID: m.ID, State: dataset.TurnFailed, Cause: "stop of the replaced instance failed: " + err.Error()}, now)
			return
		}
		c.setMark(svc, dataset.RolloutMark{ID: m.ID, State: dataset.TurnOK, Cause: "replaced: stopped once a replacement was up elsewhere"}, now)
		return
	}
	if m == nil || ss.Rollout == nil || m.ID != ss.Rollout.ID || m.State != dataset.TurnRestarting {
		return
	}
	if err != nil {
		c.setMark(svc, dataset.RolloutMark{ID: m.ID, State: dataset.TurnFailed, Cause: "restart failed: " + err.Error()}, now)
		return
	}
	c.setMark(svc, dataset.RolloutMark{ID: m.ID, State: dataset.TurnMonitoring}, now)
	c.wakeAt(now.Add(time.Duration(ss.Rollout.MonitorMs) * time.Millisecond))
}

// runningOld lists, in the order of the service's nodes, the alive nodes
// whose instance of svc runs a config other than digest, and counts the
// instances that run.
func (c *Core) runningOld(svc string, snap monitor.Snapshot, digest string) (nodes []string, runs int) {
	cfg := snap.Services[svc]
	if cfg == nil {
		return nil, 0
	}
	for _, n := range cfg.NodeList(snap.ClusterNodes) {
		v, ok := snap.Nodes[n]
		if !ok || !v.Alive() {
			continue
		}
		if i, ok := v.Data.Services[svc]; ok && running(i) {
			runs++
			if i.RunDigest != digest {
				nodes = append(nodes, n)
			}
		}
	}
	return nodes, runs
}

// rolloutMarks are the marks of r's nodes alive, this node's included,
// and, with update_down_nodes skip, the down ones skipped
// (monitor.SkipDown).
func (c *Core) rolloutMarks(svc string, r *dataset.Rollout, snap monitor.Snapshot) map[string]*dataset.RolloutMark {
	marks := c.liveMarks(svc, r, snap)
	monitor.SkipDown(r, marks, func(n string) bool {
		v, ok := snap.Nodes[n]
		return n == c.cfg.Name || ok && v.Alive()
	})
	return marks
}

// rolloutRefused says why this node's instance, running, is not restarted
// for the record r ("" when it is): r's pace is not that of cfg, the
// config of r's digest that
// this node holds (the record is made from it: update_parallelism,
// update_delay, update_monitor, update_max_failure_ratio,
// update_down_nodes, and update_failure_action or pause). A record made
// by a member that is not an admin can so restart instances only onto
// the config their node holds, at that config's own pace.
func rolloutRefused(r *dataset.Rollout, cfg *config.ServiceConfig) string {
	switch {
	case cfg == nil:
		return "refused: no config of " + dataset.ShortDigest(r.Digest) + " here to check the record's pace against"
	case r.Parallelism != cfg.UpdateParallelism || r.DelayMs != cfg.UpdateDelay.Milliseconds() || r.MonitorMs != cfg.UpdateMonitor.Milliseconds() ||
		r.MaxFailureRatio != cfg.UpdateMaxFailureRatio || r.DownNodes != downNodes(cfg.UpdateDownNodes) ||
		r.Order == dataset.OrderStartFirst && !(cfg.UpdateOrder == dataset.OrderStartFirst && cfg.IsFlex()) ||
		r.FailureAction != cfg.UpdateFailureAction && r.FailureAction != "pause":
		return fmt.Sprintf("refused: not restarted: the record's pace (parallelism %d, delay %dms, monitor %dms, ratio %g, %s, %s, %s) is not that of config %s (docs/security.md, \"Rollout records\")",
			r.Parallelism, r.DelayMs, r.MonitorMs, r.MaxFailureRatio, r.FailureAction, cmp.Or(r.DownNodes, "wait"), cmp.Or(r.Order, "stop-first"), dataset.ShortDigest(r.Digest))
	}
	return ""
}

// downNodes is update_down_nodes as a record holds it: "" for wait (the
// default, as records made before the keyword).
func downNodes(kw string) string {
	if kw == "skip" {
		return kw
	}
	return ""
}

// liveMarks are the marks of r's nodes alive only, this node's included
// (none skipped).
func (c *Core) liveMarks(svc string, r *dataset.Rollout, snap monitor.Snapshot) map[string]*dataset.RolloutMark {
	marks := make(map[string]*dataset.RolloutMark, len(r.Nodes))
	for _, n := range r.Nodes {
		if v, ok := snap.Nodes[n]; ok && n != c.cfg.Name && v.Alive() {
			marks[n] = v.Data.Services[svc].RolloutMark
		}
	}
	marks[c.cfg.Name] = c.state.Services[svc].RolloutMark
	return marks
}
