// Package model is an exhaustive checker of Haven's safety rules over the
// real node core, in the simulation (package sim: the real cores, the
// real driver, the heartbeat's in-memory network, a fake clock). A world
// is a small scenario: its setup lines, a warm-up, and the moves that may
// happen from there (time passing, and faults: a crash, a daemon start, a
// partition and its heal, an arbitrator cut off, a failed stop, an app
// dying, a failed restart, frames held back, lost or duplicated on the
// path...) and admin actions. The checker enumerates every sequence of
// moves breadth-first, up to a depth, a number of faults and a number of
// admin actions, merges the states that hash equal, explores one order of
// two moves that commute (a partial-order reduction), and checks the invariants at every state: the service
// never runs on two nodes at once (the world's truth, and the simulation's
// start observer, never a node's belief), no fencing token goes backwards,
// an acknowledged admin action is never lost, and no node is seen up
// while it does not run (the simulation's observers). The first
// violation found is one of the shortest: its trace is a scenario that
// sim.RunScript replays (docs/model.md).
package model

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"haven/sim"
)

// World is a small cluster and the moves that may happen in it.
type World struct {
	Name   string
	Setup  []string // the cluster, arbitrator and service lines
	Warmup string   // the first command, before any move ("run 12s")
	// Then are more lines of the warm-up, after Warmup (an edit and the
	// rollout asked: the exploration starts mid-rollout).
	Then    []string
	Nodes   []string // sorted
	Service string   // the service checked, and acted on
	// Flex, when set, makes Service a flex service of that flex_max: at
	// most Flex instances up at once, and no start begun while Flex were
	// active (running or starting) on other nodes, instead of the
	// failover rules (one instance, no start while active elsewhere).
	Flex int
	Step string // the move of time ("run 3s")
	// Also are more failover services checked (the same invariants; the
	// moves act on Service only).
	Also []string
	// Arbitrator is the name of the arbitrator whose reachability the
	// moves cut and restore ("" for none).
	Arbitrator string
	// StopFailures offers a failed stop on each node as a fault.
	StopFailures bool
	// Kills offers the death of the service's app on a node where it
	// runs (its process dies; the next check says down) as a fault.
	Kills bool
	// RestartFailures offers, on each node, that the next restart of the
	// service's app there fails, as a fault.
	RestartFailures bool
	// DaemonStops offers the stop of a running daemon (maintenance: its
	// services keep running) as a fault.
	DaemonStops bool
	// DiskFaults offers a node's state disk failing (every write fails
	// until "ok") and, when it fails, its repair, as faults.
	DiskFaults bool
	// OneWay offers the loss of every frame from one node to another as
	// a fault (heal ends it).
	OneWay bool
	// Pause, when set, offers a pause of a running daemon for that long
	// (SIGSTOP, then SIGCONT) as a fault.
	Pause string
	// Withhold offers someone on the path holding back every frame of a
	// node to another as a fault, and, while frames are held, their
	// release (newest first: the end of that fault, not a fault).
	Withhold bool
	// Frames offers the faults of one frame: the next frame of a node to
	// another held back (overtaken by those after it, and released as
	// above), lost, or the last one delivered twice.
	Frames bool
	// NoPartition leaves out the partitions (and so their heal).
	NoPartition bool
	// NoCrash leaves out the crashes.
	NoCrash bool
	// Admin are the admin actions offered on the service, on each node
	// whose daemon runs ("switch" is switch --to each other node), up to
	// Bounds.Admin on a path: not faults.
	Admin []string
	// Rollout, when set, is the update_parallelism of the rollout the
	// warm-up asks, and checks its rules: no turn restarts the whole
	// instance while Rollout others do (sim's RestartsCrowded), no
	// rollout is undone by two rollbacks (sim's Rollbacks), and, on a
	// path without a fault, never fewer than Least instances up since
	// the rollout was asked; the liveness check (Bounds.Live) wants the
	// configs converged too.
	Rollout int
	Least   int
}

// Bounds are how far the checker explores: Depth moves after the warm-up,
// of which at most Faults are faults (the others let time pass).
type Bounds struct {
	Depth  int
	Faults int
	// Admin is how many admin actions a path may hold (the world's
	// Admin).
	Admin int
	// NoMerge explores every path, without merging the states that hash
	// equal (to check that the merge hides no violation).
	NoMerge bool
	// NoReduce explores both orders of two moves that commute (to check
	// that the partial-order reduction hides no violation).
	NoReduce bool
	// Live, when set, checks liveness at every distinct state: once the
	// faults stop (every fault in force repaired, every daemon started)
	// each service runs on one node within Live.
	Live time.Duration
}

