package daemon

import (
	"net/http"

	"haven/api"
	"haven/node"
)

// handleRefresh answers api.PathRefresh (svcmgr print status -r).
func (d *Daemon) handleRefresh(decode func(http.ResponseWriter, *http.Request, any) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req api.RefreshRequest
		if !decode(w, r, &req) {
			return
		}
		d.replyAsync(w, func(done func(any, error)) { d.refresh(req.Name, done) })
	}
}

// refresh runs a full check of the local instance of a service now and
// answers once it has ended (the input node.CheckWait), so that the status read next
// shows what runs now rather than the last periodic check. A check in
// progress is followed by a new one. A service with no instance here, or
// whose config does not parse here, has nothing to check: answered at once.
func (d *Daemon) refresh(name string, done func(any, error)) {
	if d.cfgs.invalid[name] != nil {
		done(api.ActionResponse{Result: "nothing checked: the config is invalid here"}, nil)
		return
	}
	inst, err := d.lookup(name)
	if err != nil {
		done(nil, err)
		return
	}
	d.drv.Ask(node.CheckWait{Service: inst.name}, func(node.Answer) { done(api.ActionResponse{Result: "checked"}, nil) })
	d.check(inst)
}
