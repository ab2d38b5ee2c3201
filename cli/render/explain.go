package render

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/placement"
)

// Explain renders `svcmgr explain`: where the service may run and in which
// order (each candidate with its sort key and soft-affinity effect), the
// excluded nodes with every reason, the leader, and the local monitor with
// its decision and what it waits for.
//
//	web: orchestrate ha, placement "load avg", seen from n1 at 2030-01-01T00:00:00Z
//	leader: n2 (would start it now)
//	running: nowhere
//
//	candidates, best first
//	  1  n2  load15 0.12
//	excluded
//	     n3  load15 1.75  node frozen
//
//	monitor on n1: idle since ... (avail down, global expect none)
//	  now:     stays idle
//	  held by: not a candidate: node frozen
func Explain(e *api.Explanation) string {
	cleanAll(e) // peers' text, made inert (Clean)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: orchestrate %s, placement %q, seen from %s at %s\n",
		e.Service, orDash(e.Orchestrate), e.Policy, e.Local, stamp(e.Now))
	if e.Hypothetical {
		fmt.Fprintf(&b, "hypothetical start: as if %s were down on every node\n", e.Service)
	}
	if e.Constraint != "" {
		fmt.Fprintf(&b, "constraints: %s\n", e.Constraint)
	}
	b.WriteString("leader: " + leaderLine(e) + "\n")
	b.WriteString("running: " + orWord(strings.Join(e.Running, ", "), "nowhere") + "\n")
	if e.Requests != "" {
		b.WriteString("requests: " + e.Requests + " per instance\n")
		for _, l := range e.CapacityShort {
			b.WriteString("  short of capacity on " + l + "\n")
		}
	}
	if e.SelfStop != nil {
		b.WriteString("takeover gate: " + SelfStopText(e.SelfStop) + "\n")
	}
	for _, l := range e.Links {
		b.WriteString("heartbeat: " + l + "\n") // a link down: an alarm
	}
	for _, l := range e.Guard {
		b.WriteString("guard: " + l + "\n")
	}
	if f := e.Flex; f != nil {
		fmt.Fprintf(&b, "flex: %d of %d running (min %d, max %d)\n", f.Running, f.Target, f.Min, f.Max)
		if f.Short != "" {
			b.WriteString("  below target: " + f.Short + "\n")
		}
		for _, l := range f.Nodes {
			b.WriteString("  " + l + "\n")
		}
	}

	if r := e.Rollout; r != nil {
		b.WriteString(RolloutText(r))
	}

	var cand, excl table
	cand.gap, excl.gap = 2, 2
	k := 0
	for _, v := range e.Verdicts {
		if v.Candidate {
			k++
			cand.add(c(fmt.Sprintf("  %d", k)), c(v.Node), c(v.Key), c(softText(v)))
			continue
		}
		excl.add(c("   "), c(v.Node), c(v.Key), c(strings.Join(v.Reasons, "; ")))
	}
	b.WriteString("\ncandidates, best first\n")
	if len(cand.rows) == 0 {
		b.WriteString("  none\n")
	}
	b.WriteString(cand.String())
	if len(excl.rows) > 0 {
		b.WriteString("excluded\n")
		b.WriteString(excl.String())
	}
	if e.Monitor != nil {
		b.WriteString("\n")
		b.WriteString(monitorText(e))
	} else {
		fmt.Fprintf(&b, "\n%s is not a node of %s: no local monitor\n", e.Local, e.Service)
	}
	return b.String()
}

func leaderLine(e *api.Explanation) string {
	if e.Leader == "" {
		if e.NaturalLeader != "" {
			return "none: no node may start it now (natural leader " + e.NaturalLeader + ")"
		}
		return "none: no node may start it now"
	}
	s := e.Leader + " (would start it now"
	switch {
	case slices.Contains(e.Running, e.Leader):
		s = e.Leader + " (it runs there"
	case len(e.Running) > 0:
		// a leader starts a service that runs nowhere: this one runs
		s = e.Leader + " (the first candidate; it runs on " + strings.Join(e.Running, ", ") + ", and stays there: svcmgr giveback moves it"
	}
	if e.NaturalLeader != "" && e.NaturalLeader != e.Leader {
		s += "; natural leader " + e.NaturalLeader
	}
	return s + ")"
}

// softText tells the soft affinities' effect on a candidate.
func softText(v placement.Verdict) string {
	if v.Soft < 0 {
		return ""
	}
	s := ""
	switch v.SoftEffect {
	case placement.SoftAhead:
		s = "moved ahead by the soft affinities"
	case placement.SoftBehind:
		s = "moved behind by the soft affinities"
	}
	if len(v.SoftNotes) > 0 {
		notes := strings.Join(v.SoftNotes, "; ")
		if s == "" {
			return notes
		}
		s += " (" + notes + ")"
	}
	return s
}

