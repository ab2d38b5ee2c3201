package sim

import (
	"testing"
	"time"
)

// TestFlexWindowProperty is TestReadyWindowProperty's scenarios (the same
// faults, quorum off and on) with flex services of a target below their
// number of nodes: never more instances up at once than the target (the
// cluster's truth, not a daemon's view), and exactly the target up once
// every fault ended. HAVEN_SIM_FLEX_SEEDS=N runs N seeds;
// HAVEN_SIM_FLEX_SEED=N runs seed N alone and logs the timeline of a
// failure.
func TestFlexWindowProperty(t *testing.T) {
	first, seeds := propSeeds(t, "HAVEN_SIM_FLEX_SEEDS", "HAVEN_SIM_FLEX_SEED")
	began := time.Now()
	var window, quorumRuns int
	for seed := first; seed <= seeds; seed++ {
		st := windowScenario(t, seed, false, true)
		window += st.window
		if st.quorum {
			quorumRuns++
		}
	}
	t.Logf("%d seeds (%d with quorum), %d starts after the window, in %s", seeds, quorumRuns, window, time.Since(began).Round(time.Millisecond))
	if window == 0 {
		t.Error("no start after a window: the flex rule never ran")
	}
}
