package sim

import (
	"os"
	"strconv"
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
	seeds := 60
	if v := os.Getenv("HAVEN_SIM_FLEX_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("HAVEN_SIM_FLEX_SEEDS=%q: want a positive number", v)
		}
		seeds = n
	}
	first := int64(1)
	if v := os.Getenv("HAVEN_SIM_FLEX_SEED"); v != "" {
		// one seed, with its timeline on failure
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("HAVEN_SIM_FLEX_SEED=%q: want a number", v)
		}
		first, seeds, windowTimeline = n, int(n), true
	}
	began := time.Now()
	var window, quorumRuns int
	for seed := first; seed <= int64(seeds); seed++ {
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
