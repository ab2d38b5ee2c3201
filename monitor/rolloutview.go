package monitor

import (
	"fmt"
	"time"

	"haven/dataset"
	"haven/placement"
)

// The rollout as one node sees it (status, explain, svcmon, the web view,
// the metrics): built from the rules of rollout.go applied to the marks
// this node holds, with, for each node whose turn is not under way, the
// first thing that holds it, in the order the node's own rule
// (node.rolloutOf) checks them.

// NewestRollout is the newest rollout record among insts (each node's
// instance of one service as this node holds it), nil when none.
func NewestRollout(insts map[string]dataset.Instance) *dataset.Rollout {
	var r *dataset.Rollout
	for _, i := range insts {
		if i.Rollout != nil && (r == nil || i.Rollout.Version.Newer(r.Version)) {
			r = i.Rollout
		}
	}
	return r
}

// RolloutView is where the newest rollout among insts stands, nil when
// there is none. live says which nodes are alive (only their marks count,
// as in the nodes' own rule: a node down holds its turn); frozen which
// nodes are frozen (by an admin or by their split_action).
func RolloutView(insts map[string]dataset.Instance, live, frozen func(node string) bool) *dataset.RolloutStatus {
	r := NewestRollout(insts)
	if r == nil {
		return nil
	}
	marks := make(map[string]*dataset.RolloutMark, len(r.Nodes))
	for _, n := range r.Nodes {
		if i, ok := insts[n]; ok && live(n) {
			marks[n] = i.RolloutMark
		}
	}
	SkipDown(r, marks, live)
	p := RolloutState(r, marks)
	s := &dataset.RolloutStatus{ID: r.ID, Digest: r.Digest, Parallelism: max(1, r.Parallelism), Batches: p.Batches,
		Summary: p.String(), OK: len(p.OK), Failed: len(p.Failed), Pending: len(r.Nodes) - len(p.OK) - len(p.Failed)}
	switch {
	case p.Paused:
		s.State = dataset.RolloutPaused
	case p.Done && len(p.Failed) > 0:
		s.State = dataset.RolloutDoneWithFailures
	case p.Done:
		s.State = dataset.RolloutDone
	default:
		s.State = dataset.RolloutInProgress
	}
	for k, n := range r.Nodes {
		i := insts[n]
		t := dataset.RolloutTurnStatus{Node: n, Batch: k/s.Parallelism + 1, RunDigest: i.RunDigest}
		if m := marks[n]; m != nil && m.ID == r.ID && m.State != dataset.TurnSkipped {
			t.State, t.Cause = m.State, m.Cause
		}
		if t.State != dataset.TurnOK && t.State != dataset.TurnFailed {
			t.Why = turnWhy(r, marks, n, i, live(n), frozen(n))
		}
		s.Turns = append(s.Turns, t)
	}
	return s
}

// turnWhy says why node n's turn, not ended, is not under way yet, or
// what it does.
func turnWhy(r *dataset.Rollout, marks map[string]*dataset.RolloutMark, n string, i dataset.Instance, live, frozen bool) string {
	if !live {
		if m := marks[n]; m != nil && m.ID == r.ID && m.State == dataset.TurnSkipped {
			return "node down: its turn skipped (update_down_nodes skip), taken when it returns"
		}
		return "node down: the rollout waits for it (the batches after it too)"
	}
	m := marks[n]
	if m != nil && m.ID == r.ID {
		switch m.State {
		case dataset.TurnRestarting:
			if m.Cause != "" {
				return "restarting on the new config: " + m.Cause
			}
			return "restarting on the new config"
		case dataset.TurnReplacing:
			return "start-first: its instance runs on, its slot left to a replacement that placement starts on a spare candidate; it stops once flex_target instances are up elsewhere (its batch's not counted), or restarts in place if no spare is left"
		case dataset.TurnMonitoring:
			return fmt.Sprintf("restarted, watched for update_monitor (%s) since %s on its clock",
				time.Duration(r.MonitorMs)*time.Millisecond, time.UnixMilli(m.SinceMs).UTC().Format("15:04:05 UTC"))
		}
	}
	if t := Turn(r, marks, n); !t.Go && t.Why != "" {
		return t.Why
	}
	if m != nil && m.ID == r.ID && m.State == dataset.TurnDelay {
		due := time.UnixMilli(m.SinceMs).Add(time.Duration(r.DelayMs) * time.Millisecond)
		return fmt.Sprintf("update_delay (%s) after the batch before: until %s on its clock", time.Duration(r.DelayMs)*time.Millisecond, due.UTC().Format("15:04:05 UTC"))
	}
	switch {
	case i.ConfigDigest != r.Digest:
		return fmt.Sprintf("config %s not received yet (it holds %s)", dataset.ShortDigest(r.Digest), orNone(dataset.ShortDigest(i.ConfigDigest)))
	case i.Frozen:
		return "instance frozen: its turn waits for a thaw"
	case frozen:
		return "node frozen: its turn waits for a thaw"
	case i.Monitor.State.Transitioning():
		return "an action runs there (" + string(i.Monitor.State) + "): its turn follows"
	case i.Rollout == nil || i.Rollout.ID != r.ID:
		return "has not adopted the rollout yet (an older release, or not heard since)"
	}
	return "its turn is due (its next pass)"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// CountConfigs counts the running instances among insts on the live
// nodes that run digest (the config installed on the counting node) and
// those that run another one.
func CountConfigs(insts map[string]dataset.Instance, live func(node string) bool, digest string) dataset.ConfigCount {
	var c dataset.ConfigCount
	for n, i := range insts {
		if !live(n) || i.RunDigest == "" || !running(i) {
			continue
		}
		if i.RunDigest == digest {
			c.Current++
		} else {
			c.Old++
		}
	}
	return c
}

// CountConfigsOf is CountConfigs of the instances of svc in a pass's
// view of the nodes (the alive ones), without a copy of them.
func CountConfigsOf(nodes map[string]placement.NodeView, svc, digest string) dataset.ConfigCount {
	var c dataset.ConfigCount
	for _, v := range nodes {
		i, ok := v.Data.Services[svc]
		if !ok || !v.Alive() || i.RunDigest == "" || !running(i) {
			continue
		}
		if i.RunDigest == digest {
			c.Current++
		} else {
			c.Old++
		}
	}
	return c
}

// running reports whether an instance, as announced, runs (up or warn).
func running(i dataset.Instance) bool {
	a := EffectiveAvail(i)
	return a == dataset.StatusUp || a == dataset.StatusWarn
}
