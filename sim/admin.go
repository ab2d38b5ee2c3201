package sim

import (
	"fmt"

	"haven/node"
)

// applyReady is the simulation's driver of the node core (as
// daemon.applyReady): Persist is what survives a crash (the simulated
// disk, Node.dur), Publish marks the dataset changed, the events are the
// timeline, the answers go to their callers.
func (d *daemon) applyReady() {
	for d.core.HasReady() {
		rd := d.core.Ready()
		if rd.Persist != nil {
			d.n.dur = rd.Persist.Clone()
			// the simulated disk is written at once: what waited for it
			// (answers, actions) is released in this same pass, in the
			// order of one Ready
			d.core.PersistDone(rd.PersistSeq, nil, d.c.clk.Now())
			rel := d.core.Ready()
			rd.Events = append(rd.Events, rel.Events...)
			rd.Answers = append(rd.Answers, rel.Answers...)
			rd.Run = append(rd.Run, rel.Run...)
			rd.NodeActions = append(rd.NodeActions, rel.NodeActions...)
			rd.Check = append(rd.Check, rel.Check...)
			rd.Probes = append(rd.Probes, rel.Probes...)
			rd.Fences = append(rd.Fences, rel.Fences...)
			rd.Publish = rd.Publish || rel.Publish
			if !rel.WakeAt.IsZero() && (rd.WakeAt.IsZero() || rel.WakeAt.Before(rd.WakeAt)) {
				rd.WakeAt = rel.WakeAt
			}
			if rel.Persist != nil {
				d.n.dur = rel.Persist.Clone()
				d.core.PersistDone(rel.PersistSeq, nil, d.c.clk.Now())
			}
		}
		if rd.Publish {
			d.changed()
		}
		for _, e := range rd.Events {
			d.record(e)
		}
		for _, a := range rd.Answers {
			if f := d.tickets[a.Ticket]; f != nil {
				delete(d.tickets, a.Ticket)
				f(a)
			}
		}
		// the simulated disk is written at once: the actions can run
		for _, a := range rd.Run {
			d.startAction(a)
		}
		// a node action is recorded, not run: the simulated machine goes on
		for _, na := range rd.NodeActions {
			d.record(node.NodeActionRun{Action: na.Kind, Reason: na.Reason})
		}
		for _, ck := range rd.Check {
			d.runCheck(ck)
		}
		d.quorumReady(&rd)
		d.armStep(rd.WakeAt)
		// the config files, written at once and reported (configs.go)
		for _, op := range rd.Configs {
			d.applyConfig(op)
		}
	}
}

// record puts a typed event on the timeline.
func (d *daemon) record(e node.Event) {
	d.c.logf(d.name, e.Service(), "%s", e.String())
	d.c.events = append(d.c.events, Event{At: d.c.Now(), Node: d.name, Event: e})
}

// serviceAction is daemon.serviceAction for one admin request made on
// this node (no --wait callers): reply gets the answer the CLI would
// print, at once or when the action it started ends.
func (d *daemon) serviceAction(name, action, to string, local, force bool, reply func(string, error)) {
	cfg, ok := d.n.files[name]
	if !ok {
		reply("", fmt.Errorf("no service %s", name))
		return
	}
	var tk node.Ticket
	if action == "delete" { // daemon.deleteService
		tk = d.core.DeleteService(name, d.c.clk.Now())
	} else if local || action == "restart" { // svcmgr restart is always this node's
		tk = d.core.AdminLocal(node.LocalRequest{Service: name, Action: action, Now: d.c.clk.Now(), Force: force})
	} else {
		tk = d.core.AdminTarget(node.TargetRequest{Service: name, Action: action, Node: to, Nodes: cfg.NodeList(d.c.names), Now: d.c.clk.Now()})
	}
	d.tickets[tk] = func(a node.Answer) { reply(a.Result, a.Err) }
	d.applyReady()
}

// nodeAction is daemon.nodeAction (freeze, thaw, drain).
func (d *daemon) nodeAction(action string, reply func(string, error)) {
	tk := d.core.AdminNode(action, d.c.clk.Now())
	d.tickets[tk] = func(a node.Answer) {
		if a.Err == nil && a.Result == "" {
			a.Result = "ok"
		}
		reply(a.Result, a.Err)
	}
	d.applyReady()
}

// serviceActionWait is daemon.serviceAction with --wait (no deadline): the
// answer comes when the core reaches or fails the target.
func (d *daemon) serviceActionWait(name, action, to string, reply func(string, error)) {
	cfg, ok := d.n.files[name]
	if !ok {
		reply("", fmt.Errorf("no service %s", name))
		return
	}
	tk := d.core.AdminTarget(node.TargetRequest{Service: name, Action: action, Node: to, Nodes: cfg.NodeList(d.c.names),
		Now: d.c.clk.Now(), Wait: true})
	d.tickets[tk] = func(a node.Answer) { reply(a.Result, a.Err) }
	d.applyReady()
}

// keyword is daemon.keyword for set and unset: the keywords applied to
// this node's config, which the core installs as a new version and
// answers once every live peer holds it.
func (d *daemon) keyword(name, op string, kws []string, reply func(string, error)) {
	cfg, ok := d.n.files[name]
	if !ok {
		reply("", fmt.Errorf("no service %s", name))
		return
	}
	raw, err := simCodec.EditService(name, cfg.Raw, op, kws)
	if err == nil {
		cfg, err = simCodec.ParseService(name, raw)
	}
	if err != nil {
		reply("", err)
		return
	}
	tk := d.core.EditConfig(node.ConfigRequest{Service: name, Config: cfg, What: "changed", Op: op, Kws: kws, Now: d.c.clk.Now()})
	d.tickets[tk] = func(a node.Answer) {
		if a.Err == nil && a.Result == "" {
			a.Result = "ok"
		}
		reply(a.Result, a.Err)
	}
	d.applyReady()
}
