package node

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"haven/dataset"
	"haven/internal/planted"
	"haven/monitor"
	"haven/node/configdist"
	"haven/node/instsm"
)

// Rollbacks (docs/behaviour.md 11, design-notes.md "Rolling a config
// out to running instances"). Every node keeps the config a service held
// before its current one (ServiceState.Previous, written with the version
// that replaced it): a rollback installs that text again as a new version
// (an admin-signed text keeps its signature, and its serial is the replay
// floor: accepted once) and, in the same step, a new rollout record marked
// as a rollback (Rollback, Undoes, Cause) that restarts on it the instances
// that run another config. The config travels as any edit; the record as
// any rollout, and every node takes its turn once the config reached it.
//
// It is made by hand (svcmgr rollback, RollbackRequest) or by one node when
// a rollout whose update_failure_action is rollback failed more turns
// than its ratio allows: the node that made the rollout if alive, else the
// first of its nodes alive (monitor.RollbackBy), and only while the failed
// config is still the current one there (a newer edit supersedes it). A
// rollback's own failures pause it: it is never rolled back in turn.

// RollbackRequest asks for a rollback of Service to the previous config
// this node keeps (svcmgr rollback).
type RollbackRequest struct {
	Service string
	Now     time.Time
}

func (RollbackRequest) isInput() {}

// RollbackStarted: a rollback began here (by hand, or a rollout failed).
type RollbackStarted struct {
	Svc    string `json:"svc"`
	ID     string `json:"id"`
	Undoes string `json:"undoes,omitempty"`
	Digest string `json:"digest"`
	Cause  string `json:"cause"`
}

func (RollbackStarted) Kind() string      { return "rollback_started" }
func (e RollbackStarted) Service() string { return e.Svc }
func (RollbackStarted) Level() Level      { return Warn }
func (e RollbackStarted) String() string {
	s := "rollback " + e.ID + " to config " + dataset.ShortDigest(e.Digest)
	if e.Undoes != "" {
		s += " (undoes rollout " + e.Undoes + ")"
	}
	return s + ": " + e.Cause
}

// RolloutPaused: a rollout failed more turns than its ratio allows and is
// paused (update_failure_action pause, or a rollback that could not be
// made: Cause says why). Said by one node (monitor.RollbackBy's).
type RolloutPaused struct {
	Svc    string `json:"svc"`
	ID     string `json:"id"`
	Failed string `json:"failed"`
	Cause  string `json:"cause,omitempty"`
}

func (RolloutPaused) Kind() string      { return "rollout_paused" }
func (e RolloutPaused) Service() string { return e.Svc }
func (RolloutPaused) Level() Level      { return Warn }
func (e RolloutPaused) String() string {
	if e.Failed == "" {
		return "rollout " + e.ID + " paused: " + e.Cause
	}
	s := "rollout " + e.ID + " paused: " + e.Failed
	if e.Cause != "" {
		s += " (" + e.Cause + ")"
	}
	return s
}

// RolloutDone: every batch of a rollout ended (Failed lists the turns
// that failed when update_failure_action is continue). Said by one node.
type RolloutDone struct {
	Svc    string `json:"svc"`
	ID     string `json:"id"`
	Failed string `json:"failed,omitempty"`
}

func (RolloutDone) Kind() string      { return "rollout_done" }
func (e RolloutDone) Service() string { return e.Svc }
func (RolloutDone) Level() Level      { return Info }
func (e RolloutDone) String() string {
	if e.Failed != "" {
		return "rollout " + e.ID + " done with failures: " + e.Failed
	}
	return "rollout " + e.ID + " done"
}

