package sim

import (
	"testing"
	"time"
)

// TestFlexWindowProperty is TestReadyWindowProperty's scenarios (the same
// faults, quorum off and on; the odd seeds with node.ready_fast_ack) with
// flex services of a target below their number
// of nodes: never more instances up at once than the target (the
// cluster's truth, not a daemon's view), and exactly the target up once
// every fault ended. HAVEN_SIM_FLEX_SEEDS=N runs N seeds;
// HAVEN_SIM_FLEX_SEED=N runs seed N alone and logs the timeline of a
// failure.
func TestFlexWindowProperty(t *testing.T) {
	first, seeds := propSeeds(t, "HAVEN_SIM_FLEX_SEEDS", "HAVEN_SIM_FLEX_SEED")
	began := time.Now()
	var window, fast, quorumRuns int
	for seed := first; seed <= seeds; seed++ {
		st := windowScenario(t, seed, seed%2 == 1, true)
		window += st.window
		fast += st.fast
		if st.quorum {
			quorumRuns++
		}
	}
	t.Logf("%d seeds (%d with quorum), %d starts after the window and %d after acks, in %s", seeds, quorumRuns, window, fast, time.Since(began).Round(time.Millisecond))
	if window == 0 {
		t.Error("no start after a window: the flex rule never ran")
	}
	if fast == 0 {
		t.Error("no start after acks: the flex fast ack never ran")
	}
}
