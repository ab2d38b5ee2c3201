package render

import (
	"strings"
	"testing"

	"haven/dataset"
)

// print status shows the fencing token of an instance's last start.
func TestStatusTreeShowsFencingToken(t *testing.T) {
	s := dataset.ServiceStatus{Avail: dataset.StatusUp, Nodes: []string{"n1", "n2"}, Instances: map[string]dataset.Instance{
		"n1": {Avail: dataset.StatusUp, Monitor: dataset.InstanceMonitor{State: dataset.Idle}, FencingToken: 4},
		"n2": {Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
	}}
	out := StatusTree("web", s, "n1")
	var n1, n2 string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "- n1"):
			n1 = l
		case strings.Contains(l, "- n2"):
			n2 = l
		}
	}
	if !strings.HasSuffix(n1, "token 4") || strings.Contains(n2, "token") {
		t.Fatalf("got:\n%s\nwant token 4 on n1's line only", out)
	}
}