// RolloutBatch: a batch of a rollout begun (the batches before it ended:
// OK and Failed, the turns ended so far), or, with update_down_nodes
// skip, every batch ended but the turns of the nodes down (Skipped): the
// rollout is done once they took theirs. Said by one node, as
// RolloutPaused.
type RolloutBatch struct {
	Svc     string `json:"svc"`
	ID      string `json:"id"`
	Batch   int    `json:"batch"`
	Batches int    `json:"batches"`
	Nodes   string `json:"nodes,omitempty"`
	OK      string `json:"ok,omitempty"`
	Failed  string `json:"failed,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

func (RolloutBatch) Kind() string      { return "rollout_batch" }
func (e RolloutBatch) Service() string { return e.Svc }
func (RolloutBatch) Level() Level      { return Info }
func (e RolloutBatch) String() string {
	var s string
	if e.Batch > e.Batches {
		s = fmt.Sprintf("rollout %s: every batch ended; skipped (node down): %s: their turn when they return", e.ID, e.Skipped)
	} else {
		s = fmt.Sprintf("rollout %s: batch %d/%d begun: %s", e.ID, e.Batch, e.Batches, e.Nodes)
		if e.Skipped != "" {
			s += "; skipped (node down): " + e.Skipped
		}
	}
	if e.OK != "" {
		s += "; ok " + e.OK
	}
	if e.Failed != "" {
		s += "; failed " + e.Failed
	}
	return s
}

// rollbackByHand is svcmgr rollback: answered once the record is on disk
// here (the config's write follows in the same Ready).
func (c *Core) rollbackByHand(req RollbackRequest) Ticket {
	tk := c.newTicket()
	svc := req.Service
	inst := c.insts[svc]
	if inst == nil || !inst.Local {
		c.answer(Answer{Ticket: tk, Bad: true, Err: fmt.Errorf("%s: this node is not one of the service's nodes: run the rollback on one of them", svc)})
		return tk
	}
	ss := c.state.Services[svc]
	undoes := ""
	if r := ss.Rollout; r != nil && r.Digest == ss.ConfigDigest && !r.Rollback {
		undoes = r.ID
	}
	r, err := c.rollBack(svc, undoes, "by hand (svcmgr rollback)", req.Now)
	if err != nil {
		c.answer(Answer{Ticket: tk, Err: err})
		return tk
	}
	res := fmt.Sprintf("rollback %s accepted: config %s (the previous one) on %s", r.ID, dataset.ShortDigest(r.Digest), strings.Join(r.Nodes, ", "))
	if len(r.Nodes) == 0 {
		res = fmt.Sprintf("rollback %s accepted: config %s (the previous one) installed; no instance runs another one", r.ID, dataset.ShortDigest(r.Digest))
	}
	c.answer(Answer{Ticket: tk, ID: r.ID, Result: res})
	return tk
}

// rollBack installs the previous config of svc as a new version and
// records its rollout (a rollback of the rollout undoes, "" for none).
func (c *Core) rollBack(svc, undoes, cause string, now time.Time) (*dataset.Rollout, error) {
	ss := c.state.Services[svc]
	prev := ss.Previous
	switch {
	case prev == nil:
		return nil, failedf("%s: no previous config kept here (none was replaced since this node holds the service, or an install failed in between)", svc)
	case c.cfg.Configs == nil:
		return nil, failedf("%s: configs are not distributed here", svc)
	case c.cd.Busy(svc):
		return nil, failedf("%s: a config write is in progress here: retry", svc)
	}
	if err := c.vb.Err(c.state.Lamport, now); err != nil {
		return nil, err
	}
	cfg, err := c.cfg.Configs.ParseService(svc, []byte(prev.Raw))
	if err != nil {
		return nil, failedf("%s: the previous config %s no longer parses here: %v", svc, dataset.ShortDigest(prev.Digest), err)
	}
	if err := c.serialRefused(cfg); err != nil {
		return nil, failedf("%s: the previous config %s: %v", svc, dataset.ShortDigest(prev.Digest), err)
	}
	if err := c.configTexts().check(svc, len(cfg.Raw)); err != nil {
		return nil, failedf("refused: %v", err)
	}
	what := "rolled back to " + dataset.ShortDigest(prev.Digest)
	if undoes != "" {
		what += " (rollout " + undoes + ")"
	}
	c.order(&configdist.Op{Svc: svc, Cfg: cfg, Entry: c.newEntry(svc, cfg.Raw), What: what})
	snap := c.Snapshot(now)
	nodes, _ := c.runningOld(svc, snap, prev.Digest)
	if u := ss.Rollout; u != nil && u.ID == undoes && undoes != "" {
		// the nodes whose turn failed in the rollout undone: their
		// failed state is cleared on their turn (rolloutOf)
		for n, m := range c.rolloutMarks(svc, u, snap) {
			if m != nil && m.ID == u.ID && m.State == dataset.TurnFailed && !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
		slices.SortStableFunc(nodes, func(a, b string) int {
			return slices.Index(u.Nodes, a) - slices.Index(u.Nodes, b)
		})
	}
	v := c.nextVersion()
	r := &dataset.Rollout{
		ID: fmt.Sprintf("%s-%d", c.cfg.Name, v.Counter), Version: v, Digest: prev.Digest, Nodes: nodes,
		Parallelism: cfg.UpdateParallelism, DelayMs: cfg.UpdateDelay.Milliseconds(), MonitorMs: cfg.UpdateMonitor.Milliseconds(),
		MaxFailureRatio: cfg.UpdateMaxFailureRatio, FailureAction: "pause", DownNodes: downNodes(cfg.UpdateDownNodes), Rollback: true, Undoes: undoes, Cause: cause,
	}
	c.setRollout(svc, r, fmt.Sprintf("rollback begun here: config %s on %v, %d at a time", dataset.ShortDigest(r.Digest), nodes, max(1, r.Parallelism)))
	c.emit(RollbackStarted{Svc: svc, ID: r.ID, Undoes: undoes, Digest: r.Digest, Cause: cause})
	if inst := c.insts[svc]; inst != nil {
		inst.RolloutSpoke = r.ID + "/begun" // its first batch is said (rolloutReport)
	}
	return r, nil
}

// rollbackPass does, for the local instances of a pass (only: those of
// an incremental pass, nil for all) whose service has a rollout, the
// duties of the node that speaks for it (rolloutReport), before the
// nodes' turns (rollouts).
func (c *Core) rollbackPass(snap monitor.Snapshot, now time.Time, only []*instsm.Instance) {
	list := c.ilist
	if only != nil {
		list = only
	}
	for _, inst := range list {
		r := c.state.Services[inst.Name].Rollout
		if !inst.Local || c.stopping || r == nil {
			continue
		}
		c.rollbackResumed(inst.Name, r)
		c.rolloutReport(inst, r, monitor.RolloutState(r, c.rolloutMarks(inst.Name, r, snap)), snap, now)
	}
}

// rolloutReport is the duty of the node that speaks for the rollout r of
// svc (monitor.RollbackBy's): say once that it is paused or done, and
// roll it back when its failures call for it. It reports whether r was
// replaced (by its rollback).
func (c *Core) rolloutReport(inst *instsm.Instance, r *dataset.Rollout, p monitor.RolloutProgress, snap monitor.Snapshot, now time.Time) bool {
	svc := inst.Name
	alive := func(n string) bool {
		v, ok := snap.Nodes[n]
		return n == c.cfg.Name || ok && v.Alive()
	}
	if monitor.RollbackBy(r, alive) != c.cfg.Name {
		return false
	}
	if c.superseded(svc, r, p) {
		ss := c.state.Services[svc]
		s := *r
		s.Version, s.Stopped = c.nextVersion(), "the config changed since (now "+dataset.ShortDigest(ss.ConfigDigest)+"): a new svcmgr rollout rolls it out"
		if c.vb.Err(c.state.Lamport, now) == nil {
			c.setRollout(svc, &s, "paused: "+s.Stopped)
		}
		return false
	}
	var key string
	switch {
	case p.RollBack:
		key = "rollback"
	case p.Paused:
		key = "paused"
	case p.Done:
		key = "done"
	default:
		key = fmt.Sprintf("batch %d", p.Batch)
	}
	key = r.ID + "/" + key
	said := inst.RolloutSpoke
	if said == "" {
		// first look since this daemon started: what was said before is
		// not said again; a rollback due is made (a rollback made
		// before would have replaced r), and is not marked said until
		// it is: a wait below (the quorum, a write) comes back here
		if key != r.ID+"/rollback" {
			inst.RolloutSpoke = key
			return false
		}
	} else if said == key {
		return false
	}
	failed := strings.Join(p.Failed, "; ")
	switch {
	case p.RollBack:
		ss := c.state.Services[svc]
		if ss.ConfigDigest != r.Digest {
			inst.RolloutSpoke = key
			c.pauseInstead(svc, r, failed, "not rolled back: the config changed since (now "+dataset.ShortDigest(ss.ConfigDigest)+")", now)
			return false
		}
		if c.cd.Busy(svc) {
			return false // the write's end comes back here
		}
		if !c.holdsQuorum(now) && !planted.On(planted.RollbackNoQuorum) {
			// a node cut off from the majority would make a version of
			// its own, on the nodes it sees, that the others take at the
			// heal: the rollback waits until this side holds the quorum
			// (the vote's end, or the heal, makes a pass that comes back)
			return false
		}
		if q := &c.q; c.quorumOn() && !q.LastAt.IsZero() && !planted.On(planted.RollbackNoQuorum) {
			// a vote follows each member lost: the peers of a cut are
			// declared down one after the other, and between two of them
			// a node cut off still counts a quorum it is about to lose,
			// and would roll back on the nodes it still sees (the others
			// take that record at the heal, and the nodes it no longer
			// saw keep the failed config). The rollback waits hb.timeout
			// after the last vote, maker or not: a node of the minority
			// has lost the quorum by then (the members of one cut are
			// declared down within a beat of each other)
			if due := q.LastAt.Add(c.cfg.Quorum.HBTimeout); now.Before(due) {
				c.wakeAt(due)
				return false
			}
		}
		inst.RolloutSpoke = key
		if _, err := c.rollBack(svc, r.ID, fmt.Sprintf("rollout %s failed: %s", r.ID, failed), now); err != nil {
			c.pauseInstead(svc, r, failed, "not rolled back: "+err.Error(), now)
			return false
		}
		return true
	case p.Paused:
		c.emit(RolloutPaused{Svc: svc, ID: r.ID, Failed: failed, Cause: cmp.Or(r.Stopped, r.Cause)})
	case p.Done:
		c.emit(RolloutDone{Svc: svc, ID: r.ID, Failed: failed})
	default:
		e := RolloutBatch{Svc: svc, ID: r.ID, Batch: p.Batch + 1, Batches: p.Batches, OK: strings.Join(p.OK, " "), Failed: failed, Skipped: strings.Join(p.Skipped, " ")}
		if p.Batch < p.Batches {
			e.Nodes = strings.Join(monitor.RolloutBatches(r)[p.Batch], " ")
		}
		c.emit(e)
	}
	inst.RolloutSpoke = key
	return false
}

// superseded reports whether the rollout r of svc, not ended, rolls out
// a config a newer edit replaced here: its nodes would wait for that
// config for ever. The config is newer than the record, or, on the node
// that made the record (it held r's config then), any other config but
// that of a rollback of its own not written yet (rollbackResumed).
func (c *Core) superseded(svc string, r *dataset.Rollout, p monitor.RolloutProgress) bool {
	ss := c.state.Services[svc]
	if r.Stopped != "" || p.Done || p.Halted() || ss.ConfigDigest == r.Digest || ss.ConfigDigest == "" || c.cd.Busy(svc) {
		return false
	}
	return ss.ConfigVersion.Newer(r.Version) || r.Version.Origin == c.cfg.Name && !r.Rollback
}

// pauseInstead replaces the record r of svc, failed but not rolled back,
// by the same rollout paused (a newer version of it, with the cause), so
// that every node, rollout status and --wait see it paused and why.
func (c *Core) pauseInstead(svc string, r *dataset.Rollout, failed, cause string, now time.Time) {
	if err := c.vb.Err(c.state.Lamport, now); err != nil {
		c.emit(RolloutPaused{Svc: svc, ID: r.ID, Failed: failed, Cause: cause})
		return
	}
	p := *r
	p.Version, p.FailureAction, p.Cause = c.nextVersion(), "pause", cause
	c.setRollout(svc, &p, "paused: "+cause)
}

// rollbackResumed orders again the config of a rollback made here that
// is not installed (the daemon stopped, or the write failed, before it
// was): the record is durable, the write was not. Not that of a rollback
// paused as superseded (its record's newer version says nothing of its
// config's write: a newer edit replaced it).
func (c *Core) rollbackResumed(svc string, r *dataset.Rollout) {
	ss := c.state.Services[svc]
	prev := ss.Previous
	if !r.Rollback || r.Stopped != "" || r.Version.Origin != c.cfg.Name || ss.ConfigDigest == r.Digest || prev == nil || prev.Digest != r.Digest ||
		c.cd.Busy(svc) || ss.ConfigVersion.Newer(r.Version) || c.cfg.Configs == nil {
		return
	}
	cfg, err := c.cfg.Configs.ParseService(svc, []byte(prev.Raw))
	if err != nil || c.serialRefused(cfg) != nil {
		return
	}
	c.order(&configdist.Op{Svc: svc, Cfg: cfg, Entry: c.newEntry(svc, cfg.Raw), What: "rolled back to " + dataset.ShortDigest(prev.Digest) + " (again: not written before)"})
}
