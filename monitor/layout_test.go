package monitor

import (
	"fmt"
	"strings"
	"testing"
)

// layoutFloors is the architecture as the tree shows it (README "Layout"):
// each of Haven's packages sits on one floor, by its longest listed
// prefix, and imports only packages of its own floor or lower ones. A
// package missing from the table fails the test: a new folder picks its
// floor here, where a reviewer sees it.
var layoutFloors = []struct {
	floor    int
	prefixes []string
}{
	{0, []string{"internal/"}},
	{1, []string{"dataset", "constraints", "quorum", "config", "affinity", "placement", "monitor", "node"}},
	{2, []string{"config/tomlfile", "heartbeat", "resource", "api", "arbitrator", "guard"}},
	{3, []string{"daemon", "sim", "driver"}},
	{4, []string{"cli/", "svcmgr", "nodemgr", "svcmon"}},
	{5, []string{"cmd/", "test/"}},
}

// groundOrder is the order inside floor 1, the pure core: a package there
// imports only packages of its own rank or earlier ones (the data, then
// the rules that read it, then the node that composes them: its
// vocabulary, the state of its parts, then package node).
var groundOrder = [][]string{
	{"dataset"},
	{"quorum", "constraints"},
	{"config"},
	{"affinity"},
	{"placement"},
	{"monitor"},
	{"node/vocab", "node/view", "node/upgrade"},
	{"node/persist", "node/configdist", "node/versionbound", "node/quorumsm", "node/instsm", "node/peersm", "node/incpass"},
	{"node"},
}

var floorNames = []string{"leaf helpers", "pure core and config", "IO shell", "drivers", "command-line tools", "mains and test rings"}

// floorOf returns the floor of a package path relative to the module
// ("daemon/web"), or -1 when no prefix fits.
func floorOf(rel string) int {
	best, bestLen := -1, -1
	for _, f := range layoutFloors {
		for _, p := range f.prefixes {
			fits := rel == strings.TrimSuffix(p, "/") || strings.HasPrefix(rel, strings.TrimSuffix(p, "/")+"/")
			if fits && len(p) > bestLen {
				best, bestLen = f.floor, len(p)
			}
		}
	}
	return best
}

// groundRank returns the rank inside floor 1 of a package path relative to
// the module, by its longest prefix in groundOrder, or -1.
func groundRank(rel string) int {
	best, bestLen := -1, -1
	for r, ps := range groundOrder {
		for _, p := range ps {
			fits := rel == p || strings.HasPrefix(rel, p+"/")
			if fits && len(p) > bestLen {
				best, bestLen = r, len(p)
			}
		}
	}
	return best
}

// importBack says why an import from one package to another (paths
// relative to the module) runs back up, or "" when it keeps the floors
// and, inside floor 1, the order of groundOrder.
func importBack(from, to string) string {
	ff, ft := floorOf(from), floorOf(to)
	if ft > ff {
		return fmt.Sprintf("floor %d, %s, imports floor %d, %s", ff, floorNames[ff], ft, floorNames[ft])
	}
	if ff == 1 && ft == 1 {
		if rf, rt := groundRank(from), groundRank(to); rt > rf {
			return fmt.Sprintf("inside floor 1, rank %d (%s) imports rank %d (%s)", rf, strings.Join(groundOrder[rf], ", "), rt, strings.Join(groundOrder[rt], ", "))
		}
	}
	return ""
}

func TestLayoutFloors(t *testing.T) {
	for _, p := range goList(t, "list", "-json", "./...") {
		rel := strings.TrimPrefix(p.ImportPath, "haven/")
		from := floorOf(rel)
		if from < 0 {
			t.Errorf("package %s has no floor in layoutFloors (monitor/layout_test.go): give it one", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "haven/") {
				continue
			}
			if why := importBack(rel, strings.TrimPrefix(imp, "haven/")); why != "" {
				t.Errorf("%s imports %s (%s): an import running back up", p.ImportPath, imp, why)
			}
		}
	}
}

func TestFloorOf(t *testing.T) {
	for rel, want := range map[string]int{
		"internal/clock": 0, "node": 1, "driver": 3, "node/view": 1, "config": 1, "config/tomlfile": 2,
		"daemon/web": 3, "cli/render": 4, "test/e2e": 5, "cmd/nodemgr": 5, "nodes": -1, "clock": -1,
	} {
		if got := floorOf(rel); got != want {
			t.Errorf("floorOf(%q) = %d, want %d", rel, got, want)
		}
	}
}

// Every package of floor 1 has its rank, and an import against the order
// (dataset importing quorum, config importing affinity) runs back up.
func TestGroundOrder(t *testing.T) {
	for _, f := range layoutFloors {
		if f.floor != 1 {
			continue
		}
		for _, p := range f.prefixes {
			if groundRank(p) < 0 {
				t.Errorf("%s is on floor 1 but has no rank in groundOrder", p)
			}
		}
	}
	for _, c := range []struct {
		from, to string
		back     bool
	}{
		{"dataset", "quorum", true},
		{"config", "affinity", true},
		{"quorum", "constraints", false},
		{"dataset/status", "node", true},
		{"node/view", "monitor", false},
		{"node", "dataset/status", false},
		{"placement", "config", false},
		{"monitor", "daemon", true},
		{"daemon", "node", false},
	} {
		if got := importBack(c.from, c.to) != ""; got != c.back {
			t.Errorf("importBack(%q, %q) = %q, want back=%v", c.from, c.to, importBack(c.from, c.to), c.back)
		}
	}
}
