package monitor

import (
	"fmt"
	"slices"
	"strings"

	"haven/dataset"
)

// Rollouts (docs/behaviour.md 11): the pure rules that every node applies
// to the same relayed record and the nodes' marks, each for its own
// instance. No leader: a node of batch k takes its turn once every node of
// the batches before it ended its own.

// RolloutProgress is where a rollout stands, from the marks of its nodes.
type RolloutProgress struct {
	// Batch is the index of the first batch not ended (Batches when
	// every batch ended), Batches their number.
	Batch, Batches int
	// OK and Failed list the nodes whose turn ended so (Failed with its
	// cause: "n2: restart failed: ..."), Pending those of Batch that have
	// not ended theirs.
	OK, Failed, Pending []string
	// Skipped lists the nodes down whose turn was skipped
	// (update_down_nodes skip): the batches after theirs go on, and the
	// rollout is not done until they took their turn.
	Skipped []string
	// Paused: more turns failed than the ratio allows and the action is
	// pause: no node takes a turn.
	Paused bool
	// RollBack: more turns failed than the ratio allows and the action is
	// rollback: no node takes a turn, one node (RollbackBy) restores the
	// previous config and rolls it out, a rollout that replaces this one.
	RollBack bool
	// Done: every batch ended and the rollout is not paused or failed.
	Done bool
	// Rollback: the rollout is itself a rollback (of Undoes).
	Rollback bool
	Undoes   string
	// Cause: why a rollout that was to be rolled back is paused instead.
	Cause string
}

// Succeeded reports whether the rollout ended with every node's turn ok.
func (p RolloutProgress) Succeeded() bool { return p.Done && len(p.Failed) == 0 }

// Halted reports whether the rollout stopped short: paused, or failed and
// to be rolled back.
func (p RolloutProgress) Halted() bool { return p.Paused || p.RollBack }

// String is a one-line account ("batch 2/3: n3 pending; ok n1 n2"); that
// of a rollback begins with "rollback of ID: ".
func (p RolloutProgress) String() string {
	var b strings.Builder
	if p.Rollback {
		b.WriteString("rollback")
		if p.Undoes != "" {
			b.WriteString(" of " + p.Undoes)
		}
		b.WriteString(": ")
	}
	switch {
	case p.RollBack:
		b.WriteString("failed, rolling back: " + strings.Join(p.Failed, "; "))
	case p.Paused && len(p.Failed) == 0:
		b.WriteString("paused: " + p.Cause)
	case p.Paused:
		b.WriteString("paused: " + strings.Join(p.Failed, "; "))
		if p.Cause != "" {
			b.WriteString(" (" + p.Cause + ")")
		}
	case p.Done && len(p.Failed) > 0:
		b.WriteString("done with failures: " + strings.Join(p.Failed, "; "))
	case p.Done:
		b.WriteString("done")
	case p.Batch == p.Batches:
		b.WriteString("every batch ended; skipped (node down): " + strings.Join(p.Skipped, " ") + ": their turn when they return")
	default:
		fmt.Fprintf(&b, "batch %d/%d: %s pending", p.Batch+1, p.Batches, strings.Join(p.Pending, " "))
	}
	if len(p.Skipped) > 0 && p.Batch < p.Batches && !p.Halted() {
		b.WriteString("; skipped (node down) " + strings.Join(p.Skipped, " "))
	}
	if len(p.OK) > 0 && !p.Done {
		b.WriteString("; ok " + strings.Join(p.OK, " "))
	}
	return b.String()
}

// RolloutBatches splits the rollout's nodes into its batches.
func RolloutBatches(r *dataset.Rollout) [][]string {
	p := max(1, r.Parallelism)
	var out [][]string
	for i := 0; i < len(r.Nodes); i += p {
		out = append(out, r.Nodes[i:min(i+p, len(r.Nodes))])
	}
	return out
}

// tooManyFailures: more failed turns than MaxFailureRatio of the nodes.
func tooManyFailures(r *dataset.Rollout, failed int) bool {
	return failed > 0 && float64(failed) > r.MaxFailureRatio*float64(len(r.Nodes))
}

// RolloutState says where r stands from marks (each node's mark as it
// announces it; a mark of another rollout counts as none).
func RolloutState(r *dataset.Rollout, marks map[string]*dataset.RolloutMark) RolloutProgress {
	batches := RolloutBatches(r)
	p := RolloutProgress{Batch: len(batches), Batches: len(batches), Rollback: r.Rollback, Undoes: r.Undoes}
	if !r.Rollback {
		p.Cause = r.Cause
	}
	for k, batch := range batches {
		for _, n := range batch {
			m := marks[n]
			switch {
			case m != nil && m.ID == r.ID && m.State == dataset.TurnSkipped:
				p.Skipped = append(p.Skipped, n)
			case m == nil || m.ID != r.ID || !m.Final():
				if p.Batch == len(batches) {
					p.Batch = k
				}
				if p.Batch == k {
					p.Pending = append(p.Pending, n)
				}
			case m.State == dataset.TurnOK:
				p.OK = append(p.OK, n)
			default:
				p.Failed = append(p.Failed, n+": "+m.Cause)
			}
		}
	}
	halt := r.FailureAction != "continue" && tooManyFailures(r, len(p.Failed))
	p.RollBack = halt && r.FailureAction == "rollback" && r.Stopped == ""
	p.Paused = halt && !p.RollBack
	if r.Stopped != "" && !(p.Batch == len(batches) && len(p.Skipped) == 0) {
		// superseded before its end: paused, whatever its failures
		p.Paused, p.RollBack, halt, p.Cause = true, false, true, r.Stopped
	}
	p.Done = p.Batch == len(batches) && !halt && len(p.Skipped) == 0
	return p
}

