package node

import (
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/placement"
)

// rolloutSnap is n2's view: n1 up and its instance of web ok in rollout
// id; web's config rolls out one at a time, watched for 2s, paused on a
// failure.
func rolloutSnap(now time.Time, id string) monitor.Snapshot {
	return monitor.Snapshot{Now: now, Local: "n2", ClusterNodes: []string{"n1", "n2"},
		Services: map[string]*config.ServiceConfig{"web": {UpdateParallelism: 1, UpdateMonitor: 2 * time.Second, UpdateFailureAction: "pause"}},
		Nodes: map[string]placement.NodeView{
			"n1": {Name: "n1", Status: dataset.NodeUp, Data: dataset.Node{Name: "n1", Services: map[string]dataset.Instance{
				"web": {Avail: dataset.StatusUp, RolloutMark: &dataset.RolloutMark{ID: id, State: dataset.TurnOK}}}}},
		}}
}

// n2 adopts a rollout record from n1's instance data, and takes its turn
// (n1's batch ended) only once it holds the record's config: a restart of
// its instance, its turn restarting, then monitoring once the restart
// ended, then ok once a status check that ended after update_monitor says
// up, on the fake clock; each step durable.
func TestRolloutTurnOnTheRecordsConfig(t *testing.T) {
	c := newCore("n2")
	localWebChecked(c, dataset.StatusUp)
	ss := c.state.Services["web"]
	ss.ConfigDigest, ss.RunDigest = "old", "old"
	c.state.Services["web"] = ss
	r := &dataset.Rollout{ID: "n1-7", Version: dataset.Version{Counter: 7, Origin: "n1"}, Digest: "new",
		Nodes: []string{"n1", "n2"}, Parallelism: 1, MonitorMs: 2000, FailureAction: "pause"}
	c.mergeRollouts("n1", map[string]dataset.Instance{"web": {Rollout: r}}, nil, t0)
	if rd := c.Ready(); rd.Persist == nil || c.state.Services["web"].Rollout != r {
		t.Fatalf("the record is not adopted and persisted: %+v", c.state.Services["web"].Rollout)
	}
	c.rollouts(rolloutSnap(t0, r.ID), t0, nil)
	if rd := c.Ready(); len(rd.Run) != 0 || c.state.Services["web"].RolloutMark != nil {
		t.Fatalf("n2 took its turn on a config other than the record's: %+v", rd.Run)
	}
	ss = c.state.Services["web"]
	ss.ConfigDigest, ss.Frozen = "new", true // the config arrived; the instance frozen
	c.state.Services["web"] = ss
	c.rollouts(rolloutSnap(t0, r.ID), t0, nil)
	if rd := c.Ready(); len(rd.Run) != 0 {
		t.Fatalf("n2 restarted a frozen instance: %+v", rd.Run)
	}
	ss.Frozen = false
	c.state.Services["web"] = ss
	c.rollouts(rolloutSnap(t0, r.ID), t0, nil)
	rd := c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "restart" || rd.Persist == nil {
		t.Fatalf("n2's turn: want one restart after a state write, got %+v", rd.Run)
	}
	if m := c.state.Services["web"].RolloutMark; m == nil || m.State != dataset.TurnRestarting || c.state.Services["web"].RunDigest != "new" {
		t.Fatalf("turn %+v, run digest %q", m, c.state.Services["web"].RunDigest)
	}
	c.actionDone("web", "restart", nil, t0)
	rd = c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	rd = c.Ready()
	if m := c.state.Services["web"].RolloutMark; m == nil || m.State != dataset.TurnMonitoring {
		t.Fatalf("after the restart: turn %+v", m)
	}
	if rd.WakeAt.IsZero() || rd.WakeAt.After(t0.Add(2*time.Second)) {
		t.Fatalf("no wake-up at the end of update_monitor: %v", rd.WakeAt)
	}
	// the monitor time passed: a check is ordered, its end says ok
	t1 := t0.Add(2 * time.Second)
	c.watchTurns(t1, nil)
	rd = c.Ready()
	if len(rd.Check) != 1 || c.state.Services["web"].RolloutMark.State != dataset.TurnMonitoring {
		t.Fatalf("at the end of update_monitor: want a check first, got %d checks, turn %+v", len(rd.Check), c.state.Services["web"].RolloutMark)
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t1)
	if rd := c.Ready(); c.state.Services["web"].RolloutMark.State != dataset.TurnOK || rd.Persist == nil {
		t.Fatalf("after the check: turn %+v", c.state.Services["web"].RolloutMark)
	}
	p := monitor.RolloutState(r, map[string]*dataset.RolloutMark{"n1": {ID: r.ID, State: dataset.TurnOK}, "n2": c.state.Services["web"].RolloutMark})
	if !p.Succeeded() {
		t.Fatalf("progress %s", p)
	}
}

