package render

import (
	"strings"
	"testing"

	"haven/api"
	"haven/dataset"
)

// A service whose config does not parse says so, with the error, in the
// three views: svcmon, the status tree and svcmgr ls.
func TestConfigInvalidShown(t *testing.T) {
	const e = "/r/etc/services/web.toml:3: DEFAULT.nodes: unterminated array"
	st := &dataset.ClusterStatus{
		Cluster: dataset.ClusterInfo{Name: "c", Compat: true},
		Local:   "n1",
		Nodes:   map[string]dataset.NodeInfo{"n1": {Status: dataset.NodeUp}},
		Services: map[string]dataset.ServiceStatus{"web": {
			Avail: dataset.StatusUnknown, Frozen: "frozen", Nodes: []string{"n1"}, ConfigError: e,
			Instances: map[string]dataset.Instance{"n1": {Avail: dataset.StatusUnknown, Frozen: true, ConfigError: e}},
		}},
	}
	mon := Svcmon(st, SvcmonOptions{})
	tree := StatusTree("web", st.Services["web"], "n1")
	ls := ServiceList([]api.ServiceEntry{{Name: "web", Avail: dataset.StatusUnknown, ConfigError: e}, {Name: "db", Avail: dataset.StatusUp}})
	for what, out := range map[string]string{"svcmon": mon, "tree": tree, "ls": ls} {
		if !strings.Contains(out, "config invalid: "+e) {
			t.Errorf("%s does not say config invalid with the error:\n%s", what, out)
		}
	}
	if !strings.Contains(mon, "?*") {
		t.Errorf("svcmon: the instance cell should be ?* (unknown, frozen):\n%s", mon)
	}
	t.Logf("svcmon:\n%s\ntree:\n%s\nls:\n%s", mon, tree, ls)
}