// monitorText is the local monitor block.
func monitorText(e *api.Explanation) string {
	m := e.Monitor
	var b strings.Builder
	fmt.Fprintf(&b, "monitor on %s: %s since %s (", e.Local, m.State, stamp(m.Since))
	if m.Frozen {
		b.WriteString("instance frozen, ")
	}
	fmt.Fprintf(&b, "avail %s, global expect %s", orUnknown(m.Avail), orDash(m.GlobalExpect))
	if m.Flags != "" {
		b.WriteString(", flags " + m.Flags)
	}
	b.WriteString(")\n")
	var t table
	t.gap = 1
	now := "stays " + string(m.Next)
	if m.Next != m.State {
		now = string(m.State) + " -> " + string(m.Next)
	}
	if m.Action != "" {
		now += ", runs " + string(m.Action)
	}
	t.add(c("  now:"), c(now))
	if m.Reason != "" {
		t.add(c("  because:"), c(m.Reason))
	}
	if m.Blocked != "" && !strings.Contains(m.Reason, m.Blocked) {
		t.add(c("  held by:"), c(m.Blocked))
	}
	if m.GaveUp != "" {
		t.add(c("  gave up:"), c(m.GaveUp+" (no start by the orchestrator here until svcmgr clear, a start, or the resource is up again)"))
	}
	switch {
	case m.Excluded == "":
	case dataset.IsFaultExclusion(m.Excluded):
		t.add(c("  excluded:"), c(m.Excluded+" (while it lasts: back by itself once a check finds the resource fine again)"))
	default:
		t.add(c("  ladder:"), c("excluded: "+m.Excluded+" (until svcmgr clear, or the service is up on another node)"))
	}
	for _, l := range m.Ladder {
		t.add(c("  ladder:"), c(l))
	}
	var waits []string
	if !m.ReadyUntil.IsZero() {
		waits = append(waits, "the end of the ready window at "+stamp(m.ReadyUntil)+until(e.Now, m.ReadyUntil))
	} else if !m.Deadline.IsZero() {
		waits = append(waits, "its next decision at "+stamp(m.Deadline)+until(e.Now, m.Deadline))
	}
	if len(m.WaitParents) > 0 {
		waits = append(waits, "parents not up: "+strings.Join(m.WaitParents, ", "))
	}
	if len(m.ParentCycle) > 0 {
		waits = append(waits, "a cycle of parents that never ends: "+strings.Join(m.ParentCycle, " -> ")+" (each waits for the next: fix DEFAULT.parents)")
	}
	if len(m.WaitChildren) > 0 {
		waits = append(waits, "children not down: "+strings.Join(m.WaitChildren, ", "))
	}
	if m.Target != "" {
		tgt := "target " + m.Target
		if m.TargetID != "" {
			tgt += " (id " + m.TargetID + ")"
		}
		switch {
		case m.TargetFailed != "":
			tgt += " cannot be reached: " + m.TargetFailed
		case m.TargetReached && len(m.TargetUnknown) > 0:
			tgt += " reached on the known nodes (unknown: " + strings.Join(m.TargetUnknown, ", ") + ")"
		case m.TargetReached:
			tgt += " reached"
		case len(m.TargetPending) > 0:
			tgt += " reached but on " + strings.Join(m.TargetPending, ", ") + " (shut down: applied when back)"
		default:
			tgt += " in progress"
		}
		waits = append(waits, tgt)
	}
	for i, w := range waits {
		label := ""
		if i == 0 {
			label = "  waits for:"
		}
		t.add(c(label), c(w))
	}
	b.WriteString(t.String())
	return b.String()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// until says how far t is from now: " (in 1.5s)", " (1s ago)".
func until(now, t time.Time) string {
	d := t.Sub(now).Round(100 * time.Millisecond)
	if d < 0 {
		return " (" + (-d).String() + " ago)"
	}
	return " (in " + d.String() + ")"
}

func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}

// RolloutText is a rollout as explain prints it: where it stands, then
// each node's turn, and why a turn not ended waits.
func RolloutText(r *dataset.RolloutStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rollout %s of config %s, %d at a time: %s: %s\n", r.ID, dataset.ShortDigest(r.Digest), r.Parallelism,
		strings.ReplaceAll(r.State, "_", " "), r.Summary)
	var t table
	t.gap = 2
	for _, tu := range r.Turns {
		turn := orDash(tu.State)
		if tu.Cause != "" {
			turn += ": " + tu.Cause
		}
		if tu.Why != "" {
			turn += " (" + tu.Why + ")"
		}
		runs := "runs " + orDash(dataset.ShortDigest(tu.RunDigest))
		t.add(c("  "+tu.Node), c(fmt.Sprintf("batch %d", tu.Batch)), c(runs), c(turn))
	}
	b.WriteString(t.String())
	return b.String()
}