// An older record never replaces a newer one.
func TestRolloutNewestRecordWins(t *testing.T) {
	c := newCore("n2")
	localWebChecked(c, dataset.StatusUp)
	newer := &dataset.Rollout{ID: "n1-9", Version: dataset.Version{Counter: 9, Origin: "n1"}, Digest: "b", Nodes: []string{"n1"}}
	older := &dataset.Rollout{ID: "n3-8", Version: dataset.Version{Counter: 8, Origin: "n3"}, Digest: "a", Nodes: []string{"n1"}}
	c.mergeRollouts("n1", map[string]dataset.Instance{"web": {Rollout: newer}}, nil, t0)
	c.mergeRollouts("n3", map[string]dataset.Instance{"web": {Rollout: older}}, map[string]bool{"web": true}, t0)
	if got := c.state.Services["web"].Rollout; got == nil || got.ID != "n1-9" {
		t.Fatalf("got %+v, want n1-9", got)
	}
}

// A record whose pace is not that of the config it rolls out (a member's
// forged record: with [admin_keys] the config is signed, the record is
// not) restarts nothing: the turn ends ok with the refusal, said at WARN.
func TestRolloutRecordBoundByTheConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		r    dataset.Rollout
		run  string
		want string
	}{
		"faster":     {dataset.Rollout{Parallelism: 2, MonitorMs: 2000, FailureAction: "pause"}, "old", "refused: not restarted: the record's pace"},
		"no watch":   {dataset.Rollout{Parallelism: 1, FailureAction: "pause"}, "old", "refused: not restarted: the record's pace"},
		"continue":   {dataset.Rollout{Parallelism: 1, MonitorMs: 2000, FailureAction: "continue"}, "old", "refused: not restarted: the record's pace"},
		"skip":       {dataset.Rollout{Parallelism: 1, MonitorMs: 2000, FailureAction: "pause", DownNodes: "skip"}, "old", "refused: not restarted: the record's pace"},
		"the config": {dataset.Rollout{Parallelism: 1, MonitorMs: 2000, FailureAction: "pause"}, "old", ""},
	} {
		c := newCore("n2")
		localWebChecked(c, dataset.StatusUp)
		ss := c.state.Services["web"]
		ss.ConfigDigest, ss.RunDigest = "new", tc.run
		c.state.Services["web"] = ss
		r := tc.r
		r.ID, r.Version, r.Digest, r.Nodes = "n1-7", dataset.Version{Counter: 7, Origin: "n1"}, "new", []string{"n1", "n2"}
		c.mergeRollouts("n1", map[string]dataset.Instance{"web": {Rollout: &r}}, nil, t0)
		c.Ready()
		c.rollouts(rolloutSnap(t0, r.ID), t0, nil)
		rd := c.Ready()
		m := c.state.Services["web"].RolloutMark
		if tc.want == "" {
			if len(rd.Run) != 1 || m == nil || m.State != dataset.TurnRestarting {
				t.Errorf("%s: want a restart, got %+v, turn %+v", name, rd.Run, m)
			}
			continue
		}
		if len(rd.Run) != 0 || m == nil || m.State != dataset.TurnOK || !strings.HasPrefix(m.Cause, tc.want) {
			t.Errorf("%s: want no restart and turn ok %q, got %+v, turn %+v", name, tc.want, rd.Run, m)
		}
		if strings.HasPrefix(tc.want, "refused") && (RolloutTurn{Cause: m.Cause}).Level() != Warn {
			t.Errorf("%s: the refusal is not said at WARN", name)
		}
	}
}
