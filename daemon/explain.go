package daemon

import (
	"fmt"
	"net/http"

	"haven/monitor"
)

// handleExplain answers GET /services/explain?name=S[&start=1]: the
// decision core's explanation of one service, from the snapshot the
// orchestrator builds and the same Step pass (monitor.Explain), computed on
// the event loop. It changes nothing.
func (d *Daemon) handleExplain(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	start := false
	switch q.Get("start") {
	case "", "0", "false":
	case "1", "true":
		start = true
	default:
		writeErr(w, badInput(fmt.Errorf("explain: start=%q: want 1 or 0", q.Get("start"))))
		return
	}
	d.replyRead(w, func() (any, error) {
		if _, err := d.lookup(name); err != nil {
			return nil, err
		}
		e, ok := monitor.Explain(d.snapshot(), name, start)
		if !ok {
			return nil, failed("service %s does not exist", name)
		}
		var nodes []string
		for _, v := range e.Verdicts {
			nodes = append(nodes, v.Node)
		}
		e.Links = append(d.explainLinks(nodes), d.explainDisk(nodes)...) // links.go, diskstatus.go
		if e.Orchestrate == "ha" {
			e.SelfStop = d.core.SelfStop() // the gate's own computation
		}
		e.Guard = d.explainGuard(name, nodes) // guard.go
		return e, nil
	})
}
