//go:build havenplant

package model

import (
	"testing"
	"time"

	"haven/internal/planted"
	"haven/sim"
)

// plantedCases are the safety defects re-introduced one at a time, the
// world where each shows, and the bound that finds it.
var plantedCases = []struct {
	bug string
	w   *World
	b   Bounds
}{
	// the guard ends the apps of a node whose acknowledged beats
	// stopped, whatever its vote said: it hides this defect within the
	// bound, so this case runs without it
	{planted.TieWins, WithoutGuard(Tie2(), false), Bounds{Depth: 8, Faults: 2}},
	{planted.NoStopDeadline, lean(OneVote2()), Bounds{Depth: 6, Faults: 2}},
	{planted.NoStopDeadline, Majority3(), Bounds{Depth: 6, Faults: 1}},
	{planted.PlainVoteOurs, Plain2(), Bounds{Depth: 8, Faults: 1}},
	{planted.LateAlive, heldOnly(OnPath2()), Bounds{Depth: 5, Faults: 2}},
	{planted.AckFailedWrite, Admin2(), Bounds{Depth: 4, Faults: 1, Admin: 1}},
	{planted.GaveUpKeeps, WithoutCrashes(Ladder2()), Bounds{Depth: 7, Faults: 3}},
	{planted.FlexNoGate, Flex3(), Bounds{Depth: 4, Faults: 1}},
	// the rollback made by a node cut off shows in what runs after the
	// heal: the liveness check (configs converged) finds it, in rollout3
	// without the crashes, pauses and deaths of an app (not needed for
	// it, and each state costs one more world)
	{planted.RollbackNoQuorum, cutOnly(Rollout3()), Bounds{Depth: 4, Faults: 2, Live: time.Minute}},
	{planted.ReplacedEarly, Rollout3SF(), Bounds{Depth: 4, Faults: 1}},
}

// lean is w without the one-way losses, the pauses and the failed stops
// (the CI bound explores the whole world with the code as it is; the
// planted run, twice, with and without the merge, keeps to the lean one).
func lean(w *World) *World {
	c := *w
	c.Name += "-lean"
	c.OneWay, c.Pause, c.StopFailures = false, "", false
	return &c
}

// The checker finds each planted defect, with a shortest trace that
// replays in the simulation and fails there (and passes once the defect
// is removed: the defect, not the trace, breaks the rule).
func TestPlantedBugsFound(t *testing.T) {
	for _, c := range plantedCases {
		t.Run(c.bug+"/"+c.w.Name, func(t *testing.T) {
			planted.Set(c.bug, true)
			defer planted.Set(c.bug, false)
			r, err := Check(c.w, c.b)
			if err != nil {
				t.Fatal(err)
			}
			v := r.Violation
			if v == nil {
				t.Fatalf("%s planted in %s: no violation within depth %d, %d faults (%d states)", c.bug, c.w.Name, c.b.Depth, c.b.Faults, r.States)
			}
			t.Logf("%s in %s: %s; shortest trace %d moves, found after %d states (%d worlds built, %d moves left out by the reduction) in %s", c.bug, c.w.Name, v.Invariant, len(v.Trace), r.States, r.Replays, r.Pruned, r.Elapsed.Round(1e6))
			t.Logf("the scenario:\n%s", v.Script)
			// the reductions (the merge of equal states, the
			// partial-order reduction) are sound here: without either,
			// every path in every order, the shortest violation is as
			// short
			nb := c.b
			nb.Depth, nb.NoMerge, nb.NoReduce = len(v.Trace), true, true
			full, err := Check(c.w, nb)
			if err != nil {
				t.Fatal(err)
			}
			if full.Violation == nil || len(full.Violation.Trace) != len(v.Trace) {
				t.Errorf("without the reductions: %+v, want a violation after %d moves", full.Violation, len(v.Trace))
			} else {
				t.Logf("without the reductions: %d moves too, %d worlds built", len(full.Violation.Trace), full.Replays)
			}
			res, err := sim.RunScript(c.bug, v.Script)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Failed) == 0 {
				t.Errorf("the trace does not fail in the simulation:\n%s", res.Output)
			}
			planted.Set(c.bug, false)
			res, err = sim.RunScript(c.bug, v.Script)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Failed) != 0 {
				t.Errorf("the trace fails without the defect too: %v", res.Failed)
			}
		})
	}
}

// heldOnly is w without the faults of single frames and the partition
// (the CI bound explores the whole world with the code as it is).
func heldOnly(w *World) *World {
	c := *w
	c.Name += "-held"
	c.Frames, c.NoPartition = false, true
	return &c
}

// cutOnly is w without the crashes, the pauses and the deaths of an app:
// its faults are the partitions (and their heal) and the failed restarts.
func cutOnly(w *World) *World {
	c := *w
	c.Name += "-cut"
	c.NoCrash, c.Pause, c.Kills = true, "", false
	return &c
}
