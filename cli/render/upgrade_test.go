package render

import (
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
)

// svcmon shows each node's format version and the feature level while a
// rolling upgrade is under way, and nothing more once every node reads
// the level's formats; nodemgr daemon status says whether to go on.
func TestSvcmonRollingUpgrade(t *testing.T) {
	st := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "prod", Compat: true, FeatureLevel: 1},
		Nodes: map[string]dataset.NodeInfo{
			"n1": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1, Format: 2},
			"n2": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1, Format: 1},
		}, Services: map[string]dataset.ServiceStatus{}, Local: "n1"}
	out := Svcmon(st, SvcmonOptions{})
	if !strings.Contains(out, "feature level 1, rolling upgrade in progress") {
		t.Fatalf("no upgrade note:\n%s", out)
	}
	if !strings.Contains(out, " format  | 2    1") {
		t.Fatalf("no format row:\n%s", out)
	}
	st.Cluster.FeatureLevel = 2
	for _, n := range []string{"n1", "n2"} {
		ni := st.Nodes[n]
		ni.Format = 2
		st.Nodes[n] = ni
	}
	if out := Svcmon(st, SvcmonOptions{}); strings.Contains(out, "format") || strings.Contains(out, "rolling upgrade") {
		t.Fatalf("upgrade shown once done:\n%s", out)
	}
	// a fresh cluster: the peer not heard yet (its format unknown), the
	// level still below what this node reads: no upgrade
	fresh := &dataset.ClusterStatus{Cluster: dataset.ClusterInfo{Name: "prod", Compat: true, FeatureLevel: 1},
		Nodes: map[string]dataset.NodeInfo{
			"n1": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1, Format: 2},
			"n2": {Status: dataset.NodeStUnknown},
		}, Services: map[string]dataset.ServiceStatus{}, Local: "n1"}
	if out := Svcmon(fresh, SvcmonOptions{}); strings.Contains(out, "rolling upgrade") || strings.Contains(out, "format") {
		t.Fatalf("a fresh cluster shown as upgrading:\n%s", out)
	}
	ds := &api.DaemonStatus{Node: "n1", Started: time.Now(), Format: 2, FeatureLevel: 1, Upgrade: "yes: every member is up and compatible"}
	if out := NodeStatus(ds, time.Now()); !strings.Contains(out, "reads up to 2, cluster feature level 1") || !strings.Contains(out, "upgrade next node  yes: every member") {
		t.Fatalf("daemon status:\n%s", out)
	}
}
