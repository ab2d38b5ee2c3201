package monitor

import (
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
	{3, []string{"daemon", "sim", "node/driver"}},
	{4, []string{"cli/", "svcmgr", "nodemgr", "svcmon"}},
	{5, []string{"cmd/", "test/"}},
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
			to := floorOf(strings.TrimPrefix(imp, "haven/"))
			if to > from {
				t.Errorf("%s (floor %d, %s) imports %s (floor %d, %s): an import running back up",
					p.ImportPath, from, floorNames[from], imp, to, floorNames[to])
			}
		}
	}
}

func TestFloorOf(t *testing.T) {
	for rel, want := range map[string]int{
		"internal/clock": 0, "node": 1, "node/driver": 3, "config": 1, "config/tomlfile": 2,
		"daemon/web": 3, "cli/render": 4, "test/e2e": 5, "cmd/nodemgr": 5, "nodes": -1, "clock": -1,
	} {
		if got := floorOf(rel); got != want {
			t.Errorf("floorOf(%q) = %d, want %d", rel, got, want)
		}
	}
}