// SkipDown marks skipped, in marks, the turn of each node of r that is
// not live when r's DownNodes is skip, and only while more than half of
// r's nodes are live (a node cut off from the others never counts them
// skipped: it waits for them, as with wait). A node whose turn ended
// keeps its mark (it is no longer needed). Every node applies it to its
// own view of who is alive.
func SkipDown(r *dataset.Rollout, marks map[string]*dataset.RolloutMark, live func(string) bool) {
	if r.DownNodes != "skip" {
		return
	}
	var up int
	for _, n := range r.Nodes {
		if live(n) {
			up++
		}
	}
	if 2*up <= len(r.Nodes) {
		return
	}
	for _, n := range r.Nodes {
		if m := marks[n]; !live(n) && (m == nil || m.ID != r.ID || !m.Final()) {
			marks[n] = &dataset.RolloutMark{ID: r.ID, State: dataset.TurnSkipped, Cause: "node down"}
		}
	}
}

// RollbackBy is the node that rolls r back once its failures call for it
// (RolloutState's RollBack), among the nodes alive (self included): the
// node that made r if alive, else the first of its nodes alive. Every node
// applies it to the same record; should two views differ, both roll back
// to the same config and the newer record wins.
func RollbackBy(r *dataset.Rollout, alive func(string) bool) string {
	if o := r.Version.Origin; o != "" && alive(o) {
		return o
	}
	for _, n := range r.Nodes {
		if alive(n) {
			return n
		}
	}
	return ""
}

// RolloutTurn says whether node self takes its turn in r now: Go when
// it restarts its instance, else Why it waits ("" when it has no turn to
// take: not in the list, or taken already).
type RolloutTurn struct {
	Go  bool
	Why string
}

// Turn decides self's turn from the marks (the delay after the batch
// before is the caller's: it alone knows when it saw that batch end).
func Turn(r *dataset.Rollout, marks map[string]*dataset.RolloutMark, self string) RolloutTurn {
	idx := slices.Index(r.Nodes, self)
	if idx < 0 {
		return RolloutTurn{}
	}
	if m := marks[self]; m != nil && m.ID == r.ID && m.State != dataset.TurnDelay {
		return RolloutTurn{} // taken (or under way)
	}
	p := RolloutState(r, marks)
	mine := idx / max(1, r.Parallelism)
	switch {
	case p.Paused && len(p.Failed) == 0:
		return RolloutTurn{Why: "rollout paused: " + p.Cause}
	case p.Paused:
		return RolloutTurn{Why: "rollout paused: " + strings.Join(p.Failed, "; ")}
	case p.RollBack:
		return RolloutTurn{Why: "rollout failed, rolled back: " + strings.Join(p.Failed, "; ")}
	case mine > p.Batch:
		return RolloutTurn{Why: fmt.Sprintf("batch %d/%d first (%s)", p.Batch+1, p.Batches, strings.Join(p.Pending, " "))}
	}
	for k, n := range r.Nodes {
		// a node back from a skipped turn catches up once the batch under
		// way (a later one) ended: never more than a batch restarts at once
		if m := marks[n]; k/max(1, r.Parallelism) != mine && m != nil && m.ID == r.ID &&
			(m.State == dataset.TurnRestarting || m.State == dataset.TurnMonitoring) {
			return RolloutTurn{Why: fmt.Sprintf("catching up after %s's turn (%s)", n, m.State)}
		}
	}
	return RolloutTurn{Go: true, Why: fmt.Sprintf("rollout %s, batch %d/%d", r.ID, mine+1, p.Batches)}
}

// Replacements counts, for the local node's start-first turn in r (its
// instance of svc leaving its slot), the instances that replace it: up
// those up or warn on the other alive nodes, coming those and the ones
// claiming or in an action there plus the spare candidates (no instance
// running there). It leaves out the instances that leave their slot
// too, and those of the local node's batch whose turn has not ended
// (they may be leaving theirs unseen yet): so the instances of one batch
// never count on each other to stop; and an instance of a node not in r's
// list that runs (or would start on) another config than r's.
func Replacements(s Snapshot, svc string, r *dataset.Rollout) (up, coming int) {
	p := max(1, r.Parallelism)
	mine := slices.Index(r.Nodes, s.Local) / p
	counted := map[string]bool{s.Local: true}
	for n, v := range s.Nodes {
		if n == s.Local || !v.Alive() {
			continue
		}
		i, ok := v.Data.Services[svc]
		if !ok {
			continue
		}
		if k := slices.Index(r.Nodes, n); k >= 0 && k/p == mine && (i.RolloutMark == nil || i.RolloutMark.ID != r.ID || !i.RolloutMark.Final()) {
			counted[n] = true // a batch mate whose turn is under way
			continue
		}
		st := stateOf(i)
		outside := !slices.Contains(r.Nodes, n) // not one of the old instances: a replacement
		switch {
		case st.Leaving && flexRunning(st):
			counted[n] = true
		case outside && (i.RunDigest != r.Digest && upish(st.Avail) || i.ConfigDigest != r.Digest):
			// a replacement on another config (the spare missed the
			// edit) replaces nothing: neither up nor coming
			counted[n] = true
		case (st.Avail == dataset.StatusUp || st.Avail == dataset.StatusWarn) && !st.State.Transitioning():
			up++
			coming++
			counted[n] = true
		case flexRunning(st) || st.State == dataset.Ready:
			coming++
			counted[n] = true
		}
	}
	for _, n := range candidates(s, svc) {
		if !counted[n] && s.Nodes[n].Data.Services[svc].ConfigDigest == r.Digest {
			coming++
		}
	}
	return up, coming
}
