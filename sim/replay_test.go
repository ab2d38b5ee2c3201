package sim

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"haven/dataset"
	"haven/node"
)

// Every scenario of the catalogue, replayed: each daemon's run of its
// core (every input the driver handed it, the Readies it took, the reads
// of the shell's view) replays on a fresh core to the same Readies, the
// same durable state and the same answers of the queries. An input that
// reaches the core without going through the driver's Step is missing
// from the trace, and the replay differs.
func TestReplayScenarios(t *testing.T) {
	for _, file := range scenarios(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			res := runFileRecorded(t, file, true)
			if len(res.Runs) == 0 {
				t.Fatal("no core ran")
			}
			for i, run := range res.Runs {
				c, out := run.Rec.Replay(run.Config, run.State.Clone())
				got, _ := json.Marshal(c.State())
				end, _ := json.Marshal(run.Core.State())
				if string(got) != string(end) {
					t.Fatalf("run %d of %s: replayed state:\n%s\nwant:\n%s", i, run.Node, got, end)
				}
				out, want := append(out, coreQueries(c)...), append(slices.Clone(run.Rec.Out()), coreQueries(run.Core)...)
				if j := firstMismatch(out, want); j >= 0 {
					t.Fatalf("run %d of %s (%d inputs): the replay differs at line %d:\n%s\nwant:\n%s", i, run.Node, len(run.Rec.Inputs()), j, at(out, j), at(want, j))
				}
			}
		})
	}
}

// coreQueries prints what the read-only queries of c answer (those that
// read no more of the shell's view: it is the end of the run's).
func coreQueries(c *node.Core) []string {
	out := []string{fmt.Sprintf("node %s frozen=%v seq=%d settled=%v failing=%v view=%v peers=%v",
		c.NodeMonitor(), c.NodeFrozen(), c.PersistSeq(), c.Settled(), c.PersistFailing(), c.ViewChanged(), c.PeerNames())}
	for _, p := range c.PeerNames() {
		pr, _ := c.Peer(p)
		out = append(out, fmt.Sprintf("peer %s up=%v stale=%v maint=%v gen=%d", p, pr.Up, pr.Stale, pr.MaintSince, genOf(pr.Data)))
	}
	return out
}

func firstMismatch(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func at(l []string, i int) string {
	if i < len(l) {
		return l[i]
	}
	return "(end)"
}

func genOf(d *dataset.Node) uint64 {
	if d == nil {
		return 0
	}
	return d.Gen
}
