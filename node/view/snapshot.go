package view

import (
	"sort"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/placement"
)

// Input is what a node knows when it asks the decision core what to do.
type Input struct {
	Now time.Time
	// Local is the node's own current data; its Monitor gives its status
	// (maintenance, shutting, else up).
	Local dataset.Node
	// Peers are the other members, judged with Status.
	Peers            map[string]Peer
	MaintenanceGrace time.Duration
	ClusterNodes     []string
	Services         map[string]*config.ServiceConfig
	Compat           bool
	ConfDiffers      string
	ReadyPeriod      time.Duration
}

// Snapshot builds the decision core's snapshot: a view of every node, the
// constraints evaluated per service and node, and the rest as given. The
// daemon and the simulation both call it, so they feed the core alike.
func Snapshot(in Input) monitor.Snapshot {
	st := dataset.NodeUp
	switch in.Local.Monitor {
	case dataset.NodeMaintenance:
		st = dataset.NodeStMaint
	case dataset.NodeShutting:
		st = dataset.NodeStShutting
	}
	views := make(map[string]placement.NodeView, len(in.Peers)+1)
	views[in.Local.Name] = placement.NodeView{Name: in.Local.Name, Status: st, Data: in.Local}
	for name, p := range in.Peers {
		v := placement.NodeView{Name: name, Status: Status(p, in.Now, in.MaintenanceGrace)}
		if p.Data != nil {
			v.Data = *p.Data
			if Unconfirmed(p) {
				v.Data = unknownInstances(v.Data)
			}
		} else {
			v.Data = dataset.Node{Name: name}
		}
		views[name] = v
	}
	cok := map[string]map[string]bool{}
	for name, cfg := range in.Services {
		if cfg.Constraint != nil {
			cok[name] = placement.EvalConstraints(cfg, views)
		}
	}
	names := append([]string(nil), in.ClusterNodes...)
	sort.Strings(names)
	return monitor.Snapshot{
		Now:          in.Now,
		Local:        in.Local.Name,
		ClusterNodes: names,
		Nodes:        views,
		Services:     in.Services,
		ConstraintOK: cok,
		Compat:       in.Compat,
		ConfDiffers:  in.ConfDiffers,
		ReadyPeriod:  in.ReadyPeriod,
	}
}

// ActionTarget is the cluster-wide target of an orchestrated admin action
// run on node local (to is switch's destination). ok is false for the
// actions that are not targets (abort, clear, delete, unknown).
func ActionTarget(action, local, to string) (t dataset.Target, ok bool) {
	switch action {
	case "start":
		return dataset.Target{Expect: dataset.ExpectStarted}, true
	case "stop":
		return dataset.Target{Expect: dataset.ExpectStopped}, true
	case "freeze":
		return dataset.Target{Expect: dataset.ExpectFrozen}, true
	case "thaw":
		return dataset.Target{Expect: dataset.ExpectThawed}, true
	case "takeover":
		return dataset.Target{Expect: dataset.ExpectPlaced, Node: local}, true
	case "switch":
		return dataset.Target{Expect: dataset.ExpectPlaced, Node: to}, true
	case "giveback":
		return dataset.Target{Expect: dataset.ExpectPlaced}, true
	}
	return dataset.Target{}, false
}

// unknownInstances returns a copy of n whose instances are unknown: the
// data of a peer that came back, heard before it was lost, says nothing of
// what runs there now (its instances are neither up nor down until it is
// heard again).
func unknownInstances(n dataset.Node) dataset.Node {
	svcs := make(map[string]dataset.Instance, len(n.Services))
	for name, i := range n.Services {
		i.Avail, i.Overall = dataset.StatusUnknown, dataset.StatusUnknown
		i.PlacementLeader = false
		svcs[name] = i
	}
	n.Services = svcs
	return n
}
