package daemon

import (
	"go.uber.org/zap"

	"haven/api"
	"haven/dataset"
	"haven/node"
)

// applyReady carries out what the node core asks after an input, in the
// order of node.Ready: the durable state to the persister first (an
// answer waits for it: whenSaved), then the dataset marked changed, the
// events to node.log and the events stream, the answers to their callers.
func (d *Daemon) applyReady() {
	for d.core.HasReady() {
		rd := d.core.Ready()
		if rd.Persist != nil {
			d.saveState()
		}
		if rd.Publish {
			d.changed()
		}
		for _, e := range rd.Events {
			d.logEvent(e)
		}
		for _, a := range rd.Answers {
			if f := d.tickets[a.Ticket]; f != nil {
				delete(d.tickets, a.Ticket)
				f(a)
			}
		}
		for _, a := range rd.Run {
			d.startAction(a)
		}
		d.armStep(rd.WakeAt)
	}
}

// logEvent writes a typed event of the core to node.log and the events
// stream.
func (d *Daemon) logEvent(e node.Event) {
	fields := []zap.Field{zap.String("event", e.Kind())}
	if svc := e.Service(); svc != "" {
		fields = append(fields, zap.String("svc", svc))
	}
	switch e := e.(type) {
	case node.ActionBegin:
		d.svclogs.write(e.Svc, "", e.String())
	case node.MultipleActive:
		d.svclogs.write(e.Svc, "", e.String())
	}
	switch e.Level() {
	case node.Warn:
		d.log.Warn(e.String(), fields...)
	case node.Error:
		d.log.Error(e.String(), fields...)
	default:
		d.log.Info(e.String(), fields...)
	}
	d.emit(api.Event{Kind: e.Kind(), Service: e.Service(), Message: e.String()})
}

// monitorState is the monitor state of the instance of svc here.
func (d *Daemon) monitorState(svc string) dataset.MonitorState {
	info, _ := d.core.Instance(svc)
	return info.Monitor.State
}

// answerErr is the error of a core's answer for the API: exit status 2 for
// a bad request, 1 for a failure.
func answerErr(a node.Answer) error {
	if a.Err == nil {
		return nil
	}
	if a.Bad {
		return badInput(a.Err)
	}
	return failed("%v", a.Err)
}
