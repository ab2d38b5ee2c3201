package monitor

import (
	"fmt"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
	"haven/placement"
)

// docs/behaviour.md 1.7's transition table, node A's perspective, row by row.
// Initial states are "<avail> <monitor state> <flags>" of A and of B; next
// says who goes idle => ready: "A", "B", or "" for nobody.
//
// Flags: A affinity violation, C constraints violation, F frozen (service or
// node), L placement policy leader (the natural leader). "*" as B's flags is
// any combination; "*ing" any transition state; "*" as a state any state.
var seedTransitions = []struct {
	aFlags         string
	bAvail, bState string
	bFlags         string
	next           string
}{
	{"L", "down", "idle", "", "A"},
	{"L", "down", "idle", "A", "A"},
	{"L", "down", "idle", "C", "A"},
	{"L", "down", "idle", "F", "A"},
	{"AL", "down", "idle", "", "B"},
	{"AL", "down", "idle", "A", ""},
	{"AL", "down", "idle", "C", ""},
	{"AL", "down", "idle", "F", ""},
	{"CL", "down", "idle", "", "B"},
	{"CL", "down", "idle", "A", ""},
	{"CL", "down", "idle", "C", ""},
	{"CL", "down", "idle", "F", ""},
	{"FL", "down", "idle", "", "B"},
	{"FL", "down", "idle", "A", ""},
	{"FL", "down", "idle", "C", ""},
	{"FL", "down", "idle", "F", ""},
	{"", "down", "start failed", "*", "A"},
	{"L", "down", "start failed", "*", "A"},
	{"AL", "down", "start failed", "*", ""},
	{"CL", "down", "start failed", "*", ""},
	{"FL", "down", "start failed", "*", ""},
	{"", "down", "stop failed", "*", "A"},
	{"L", "down", "stop failed", "*", "A"},
	{"AL", "down", "stop failed", "*", ""},
	{"CL", "down", "stop failed", "*", ""},
	{"FL", "down", "stop failed", "*", ""},
	{"", "down", "*ing", "*", ""},
	{"L", "down", "*ing", "*", ""},
	{"AL", "down", "*ing", "*", ""},
	{"CL", "down", "*ing", "*", ""},
	{"FL", "down", "*ing", "*", ""},
	{"", "warn", "*", "*", ""},
	{"L", "warn", "*", "*", ""},
	{"AL", "warn", "*", "*", ""},
	{"CL", "warn", "*", "*", ""},
	{"FL", "warn", "*", "*", ""},
}

var ingStates = []dataset.MonitorState{dataset.Starting, dataset.Restarting, dataset.Stopping, dataset.Freezing, dataset.Thawing, dataset.Tocing}

func expandStates(s string) []dataset.MonitorState {
	switch s {
	case "*ing":
		return ingStates
	case "*":
		return append([]dataset.MonitorState{dataset.Idle, dataset.StartFailed, dataset.StopFailed, dataset.WaitParents}, ingStates...)
	}
	return []dataset.MonitorState{dataset.MonitorState(s)}
}

func expandFlags(s string) []string {
	if s != "*" {
		return []string{s}
	}
	var out []string
	for mask := 0; mask < 8; mask++ {
		f := ""
		for i, l := range "ACF" {
			if mask&(1<<i) != 0 {
				f += string(l)
			}
		}
		out = append(out, f)
	}
	return out
}

// seedSetup builds the two-node world of one expanded row. affVariant
// chooses how the A flag is produced (0: hard anti-affinity with a service
// running on the A-flagged nodes; 1: hard affinity with a service running on
// the other nodes); frzVariant how F is (0: instance frozen; 1: node frozen).
func seedSetup(t *testing.T, aFlags, bFlags string, bAvail dataset.Status, bState dataset.MonitorState, affVariant, frzVariant int) *world {
	w := newWorld(t, "a", "b")
	cfg := &config.ServiceConfig{Name: "svc", Nodes: []string{"b", "a"}}
	if strings.Contains(aFlags, "L") {
		cfg.Nodes = []string{"a", "b"}
	}
	if affVariant == 0 {
		cfg.HardAntiAffinity = []string{"other"}
	} else {
		cfg.HardAffinity = []string{"other"}
	}
	w.addSvc(cfg)
	w.cok = map[string]map[string]bool{"svc": {"a": true, "b": true}}
	for node, flags := range map[string]string{"a": aFlags, "b": bFlags} {
		violates := strings.Contains(flags, "A")
		if violates == (affVariant == 0) {
			w.nodes[node].Data.Services["other"] = dataset.Instance{Avail: dataset.StatusUp}
		}
		if strings.Contains(flags, "C") {
			w.cok["svc"][node] = false
		}
		if strings.Contains(flags, "F") {
			if frzVariant == 0 {
				w.setInst(node, "svc", func(i *dataset.Instance) { i.Frozen = true })
			} else {
				w.setNode(node, func(v *placement.NodeView) { v.Data.Frozen = true })
			}
		}
	}
	w.setInst("b", "svc", func(i *dataset.Instance) { i.Avail = bAvail; i.Monitor.State = bState })
	return w
}

func TestSeedTransitionTable(t *testing.T) {
	for i, row := range seedTransitions {
		for _, bState := range expandStates(row.bState) {
			for _, bFlags := range expandFlags(row.bFlags) {
				for v := 0; v < 4; v++ {
					name := fmt.Sprintf("row %d: A[down idle %s] B[%s %s %s] variant %d", i+1, row.aFlags, row.bAvail, bState, bFlags, v)
					w := seedSetup(t, row.aFlags, bFlags, dataset.Status(row.bAvail), bState, v%2, v/2)
					da := w.step("a")["svc"]
					db := w.step("b")["svc"]
					wantA, wantB := dataset.Idle, bState
					switch row.next {
					case "A":
						wantA = dataset.Ready
					case "B":
						wantB = dataset.Ready
					}
					if row.bAvail == "warn" && db.Monitor.State != dataset.Ready {
						// B's own reaction to its warn instance is not the
						// table's subject: only "nobody goes ready" is.
						wantB = db.Monitor.State
					}
					if da.Monitor.State != wantA || db.Monitor.State != wantB {
						t.Errorf("%s: got A %q (%s), B %q (%s); want A %q, B %q",
							name, da.Monitor.State, da.Reason, db.Monitor.State, db.Reason, wantA, wantB)
					}
					if da.Flags != row.aFlags {
						t.Errorf("%s: got A flags %q, want %q", name, da.Flags, row.aFlags)
					}
					wantBFlags := bFlags
					if !strings.Contains(row.aFlags, "L") {
						wantBFlags += "L"
					}
					if db.Flags != wantBFlags {
						t.Errorf("%s: got B flags %q, want %q", name, db.Flags, wantBFlags)
					}
					if da.Action != ActionNone || db.Action != ActionNone {
						t.Errorf("%s: got actions %q %q, want none (ready first)", name, da.Action, db.Action)
					}
				}
			}
		}
	}
}
