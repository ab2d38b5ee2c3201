package daemon

import (
	"testing"

	"haven/dataset"
)

// A service up nowhere whose instance on a live node is unknown (two
// daemons run with that node's name, its data is stale, its new run is not
// trusted yet) is unknown, not down: it may run there. Before, svcmon said
// "down" for the services of a node shown DUPLICATE. A node that is down
// (its instances unknown too) leaves the service down.
func TestAggregateUnknownOnALiveNode(t *testing.T) {
	unknown := dataset.Instance{Avail: dataset.StatusUnknown, Overall: dataset.StatusUnknown, Stale: true}
	nodes := map[string]dataset.Node{
		"n1": {Name: "n1", Services: map[string]dataset.Instance{"web": {Avail: dataset.StatusDown, Overall: dataset.StatusDown}}},
		"n2": {Name: "n2", Services: map[string]dataset.Instance{"web": unknown}},
	}
	for _, c := range []struct {
		unknownUp map[string]bool
		want      dataset.Status
	}{
		{map[string]bool{"n2": true}, dataset.StatusUnknown},
		{nil, dataset.StatusDown},
	} {
		ss := dataset.ServiceStatus{Nodes: []string{"n1", "n2"}, Instances: map[string]dataset.Instance{}}
		aggregate(&ss, "web", nodes, c.unknownUp)
		if ss.Avail != c.want || ss.Overall != c.want {
			t.Errorf("unknown on a live node %v: avail %s overall %s, want %s", c.unknownUp, ss.Avail, ss.Overall, c.want)
		}
	}
}