// Violation is an invariant that did not hold, and a shortest trace to it.
type Violation struct {
	Invariant string
	// Trace is the moves after the warm-up, in order.
	Trace []string
	// Script is the whole scenario: setup, warm-up, the trace, and the
	// expect lines that fail on it.
	Script string
}

// Result is what a check explored.
type Result struct {
	States    int           // distinct states (by their hash)
	Merged    int           // moves that led to a state already seen
	Pruned    int           // moves left out by the partial-order reduction (some explored later from another visit)
	Reopened  int           // worlds met again with moves that slept at every visit before
	Replays   int           // worlds rebuilt (one per move explored)
	Depth     int           // the deepest level explored
	Elapsed   time.Duration // wall time
	Violation *Violation    // the first found (a shortest), or nil
}

// facts is what the checker keeps of the world besides the cluster: the
// faults in force (so that the moves offered are those that make sense)
// and what the token invariant compares with.
type facts struct {
	Faults      int               // faults used on the path
	Admin       int               // admin actions on the path
	Cut         bool              // the nodes are partitioned
	OneWay      []string          // the links cut one way ("n1>n2"), sorted
	Unreachable []string          // the nodes cut off from the arbitrator, sorted
	Fails       []string          // "node action": the next action of the service there fails (scripted), sorted
	BadDisks    []string          // nodes whose state writes fail, sorted
	MaxToken    map[string]uint64 // by service: the greatest fencing token an app saw so far
	Tokens      map[string]uint64 // by "service/node": the token of its app's last start
}

func (f facts) clone() facts {
	f.Unreachable = slices.Clone(f.Unreachable)
	f.OneWay = slices.Clone(f.OneWay)
	f.Fails = slices.Clone(f.Fails)
	f.BadDisks = slices.Clone(f.BadDisks)
	f.Tokens, f.MaxToken = maps.Clone(f.Tokens), maps.Clone(f.MaxToken)
	return f
}

func toggle(set []string, n string, in bool) []string {
	i := slices.Index(set, n)
	switch {
	case in && i < 0:
		set = append(set, n)
		sort.Strings(set)
	case !in && i >= 0:
		set = slices.Delete(set, i, i+1)
	}
	return set
}

// state is a node of the explored graph.
type state struct {
	trace []string
	facts facts
	seen  seen
	last  move // the move that led here
	// only, when set, are the moves still to explore from a world
	// explored already (reopened: the others were)
	only map[string]bool
}

// seen is what the moves offered depend on in a world.
type seen struct {
	machines map[string]string // sim.Cluster.Machine of each node
	held     map[string]int    // frames held back for each node
	holding  map[string]bool   // "n1>n2": every frame of n1 to n2 held back
	up       map[string]bool   // the service's app runs there
}

// move is a line of the scenario format and its effect on the facts.
type move struct {
	line  string
	fault bool
	admin bool
	apply func(*facts)
	// foot is the node whose flag the move sets, when that is all it
	// does ("" otherwise: see footprint)
	foot string
}

// footprint is the node whose flag the move line sets, when that is all
// it does: a scripted failure of the next action there, the node cut off
// from the arbitrator or back, its daemon paused. Nothing runs at that
// instant: the daemons read the flag later. Every other move lets the
// daemons work at its instant (the simulation settles them: a crash, a
// kill, a disk failing, a partition, a frame held...), and that work
// depends on the flags already set: a crash of n2 lets n1 run the probe
// of the arbitrator due at that instant, which n1 paused would not run
// (TestCommute found it), and whose answer depends on n1's cut from the
// arbitrator. "" for those.
func footprint(line string) string {
	f := strings.Fields(line)
	switch {
	case len(f) == 5 && f[0] == "fail", len(f) == 3 && f[0] == "pause":
		return f[1]
	case len(f) == 4 && f[0] == "arbitrator" && (f[2] == "reachable" || f[2] == "unreachable"):
		return f[3]
	}
	return ""
}

// commute reports whether a and b, one right after the other at the same
// instant, lead to the same world in either order: each sets a flag of
// one node alone, and not the same node (TestCommute checks it).
func commute(a, b move) bool { return a.foot != "" && b.foot != "" && a.foot != b.foot }

