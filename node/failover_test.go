package node

import (
	"testing"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/placement"
)

// snapWith is a view where n1 is st and runs web with avail.
func snapWith(st dataset.NodeStatus, avail dataset.Status) monitor.Snapshot {
	return monitor.Snapshot{Now: t0, Local: "n2", ClusterNodes: []string{"n1", "n2"},
		Nodes: map[string]placement.NodeView{
			"n1": {Name: "n1", Status: st, Data: dataset.Node{Name: "n1",
				Services: map[string]dataset.Instance{"web": {Avail: avail}}}},
		}}
}

// startOK runs a start of web here that succeeds; it returns the events
// from its check's end.
func startOK(t *testing.T, c *Core, reason string) []Event {
	t.Helper()
	if _, err := c.runAction("web", "start", reason, t0); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	c.actionDone("web", "start", nil, t0)
	rd := c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	return c.Ready().Events
}

func failovers(evs []Event) []Failover {
	var out []Failover
	for _, e := range evs {
		if f, ok := e.(Failover); ok {
			out = append(out, f)
		}
	}
	return out
}

// A start here after the service ran on a peer that went down is a
// failover; a start with no memory of it running elsewhere is not.
func TestFailoverAfterRunningElsewhere(t *testing.T) {
	c := newCore("n2")
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.Ready()
	c.watchRanElsewhere(snapWith(dataset.NodeUp, dataset.StatusUp))
	c.watchRanElsewhere(snapWith(dataset.NodeDown, dataset.StatusUp)) // n1 crashed: remembered
	evs := startOK(t, c, "n1 down")
	got := failovers(evs)
	if len(got) != 1 || got[0] != (Failover{Svc: "web", From: "n1", Reason: "n1 down"}) {
		t.Fatalf("got failovers %+v, want one from n1", got)
	}
	if got[0].Kind() != "failover" || got[0].Service() != "web" {
		t.Fatalf("kind %q service %q", got[0].Kind(), got[0].Service())
	}
	// running here forgets; a stop and a start here are no failover
	c.watchRanElsewhere(snapWith(dataset.NodeDown, dataset.StatusUp))
	if _, err := c.runAction("web", "stop", "test", t0); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	c.actionDone("web", "stop", nil, t0)
	rd := c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	c.Ready()
	c.watchRanElsewhere(snapWith(dataset.NodeUp, dataset.StatusDown))
	if got := failovers(startOK(t, c, "admin")); len(got) != 0 {
		t.Fatalf("got failovers %+v after a restart here, want none", got)
	}
}

// Every event kind a hook may name is listed in config.EventKinds (hooks
// are validated against it at load).
func TestEventKindsListed(t *testing.T) {
	evs := []Event{TargetSet{}, TargetAdopted{}, TargetReached{}, TargetPending{}, TargetFailed{}, InstanceFrozen{Frozen: true},
		InstanceFrozen{}, NodeFrozen{Frozen: true}, NodeFrozen{}, InstanceMonitor{}, ActionBegin{}, MultipleActive{},
		PeerStatus{To: dataset.NodeUp}, PeerStatus{To: dataset.NodeDown}, PeerStatus{To: dataset.NodeStMaint},
		NodeMonitor{}, Compat{}, ActionEnd{}, ResourceStatus{}, InstanceStatus{}, DaemonStarted{}, DaemonStopped{},
		ConfigChanged{}, Impostor{}, Failover{}, MultipleActiveResolve{}, MultipleActiveEnded{}, Reannounce{},
		ResourceFailed{}, LadderGaveUp{}, MonitorActionTaken{}, RestartsReset{}, NodeActionRun{}, NodeActionEnd{},
		QuorumVote{}, QuorumStall{}, ArbitratorStatus{}, TakeoverGate{}, Fenced{}, FenceFailed{},
		ConfigChangedOutside{}, ConfigDeletedByPeer{}, ConfigRefused{}, ConfigConflict{}, ConfigInstallFailed{},
		ConfigRebased{}, ConfigUnconfirmed{}, VersionRefused{}, TargetRefused{},
		PeerDataStale{}, PeerDataFresh{}, DuplicateMember{}, DuplicateMemberGone{}, ResourceFault{}, FeatureLevel{}, ConfDiffer{},
		RolloutStarted{}, RolloutTurn{},
		FlexScaled{}, FlexInstances{}, FlexPlaced{}, FlexReplaced{}}
	for _, e := range evs {
		found := false
		for _, k := range config.EventKinds {
			found = found || k == e.Kind()
		}
		if !found {
			t.Errorf("event kind %q (%T) missing from config.EventKinds", e.Kind(), e)
		}
	}
}
