package upgrade

import (
	"fmt"
	"sort"
	"strings"
)

// Current is the newest format version of every message, stream record and
// file this build writes (heartbeat messages, the state file); it also
// reads Current-1 (Previous). A release that changes a format bumps it,
// with a test that the previous version still reads and interoperates.
//
// Version 1 is the format of the first release, which does not announce
// a version of its own (a message, a file or a peer without one is
// version 1). Version 2 adds the feature level to the state file and the
// version fields to the heartbeat messages' header.
const Current = 2

// Previous is the oldest format version this build reads.
const Previous = Current - 1

// Member is what a node knows of one cluster member's versions.
type Member struct {
	Name string
	// Heard: a message of the member was received since this node
	// started (its Max is known); a member never heard holds the level.
	Heard bool
	// Up: the member is alive now.
	Up bool
	// Max is the newest format version the member reads (1 for a member
	// of the first release, which does not say).
	Max int
	// Level is the feature level the member runs at (1 when it does not say).
	Level int
}

// norm maps 0 (not said: the first release) to version 1.
func norm(v int) int { return max(1, v) }

// Level is the cluster feature level for a node that reads formats up to
// self and persisted the level persisted (0: never moved: 1): the lowest
// Max of every member, self included, once every member is up and heard
// (a member down may have been taken back to an older release meanwhile:
// the level, which never comes back, waits for it); never below persisted
// (it never moves down by itself); raised to a member's Level when that
// member runs higher and this node reads it (a node that was away while
// the level moved). waiting lists the members that hold the level back
// (down, not heard yet, or reading less than self).
func Level(self, persisted int, members []Member) (level int, waiting []string) {
	self, persisted = norm(self), norm(persisted)
	low := self
	for _, m := range members {
		switch {
		case !m.Heard:
			low = 0
			waiting = append(waiting, m.Name+" (not heard yet)")
		case !m.Up:
			low = 0
			waiting = append(waiting, m.Name+" (down)")
		case norm(m.Max) < self:
			low = min(low, norm(m.Max))
			waiting = append(waiting, fmt.Sprintf("%s (reads formats up to %d)", m.Name, norm(m.Max)))
		}
	}
	level = max(persisted, low)
	for _, m := range members {
		if m.Heard && norm(m.Level) > level && norm(m.Level) <= self {
			level = norm(m.Level)
		}
	}
	sort.Strings(waiting)
	return min(level, max(self, persisted)), waiting
}

// Compatible reports whether ha orchestration may run with these members:
// every live member reads the running level's formats (its Max is at
// least level) and is within one version step of this node. reason names
// the first member that is not, with both versions.
func Compatible(self, level int, members []Member) (ok bool, reason string) {
	self, level = norm(self), norm(level)
	var bad []string
	for _, m := range members {
		if !m.Up || !m.Heard {
			continue
		}
		mx := norm(m.Max)
		switch {
		case mx < level:
			bad = append(bad, fmt.Sprintf("%s reads formats up to %d, below the cluster feature level %d", m.Name, mx, level))
		case mx > self+1 || mx < self-1:
			bad = append(bad, fmt.Sprintf("%s reads formats up to %d, more than one version step from this node's %d", m.Name, mx, self))
		}
	}
	if len(bad) == 0 {
		return true, ""
	}
	sort.Strings(bad)
	return false, strings.Join(bad, "; ")
}

// Verdict says whether the next node may be upgraded (stopped, its
// binary replaced, started) now, and why.
type Verdict struct {
	Safe   bool
	Reason string
}

// SafeNext: the next node may be upgraded when every member is up and
// compatible (a stopped node leaves ha with one node fewer: a member
// already down or incompatible would leave too few), and the node's own
// state is written. down lists the members not up; stateErr is the
// node's state write error ("" when written).
func SafeNext(self, level int, members []Member, stateErr string) Verdict {
	var down, unheard []string
	for _, m := range members {
		switch {
		case !m.Up:
			down = append(down, m.Name)
		case !m.Heard:
			unheard = append(unheard, m.Name)
		}
	}
	sort.Strings(down)
	if len(down) > 0 {
		return Verdict{Reason: "wait: not every member is up (" + strings.Join(down, ", ") + "): upgrade one node at a time, once the last one is back"}
	}
	if len(unheard) > 0 {
		return Verdict{Reason: "wait: the data of " + strings.Join(unheard, ", ") + " has not come yet (this node just started?)"}
	}
	if ok, why := Compatible(self, level, members); !ok {
		return Verdict{Reason: "no: " + why}
	}
	if stateErr != "" {
		return Verdict{Reason: "wait: this node's state is not written: " + stateErr}
	}
	lv, waiting := Level(self, level, members)
	if len(waiting) > 0 {
		return Verdict{Safe: true, Reason: fmt.Sprintf("yes: every member is up and compatible; feature level %d until %s run the new release", lv, strings.Join(waiting, ", "))}
	}
	return Verdict{Safe: true, Reason: fmt.Sprintf("yes: every member is up and runs formats up to %d (feature level %d)", self, lv)}
}
