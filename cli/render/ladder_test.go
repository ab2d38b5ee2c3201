package render

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// print status shows the restart ladder: restarts remaining, the last
// failure, and why the daemon gave up or excluded the node.
func TestStatusTreeShowsTheLadder(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 5, 0, time.UTC)
	s := dataset.ServiceStatus{Avail: dataset.StatusDown, Instances: map[string]dataset.Instance{
		"n1": {Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle},
			GaveUp:   "app#main down, 2 restarts spent: monitor_action switch (next candidate n2)",
			Excluded: "app#main down, 2 restarts spent: monitor_action switch (next candidate n2)",
			Resources: map[string]dataset.Resource{"app#main": {Status: dataset.StatusDown, Monitor: true, RestartRemaining: 0,
				LastFailure: "check says down", LastFailureAt: at}}},
	}}
	out := StatusTree("web", s, "n1")
	for _, want := range []string{"restart 0 remaining", "last failure 2030-01-01T00:00:05Z: check says down",
		"gave up: app#main down, 2 restarts spent", "excluded: app#main down"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