// moves are the moves offered from a state whose world is c.
func (w *World) moves(sn seen, f facts, b Bounds) []move {
	machines := sn.machines
	ms := []move{{line: w.Step}}
	for _, n := range w.Nodes {
		if sn.held[n] > 0 {
			ms = append(ms, move{line: "release " + n})
		}
	}
	if f.Admin < b.Admin {
		ms = append(ms, w.adminMoves(machines)...)
	}
	if f.Faults >= b.Faults {
		return ms
	}
	add := func(line string, apply func(*facts)) {
		ms = append(ms, move{line: line, fault: true, apply: apply, foot: footprint(line)})
	}
	for _, n := range w.Nodes {
		if machines[n] == "crashed" || machines[n] == "stopped" {
			add(n+": nodemgr daemon start", nil)
		} else if !w.NoCrash {
			add("crash "+n, nil)
		}
		if w.DaemonStops && machines[n] == "running" {
			add(n+": nodemgr daemon stop", nil)
		}
	}
	healed := func(f *facts) { f.Cut, f.OneWay = false, nil }
	if f.Cut || len(f.OneWay) > 0 {
		add("heal", healed)
	}
	if !f.Cut && !w.NoPartition {
		for i, n := range w.Nodes {
			rest := slices.Delete(slices.Clone(w.Nodes), i, i+1)
			add("partition "+n+" | "+strings.Join(rest, " "), func(f *facts) { f.Cut = true })
			if len(w.Nodes) == 2 {
				break // n1 | n2 is n2 | n1
			}
		}
	}
	if w.OneWay {
		for _, from := range w.Nodes {
			for _, to := range w.Nodes {
				if l := from + ">" + to; from != to && !slices.Contains(f.OneWay, l) {
					add("oneway "+from+" "+to, func(f *facts) { f.OneWay = toggle(f.OneWay, l, true) })
				}
			}
		}
	}
	if w.Pause != "" {
		for _, n := range w.Nodes {
			if machines[n] == "running" {
				add("pause "+n+" "+w.Pause, nil)
			}
		}
	}
	if w.Arbitrator != "" {
		for _, n := range w.Nodes {
			if slices.Contains(f.Unreachable, n) {
				add("arbitrator "+w.Arbitrator+" reachable "+n, func(f *facts) { f.Unreachable = toggle(f.Unreachable, n, false) })
			} else {
				add("arbitrator "+w.Arbitrator+" unreachable "+n, func(f *facts) { f.Unreachable = toggle(f.Unreachable, n, true) })
			}
		}
	}
	if w.DiskFaults {
		for _, n := range w.Nodes {
			if slices.Contains(f.BadDisks, n) {
				add("disk "+n+" ok", func(f *facts) { f.BadDisks = toggle(f.BadDisks, n, false) })
			} else {
				add("disk "+n+" fail", func(f *facts) { f.BadDisks = toggle(f.BadDisks, n, true) })
			}
		}
	}
	for _, n := range w.Nodes {
		for _, a := range []string{"stop", "restart"} {
			if (a == "stop" && w.StopFailures || a == "restart" && w.RestartFailures) && !slices.Contains(f.Fails, n+" "+a) {
				add("fail "+n+" "+w.Service+" "+a+" 1", func(f *facts) { f.Fails = toggle(f.Fails, n+" "+a, true) })
			}
		}
		if w.Kills && sn.up[n] {
			add("kill "+n+" "+w.Service, nil)
		}
	}
	for _, from := range w.Nodes {
		for _, to := range w.Nodes {
			if from == to {
				continue
			}
			if w.Withhold && !sn.holding[from+">"+to] {
				add("withhold "+from+" "+to, nil)
			}
			if w.Frames {
				add("withhold "+from+" "+to+" 1", nil)
				add("lose "+from+" "+to+" 1", nil)
				add("duplicate "+from+" "+to, nil)
			}
		}
	}
	return ms
}

// adminMoves are the admin actions on the service offered on the nodes
// whose daemon runs.
func (w *World) adminMoves(machines map[string]string) []move {
	var ms []move
	for _, n := range w.Nodes {
		if machines[n] != "running" {
			continue
		}
		for _, a := range w.Admin {
			if a != "switch" {
				ms = append(ms, move{line: n + ": svcmgr -s " + w.Service + " " + a, admin: true})
				continue
			}
			for _, to := range w.Nodes {
				if to != n {
					ms = append(ms, move{line: n + ": svcmgr -s " + w.Service + " switch --to " + to, admin: true})
				}
			}
		}
	}
	return ms
}

// build rebuilds the world of a trace: a fresh simulation runs the setup,
// the warm-up and the trace (the simple, sound clone: the simulation is
// deterministic, so the same lines give the same world).
func (w *World) build(trace []string) (*sim.Cluster, error) {
	s := sim.NewSession(w.Name)
	return w.more(s, append(w.start(), trace...))
}

// start is the setup and the warm-up: the lines before any move.
func (w *World) start() []string {
	return append(append(slices.Clone(w.Setup), w.Warmup), w.Then...)
}

// more runs lines in the session s and returns its cluster.
func (w *World) more(s *sim.Session, lines []string) (*sim.Cluster, error) {
	for _, l := range lines {
		if err := s.Exec(l); err != nil {
			return nil, err
		}
	}
	c := s.Cluster()
	if f := s.Failed(); len(f) > 0 {
		return nil, fmt.Errorf("a move failed: %s", strings.Join(f, "; "))
	}
	return c, nil
}

// Hash is the canonical digest of a world and the checker's facts: the
// simulated time, the faults in force, the admin actions used and the
// targets acknowledged, per link what stands on the path, and per node
// what runs there (the
// machine, the daemon, the service's processes, the token its app saw),
// its disk (the durable state), and, when its daemon runs, its core's
// durable state in memory, the view its decisions read (Snapshot), its
// quorum standing and its node monitor. Two orders of the same
// independent moves give the same world, so the same hash.
func Hash(c *sim.Cluster, w *World, f facts) string {
	h := sha256.New()
	now := sim.T0.Add(c.Now())
	fmt.Fprintf(h, "t=%d faults=%d cut=%v oneway=%v unreach=%v fails=%v baddisks=%v\n", c.Now(), f.Faults, f.Cut, f.OneWay, f.Unreachable, f.Fails, f.BadDisks)
	for _, svc := range w.services() {
		fmt.Fprintf(h, "%s max=%d overlaps=%d up=%v rollbacks=%s\n", svc, f.MaxToken[svc], len(w.startsTooMany(c, svc)), c.UpOn(svc), c.RollbackIDs(svc))
	}
	enc := json.NewEncoder(h)
	fmt.Fprintf(h, "admin=%d acks=", f.Admin)
	for _, a := range c.Acks() {
		fmt.Fprintf(h, "%s:%s ", a.Node, a.ID)
	}
	for _, n := range w.Nodes {
		fmt.Fprintf(h, "\nnode %s %s tokens=", n, c.Machine(n))
		for _, svc := range w.services() {
			fmt.Fprintf(h, "%d ", c.AppToken(n, svc))
		}
		fmt.Fprintln(h)
		for _, to := range w.Nodes {
			if p := c.PathState(n, to); p != "" {
				fmt.Fprintf(h, "path %s>%s %s\n", n, to, p)
			}
		}
		_ = enc.Encode(c.DiskState(n))
		if core := c.Core(n); core != nil {
			_ = enc.Encode(core.State())
			_ = enc.Encode(core.Snapshot(now))
			_ = enc.Encode(core.QuorumInfo(now))
			fmt.Fprintf(h, "monitor %s\n", core.NodeMonitor())
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// check returns the invariant that does not hold in c, or "", and updates
// the token facts.
func (w *World) check(c *sim.Cluster, f *facts) string {
	for _, n := range w.Nodes {
		if r := c.Revivals(n); len(r) > 0 {
			return "a node that did not run was seen up: " + r[0]
		}
	}
	for _, svc := range w.services() {
		if inv := w.checkService(c, f, svc); inv != "" {
			return inv
		}
	}
	return ""
}

// checkService is check for the service svc.
func (w *World) checkService(c *sim.Cluster, f *facts, svc string) string {
	if up := c.UpOn(svc); len(up) > w.most(svc) {
		return fmt.Sprintf("%s runs on %s at once", svc, strings.Join(up, ","))
	}
	if o := w.startsTooMany(c, svc); len(o) > 0 {
		if w.most(svc) > 1 {
			return fmt.Sprintf("%s started while %d were active elsewhere: %s", svc, w.most(svc), o[0])
		}
		return fmt.Sprintf("%s started while active elsewhere: %s", svc, o[0])
	}
	if l := c.LostAcks(svc); len(l) > 0 {
		return "an acknowledged admin action was lost: " + l[0]
	}
	if inv := w.checkRollout(c, f, svc); inv != "" {
		return inv
	}
	// the simulation's observer compares each start's token with those
	// before it in time: two starts within one move (two instances of
	// a flex service) are in their order, which the nodes' last tokens
	// alone do not tell
	if b := c.TokensBackwards(svc); len(b) > 0 {
		return "fencing token went backwards: " + svc + ": " + b[0]
	}
	for _, n := range w.Nodes {
		t := c.AppToken(n, svc)
		if t == f.Tokens[svc+"/"+n] {
			continue
		}
		f.Tokens[svc+"/"+n] = t
		f.MaxToken[svc] = max(f.MaxToken[svc], t)
	}
	return ""
}

// checkRollout is check of a rollout world's rules for svc: no turn
// restarts the whole instance while Rollout others do, no rollout is
// undone by two rollbacks, and with no fault on the path, never fewer
// than Least instances up since the rollout was asked.
func (w *World) checkRollout(c *sim.Cluster, f *facts, svc string) string {
	if w.Rollout == 0 || svc != w.Service {
		return ""
	}
	if o := c.RestartsCrowded(svc, w.Rollout); len(o) > 0 {
		return fmt.Sprintf("%s restarted while %d restarted elsewhere: %s", svc, w.Rollout, o[0])
	}
	if r := c.Rollbacks(svc); len(r) > 0 {
		return "a rollout rolled back twice: " + r[0]
	}
	if n, ok := c.FewestUp(svc); ok && f.Faults == 0 && n < w.Least {
		return fmt.Sprintf("%s down to %d instances up since the rollout, with no fault", svc, n)
	}
	return ""
}

// recovery are the moves that end every fault in force in a state: the
// frames held are released, the network healed, the arbitrator reached,
// the disks repaired, no more failed stops (the daemons are started by
// live).
func (w *World) recovery(f facts, sn seen) []string {
	var out []string
	for _, n := range w.Nodes {
		holding := false
		for _, from := range w.Nodes {
			holding = holding || sn.holding[from+">"+n]
		}
		if sn.held[n] > 0 || holding {
			out = append(out, "release "+n)
		}
	}
	if f.Cut || len(f.OneWay) > 0 {
		out = append(out, "heal")
	}
	for _, n := range f.Unreachable {
		out = append(out, "arbitrator "+w.Arbitrator+" reachable "+n)
	}
	for _, n := range f.BadDisks {
		out = append(out, "disk "+n+" ok")
	}
	for _, na := range f.Fails {
		n, a, _ := strings.Cut(na, " ")
		out = append(out, "fail "+n+" "+w.Service+" "+a+" off")
	}
	return out
}

// settleStop is how long a daemon stop in progress may take to end (its
// stop actions): after it, live starts every daemon that does not run.
const settleStop = 10 * time.Second

// live checks liveness after trace: the faults stop (recovery), a daemon
// stop in progress ends, every daemon that does not run is started, time
// runs for within, and each service must then run on exactly one node.
// It returns the violation ("" for none) and the lines it added.
func (w *World) live(trace []string, f facts, sn seen, within time.Duration) (string, []string, error) {
	tail := append(w.recovery(f, sn), "run "+settleStop.String())
	s := sim.NewSession(w.Name)
	c, err := w.more(s, append(append(w.start(), trace...), tail...))
	if err != nil {
		return "", nil, err
	}
	var starts []string
	for _, n := range w.Nodes {
		if m := c.Machine(n); m == "crashed" || m == "stopped" {
			starts = append(starts, n+": nodemgr daemon start")
		}
	}
	starts = append(starts, "run "+within.String())
	tail = append(tail, starts...)
	if c, err = w.more(s, starts); err != nil {
		return "", nil, err
	}
	for _, svc := range w.services() {
		if up := c.UpOn(svc); len(up) != w.most(svc) && w.Rollout == 0 {
			return fmt.Sprintf("%s up on %d nodes %s after the faults stopped", svc, len(up), within), tail, nil
		}
	}
	// a rollout world: the configs converge (an app's death gives its
	// node up on web by design, two of them leave it on one node until
	// svcmgr clear: the count of instances is not the rule checked)
	if d := c.Unconverged(w.Service); w.Rollout > 0 && d != "" {
		return fmt.Sprintf("%s's configs not converged %s after the faults stopped: %s", w.Service, within, d), tail, nil
	}
	return "", tail, nil
}

// liveScript is Script for a liveness violation: its lines end with the
// expectation that each service runs on one node.
func (w *World) liveScript(lines []string) string {
	s := w.Script(lines)
	if w.Rollout > 0 {
		return s + "expect " + w.Service + " configs converged\n"
	}
	for _, svc := range w.services() {
		s += fmt.Sprintf("expect %s up on %d node\n", svc, w.most(svc))
	}
	return s
}

// most is how many instances of svc may run at once: the flex_max of a
// flex service, 1 for a failover one.
func (w *World) most(svc string) int {
	if svc == w.Service && w.Flex > 0 {
		return w.Flex
	}
	return 1
}

// startsTooMany are the starts of svc that began while most(svc) were
// active on other nodes (the simulation's start observer).
func (w *World) startsTooMany(c *sim.Cluster, svc string) []string {
	if k := w.most(svc); k > 1 {
		return c.StartsCrowded(svc, k)
	}
	return c.StartOverlaps(svc)
}

// services are the services checked.
func (w *World) services() []string { return append([]string{w.Service}, w.Also...) }

// Check explores w breadth-first up to b and returns what it saw, with the
// first violation found (a shortest, in moves).
func Check(w *World, b Bounds) (*Result, error) {
	start := time.Now()
	res := &Result{}
	root, err := w.build(nil)
	if err != nil {
		return nil, err
	}
	f0 := facts{Tokens: map[string]uint64{}, MaxToken: map[string]uint64{}, Unreachable: []string{}, Fails: []string{}}
	if inv := w.check(root, &f0); inv != "" {
		return nil, fmt.Errorf("%s: the warm-up already breaks an invariant: %s", w.Name, inv)
	}
	// asleep are the worlds met (by their hash), each with the moves
	// not explored from it yet: those that slept at every visit so far
	asleep := map[string][]string{Hash(root, w, f0): nil}
	level := []state{{facts: f0, seen: w.see(root)}}
	for depth := 1; depth <= b.Depth && len(level) > 0; depth++ {
		var next []state
		for _, s := range level {
			for _, m := range w.moves(s.seen, s.facts, b) {
				if s.only != nil && !s.only[m.line] {
					continue
				}
				if !b.NoReduce && s.sleeps(m) {
					res.Pruned++
					continue
				}
				next1, c, inv, err := w.after(s, m)
				if err != nil {
					return nil, err
				}
				res.Replays++
				trace, f, sn := next1.trace, next1.facts, next1.seen
				if inv != "" {
					res.Depth, res.Elapsed, res.States = depth, time.Since(start), len(asleep)
					res.Violation = &Violation{Invariant: inv, Trace: trace, Script: w.Script(trace)}
					return res, nil
				}
				h := Hash(c, w, f)
				var z []string
				if !b.NoReduce {
					z = next1.sleeping(w.moves(sn, f, b))
				}
				old, met := asleep[h]
				if met && !b.NoMerge {
					// explored already: only the moves that slept there
					// and do not sleep here are new
					var extra, both []string
					for _, l := range old {
						if slices.Contains(z, l) {
							both = append(both, l)
						} else {
							extra = append(extra, l)
						}
					}
					if len(extra) == 0 {
						res.Merged++
						continue
					}
					asleep[h] = both
					next1.only = map[string]bool{}
					for _, l := range extra {
						next1.only[l] = true
					}
					res.Reopened++
					next = append(next, next1)
					continue
				}
				asleep[h] = z
				if b.Live > 0 && !met {
					inv, tail, err := w.live(trace, f, sn, b.Live)
					if err != nil {
						return nil, err
					}
					res.Replays++
					if inv != "" {
						res.Depth, res.Elapsed, res.States = depth, time.Since(start), len(asleep)
						all := append(slices.Clone(trace), tail...)
						res.Violation = &Violation{Invariant: inv, Trace: trace, Script: w.liveScript(all)}
						return res, nil
					}
				}
				next = append(next, next1)
			}
		}
		res.Depth = depth
		level = next
	}
	res.States = len(asleep)
	res.Elapsed = time.Since(start)
	return res, nil
}

// The partial-order reduction. Two moves at the same instant that commute
// (each sets a flag of one node, not the same: n1 cut off from the
// arbitrator, the next stop on n2 failing) lead to the same world in
// either order, through two
// intermediate worlds that the checker explores anyway (each move alone
// is a path of its own). Of the two orders the checker explores one: the
// move whose line sorts first, then the other. From a world whose last
// move was l, a move m that commutes with l and sorts before it "sleeps":
// the path that ends with l then m is the other order of one explored
// already, of the same length and the same faults. Every path is thereby
// the same as one whose adjacent commuting moves are in order (swap them
// until they are: each swap keeps the length, the faults and the world at
// the end, and a violation in between would be a shorter one), and the
// checker explores every such path: the reduction hides no violation and
// lengthens no shortest trace.
//
// With the merge of equal worlds, the moves a world leaves out depend on
// how it was reached (its last move): the checker keeps, with each world
// met, the moves that slept at every visit so far; a later visit from
// which some of them do not sleep explores those (the world is
// "reopened"), so that from every world, the moves explored are all but
// those that slept at every visit. A path in order (above) reaches each
// of its worlds by its own last move, so its next move is explored from
// there, at the same depth or before: the reduction with the merge is as
// sound as the merge alone, and never builds more worlds than it.

// sleeps reports whether m is left out from s (m commutes with the move
// that led to s and sorts before it).
func (s state) sleeps(m move) bool { return commute(s.last, m) && m.line < s.last.line }

// sleeping is the moves of ms left out from s.
func (s state) sleeping(ms []move) []string {
	var out []string
	for _, m := range ms {
		if s.sleeps(m) {
			out = append(out, m.line)
		}
	}
	return out
}

// after builds the world of s then m: the state it is, its cluster, and
// the invariant that does not hold there ("" for none).
func (w *World) after(s state, m move) (state, *sim.Cluster, string, error) {
	trace := append(slices.Clone(s.trace), m.line)
	c, err := w.build(trace)
	if err != nil {
		return state{}, nil, "", err
	}
	f := s.facts.clone()
	if m.fault {
		f.Faults++
	}
	if m.admin {
		f.Admin++
	}
	if m.apply != nil {
		m.apply(&f)
	}
	inv := w.check(c, &f)
	return state{trace: trace, facts: f, seen: w.see(c), last: m}, c, inv, nil
}

func (w *World) see(c *sim.Cluster) seen {
	sn := seen{machines: map[string]string{}, held: map[string]int{}, holding: map[string]bool{}, up: map[string]bool{}}
	for _, n := range c.UpOn(w.Service) {
		sn.up[n] = true
	}
	for _, n := range w.Nodes {
		sn.machines[n] = c.Machine(n)
		sn.held[n] = c.Withheld(n)
		for _, to := range w.Nodes {
			if c.Holding(n, to) {
				sn.holding[n+">"+to] = true
			}
		}
	}
	return sn
}

// Script is the scenario of a trace: the setup, the warm-up, the moves,
// and the expect lines that say each service never ran on two nodes at
// once, no start of it began while it was active elsewhere and every
// target acknowledged is kept, and no node was seen up while it did not
// run.
func (w *World) Script(trace []string) string {
	lines := []string{"# found by the model checker (test/model), world " + w.Name}
	lines = append(lines, w.start()...)
	lines = append(lines, trace...)
	for _, svc := range w.services() {
		if k := w.most(svc); k > 1 {
			lines = append(lines, fmt.Sprintf("expect %s at most %d up", svc, k), fmt.Sprintf("expect %s started within %d", svc, k), "expect "+svc+" tokens forward", "expect "+svc+" acks kept")
			continue
		}
		lines = append(lines, "expect "+svc+" never twice", "expect "+svc+" started alone", "expect "+svc+" tokens forward", "expect "+svc+" acks kept")
	}
	if w.Rollout > 0 {
		lines = append(lines, "expect "+w.Service+" rolled back once", fmt.Sprintf("expect %s restarts within %d", w.Service, w.Rollout))
		if !w.anyFault(trace) {
			lines = append(lines, fmt.Sprintf("expect %s at least %d up since rollout", w.Service, w.Least))
		}
	}
	for _, n := range w.Nodes {
		lines = append(lines, "expect "+n+" never revived")
	}
	return strings.Join(lines, "\n") + "\n"
}

// anyFault reports whether trace holds a fault (a move but time, a
// release and the admin actions).
func (w *World) anyFault(trace []string) bool {
	for _, l := range trace {
		if l != w.Step && !strings.HasPrefix(l, "release ") && !strings.Contains(l, ": svcmgr ") {
			return true
		}
	}
	return false
}
