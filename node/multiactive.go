package node

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
	"haven/placement"
)

// The values of the service keyword multiple_active.
const (
	MultipleActiveStopOthers = "stop_others"
	MultipleActiveFreeze     = "freeze"
	MultipleActiveWarn       = "warn"
)

// Multiple-active resolution (docs/behaviour.md 3).
//
// A failover service found up on more than one node (after a split with
// quorum off, a manual start on a second node, a copy started behind
// Haven's back) is resolved by its multiple_active keyword, by every node
// on its own and without talking: each computes, from the same data (the
// instances as their nodes publish them), which instance stays (Keeper)
// and acts only on its own instance. Nothing is done on data that may not
// be the present:
//
//   - a peer that came back is not counted until its data was heard again
//     (the view's honest statuses: its old data counts as unknown), so a
//     node never stops its instance because of what a peer ran before the
//     split;
//   - every node running the service must be up and available in this
//     node's view (not in maintenance, shutting, rejoin...), the keeper's
//     instance must not be in a transition (starting, stopping...), and
//     no action may run on the local one;
//   - the situation (the same nodes, the same keeper) must then have lasted
//     ready_period, the time for both sides' data to reach each other;
//     only then does the rule act, once per situation.
//
// When the situation ends with the local instance the only one running,
// its addresses are announced again, and with stop_others an incomplete
// one is completed (keptAlone).

// multiSettle is how long a multiple-active situation must last, with
// fresh data, before the rule acts.
func (c *Core) multiSettle() time.Duration { return c.cfg.ReadyPeriod }

// multipleActiveRule returns the multiple_active value of cfg (the
// default when unset).
func multipleActiveRule(cfg *config.ServiceConfig) string {
	if cfg == nil || cfg.MultipleActive == "" {
		return MultipleActiveStopOthers
	}
	return cfg.MultipleActive
}

// unstoppable reports whether the instance of svc on node may not be
// stopped by the daemon: frozen, or on a frozen node.
func unstoppable(s monitor.Snapshot, svc, node string) bool {
	v := s.Nodes[node]
	return v.Data.Frozen || v.Data.Services[svc].Frozen
}

// Keeper returns the node whose instance of svc stays when svc runs on
// every node of up (two or more), and why it was preferred to the next
// one (keeperWhy). Every node computes the same answer from the same
// data: the instances as their nodes publish them.
//
// The instances are ranked by, in order:
//
//  1. unstoppable first: a frozen instance (or one on a frozen node) is
//     never stopped by the daemon, so it stays and the others stop;
//  2. started by Haven first: the node's local expect is "started" and it
//     holds a fencing token (a copy started behind Haven's back, e.g. by
//     the host's boot, has local expect "none" or no token);
//  3. complete first: its avail is up, every required resource up (an
//     instance found with a resource down, e.g. an app started by the
//     boot without its address, or a pid file naming a recycled pid, is
//     warn);
//  4. the greatest fencing token first: the latest start, the one a
//     storage layer that refuses stale writers accepts (an old owner that
//     comes back holds an older token);
//  5. the placement rank (placement.Rank's Position; the load-based
//     policies rank by the nodes order here, since their inputs move
//     between two heartbeats), then the node name.
func Keeper(s monitor.Snapshot, svc string, up []string) (kept, why string) {
	if len(up) == 0 {
		return "", ""
	}
	pos := func(string) int { return 0 }
	if cfg := s.Services[svc]; cfg != nil {
		cp := *cfg
		if cp.Placement == placement.PolicyLoadAvg || cp.Placement == placement.PolicyScore {
			cp.Placement = placement.PolicyNodesOrder
		}
		r := placement.Rank(placement.Input{Service: svc, Config: &cp, ClusterNodes: s.ClusterNodes,
			Views: s.Nodes, ConstraintOK: s.ConstraintOK[svc], Services: s.Services})
		pos = r.Position
	}
	nodes := append([]string(nil), up...)
	sort.SliceStable(nodes, func(i, j int) bool {
		return keeperOrder(s, svc, pos, nodes[i], nodes[j]) < 0
	})
	if len(nodes) > 1 {
		why = keeperWhy(s, svc, nodes[0], nodes[1])
	}
	return nodes[0], why
}

// keeperFacts are what Keeper ranks an instance by, from its node's data.
type keeperFacts struct {
	unstoppable, owned, complete bool
	token                        uint64
}

func factsOf(s monitor.Snapshot, svc, node string) keeperFacts {
	i := s.Nodes[node].Data.Services[svc]
	return keeperFacts{
		unstoppable: unstoppable(s, svc, node),
		owned:       i.Monitor.LocalExpect == dataset.ExpectStarted && i.FencingToken > 0,
		complete:    monitor.EffectiveAvail(i) == dataset.StatusUp,
		token:       i.FencingToken,
	}
}

// keeperOrder compares the instances of svc on a and b for Keeper: < 0
// when a's stays rather than b's.
func keeperOrder(s monitor.Snapshot, svc string, pos func(string) int, a, b string) int {
	fa, fb := factsOf(s, svc, a), factsOf(s, svc, b)
	first := func(x, y bool) int {
		switch {
		case x == y:
			return 0
		case x:
			return -1
		}
		return 1
	}
	for _, c := range []int{first(fa.unstoppable, fb.unstoppable), first(fa.owned, fb.owned),
		first(fa.complete, fb.complete)} {
		if c != 0 {
			return c
		}
	}
	switch {
	case fa.token != fb.token:
		return first(fa.token > fb.token, fb.token > fa.token)
	case pos(a) != pos(b):
		return pos(a) - pos(b)
	}
	return strings.Compare(a, b)
}

// keeperWhy says why the instance on kept stays rather than the one on
// next (the first rule of Keeper that tells them apart).
func keeperWhy(s monitor.Snapshot, svc, kept, next string) string {
	fk, fn := factsOf(s, svc, kept), factsOf(s, svc, next)
	switch {
	case fk.unstoppable != fn.unstoppable:
		return "frozen: the daemon does not stop it"
	case fk.owned != fn.owned:
		return "started by Haven; " + next + "'s instance was not (local expect " +
			expectWord(s.Nodes[next].Data.Services[svc].Monitor.LocalExpect) + fmt.Sprintf(", fencing token %d)", fn.token)
	case fk.complete != fn.complete:
		return "complete; " + next + "'s instance is " + string(monitor.EffectiveAvail(s.Nodes[next].Data.Services[svc])) +
			downResources(s.Nodes[next].Data.Services[svc])
	case fk.token != fn.token:
		return fmt.Sprintf("the latest start: fencing token %d, %s's %d", fk.token, next, fn.token)
	}
	return "first in placement rank among them"
}

// expectWord is a local expect as shown ("none" for empty).
func expectWord(le string) string {
	if le == "" {
		return dataset.ExpectNone
	}
	return le
}

// downResources lists the required resources of i that are not up, as
// " (ip#vip down)", "" when none is known.
func downResources(i dataset.Instance) string {
	var out []string
	for _, rid := range slices.Sorted(maps.Keys(i.Resources)) {
		r := i.Resources[rid]
		if r.Disabled || r.Optional || r.Status == dataset.StatusUp || r.Status == dataset.StatusNA {
			continue
		}
		out = append(out, rid+" "+string(r.Status))
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, ", ") + ")"
}

// multiFresh says why the multiple-active situation of svc over up cannot
// be acted on yet ("" when it can).
func (c *Core) multiFresh(s monitor.Snapshot, svc string, up []string, kept string) string {
	if !s.Compat {
		return "cluster members run incompatible versions"
	}
	if s.ConfDiffers != "" {
		return s.ConfDiffers
	}
	for _, n := range up {
		if ok, why := s.Nodes[n].Available(); !ok {
			return n + ": " + why
		}
		// a release whose rule ranks the instances otherwise could keep
		// another one: both kept, or both stopped (a rolling upgrade)
		if r, mine := s.Nodes[n].Data.Format.Release, s.Nodes[s.Local].Data.Format.Release; r != mine {
			return n + " runs another release (" + releaseWord(r) + ", here " + releaseWord(mine) + ")"
		}
	}
	// the others' stops (the resolution under way) do not matter; the
	// keeper's instance must be steady
	if st := s.Nodes[kept].Data.Services[svc].Monitor.State; kept != "" && st.Transitioning() {
		return kept + " is " + string(st)
	}
	if inst := c.insts[svc]; inst != nil && inst.Act.Busy != "" {
		return "the local " + inst.Act.Busy + " is running"
	}
	return ""
}

// releaseWord is a release as said in a reason ("" is the first release,
// which does not say).
func releaseWord(r string) string {
	if r == "" {
		return "unknown"
	}
	return r
}

// resolveMultipleActive finds the services up on more than one node and
// applies their multiple_active rule once the situation is fresh and has
// lasted multiSettle. It returns when the pass must run again (zero: on
// the next change).
func (c *Core) resolveMultipleActive(s monitor.Snapshot, now time.Time) time.Time {
	var next time.Time
	for _, inst := range c.passInstances() {
		svc := inst.Name
		up := c.runningOn(s, svc, inst.Multi.MultiActive == "")
		if s.Services[svc].IsFlex() {
			// several instances on purpose: the excess beyond
			// flex_target is the monitor's (monitor/flex.go)
			up = nil
		}
		if len(up) < 2 {
			if inst.Multi.MultiActive != "" {
				inst.Multi.MultiActive, inst.Multi.MultiKept, inst.Multi.MultiSince, inst.Multi.MultiDone = "", "", time.Time{}, false
				c.emit(MultipleActiveEnded{Svc: svc, Nodes: up})
				if len(up) == 1 && up[0] == c.cfg.Name {
					c.keptAlone(s, inst, now)
				}
			}
			continue
		}
		rule := multipleActiveRule(s.Services[svc])
		if key := strings.Join(up, ","); key != inst.Multi.MultiActive {
			inst.Multi.MultiActive, inst.Multi.MultiKept, inst.Multi.MultiSince, inst.Multi.MultiDone = key, "", time.Time{}, false
			c.emit(MultipleActive{Svc: svc, Nodes: up, Rule: rule, Settle: c.multiSettle().String()})
		}
		if inst.Multi.MultiDone {
			continue
		}
		var kept, keptWhy string
		if rule == MultipleActiveStopOthers {
			// the other rules keep every instance: no keeper to settle
			// on (a freeze makes an instance rank first: the keeper
			// would move at each node's freeze)
			kept, keptWhy = Keeper(s, svc, up)
		}
		if why := c.multiFresh(s, svc, up, kept); why != "" {
			inst.Multi.MultiSince = time.Time{} // the wait starts again on fresh data
			continue
		}
		if inst.Multi.MultiSince.IsZero() || kept != inst.Multi.MultiKept {
			inst.Multi.MultiSince, inst.Multi.MultiKept = now, kept
		}
		if due := inst.Multi.MultiSince.Add(c.multiSettle()); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		inst.Multi.MultiDone = true
		c.applyMultipleActive(s, inst, up, kept, keptWhy, rule, now)
	}
	return next
}

// applyMultipleActive carries out the rule on the local instance, with
// the error-level event that names the nodes, the kept one and the rule.
func (c *Core) applyMultipleActive(s monitor.Snapshot, inst *instsm.Instance, up []string, kept, why, rule string, now time.Time) {
	svc, local := inst.Name, c.cfg.Name
	e := MultipleActiveResolve{Svc: svc, Nodes: up, Kept: kept, Rule: rule, Why: why}
	runsHere := false
	for _, n := range up {
		runsHere = runsHere || n == local
	}
	switch rule {
	case MultipleActiveWarn:
		e.Action = "nothing done (stop the extra instances with svcmgr stop --local, or switch)"
		c.emit(e)
	case MultipleActiveFreeze:
		e.Action = "nothing stopped"
		if inst.Local && !c.state.Services[svc].Frozen {
			e.Action = "instance frozen here, nothing stopped (thaw once resolved by hand)"
		}
		c.emit(e)
		if inst.Local {
			c.setFrozen(svc, true, "multiple_active = freeze: up on "+strings.Join(up, ","))
		}
	default:
		var others []string
		for _, n := range up {
			if n != kept {
				others = append(others, n)
			}
		}
		switch {
		case !runsHere:
			e.Action = "stopped by " + strings.Join(others, ",")
		case local == kept:
			e.Action = "kept here; " + strings.Join(others, ",") + " stops its own"
			if len(others) > 1 {
				e.Action = "kept here; " + strings.Join(others, ",") + " stop their own"
			}
			e.Action += keptNext(inst)
		case unstoppable(s, svc, local):
			e.Action = "not stopped here: frozen (resolve by hand: svcmgr stop --local)"
		case !inst.Spec.Runnable:
			e.Action = "not stopped here: cannot run here"
		default:
			e.Action = "stopping the instance here"
		}
		c.emit(e)
		if e.Action == "stopping the instance here" {
			reason := fmt.Sprintf("multiple_active = stop_others: up on %s, %s kept", strings.Join(up, ","), kept)
			c.setMonitorState(svc, inst, dataset.Stopping, reason, now)
			c.beginAction(svc, inst, "stop", reason, now)
		}
	}
}

// keptNext says what the kept instance does once the others stopped
// (keptAlone): "" when complete.
func keptNext(inst *instsm.Instance) string {
	if down, _ := completable(inst); down != "" {
		return "; then completed here (" + down + ")"
	}
	return ""
}

// completable lists the required resources of the local instance that are
// down (", "-joined), and whether a start may bring them up: none warn or
// unknown (a start would not mend those, and could run a second copy of
// one that does run).
func completable(inst *instsm.Instance) (down string, ok bool) {
	var out []string
	ok = true
	for _, rid := range slices.Sorted(maps.Keys(inst.Res)) {
		r := inst.Res[rid]
		switch {
		case r.Disabled || r.Optional || r.Status == dataset.StatusUp || r.Status == dataset.StatusNA:
		case r.Status == dataset.StatusDown:
			out = append(out, rid+" down")
		default:
			ok = false
		}
	}
	return strings.Join(out, ", "), ok && len(out) > 0
}

// keptAlone runs when a multiple-active situation of svc ends with the
// local instance the only one running: the kept one (whichever node
// applied the rule, or an admin who stopped the others). Its addresses
// are announced again, so that the clients that reached another copy
// (neighbour caches holding the stopped node's MAC address) reach this
// one at once instead of when their entries expire; and, with
// multiple_active = stop_others, an incomplete instance (a required
// resource down: an app started behind Haven's back, without its address)
// is completed: started, which starts its down resources and announces
// the addresses already up.
func (c *Core) keptAlone(s monitor.Snapshot, inst *instsm.Instance, now time.Time) {
	svc := inst.Name
	ss := c.state.Services[svc]
	down, ok := completable(inst)
	if ok && multipleActiveRule(s.Services[svc]) == MultipleActiveStopOthers && inst.Local && inst.Spec.Runnable &&
		inst.Act.Busy == "" && inst.Mon.State == dataset.Idle && !ss.Frozen && !c.state.NodeFrozen && !c.stopping {
		reason := "multiple_active = stop_others: kept here, completing the instance (" + down + ")"
		c.setMonitorState(svc, inst, dataset.Starting, reason, now)
		c.beginAction(svc, inst, "start", reason, now)
		return
	}
	c.emit(Reannounce{Svc: svc, Reason: "the only instance left after running on several nodes"})
	c.ready.Announce = append(c.ready.Announce, svc)
}

// Reannounce: the addresses of the local instance are announced again
// (gratuitous ARP, unsolicited neighbour advertisement: resource/announce.go).
type Reannounce struct {
	Svc    string `json:"svc"`
	Reason string `json:"reason"`
}

func (Reannounce) Kind() string      { return "announce" }
func (e Reannounce) Service() string { return e.Svc }
func (Reannounce) Level() Level      { return Info }
func (e Reannounce) String() string  { return "addresses announced again: " + e.Reason }

// MultipleActive: a failover service seen up on more than one node; the
// rule acts once the situation is fresh and lasted Settle.
type MultipleActive struct {
	Svc    string   `json:"svc"`
	Nodes  []string `json:"nodes"`
	Rule   string   `json:"rule,omitempty"`
	Settle string   `json:"settle,omitempty"`
}

func (MultipleActive) Kind() string      { return "multiple_active" }
func (e MultipleActive) Service() string { return e.Svc }
func (MultipleActive) Level() Level      { return Warn }
func (e MultipleActive) String() string {
	s := "service up on more than one node: " + strings.Join(e.Nodes, ",")
	switch e.Rule {
	case MultipleActiveWarn:
		return s + " (multiple_active = warn: stop the extra instance with svcmgr stop --local, or switch)"
	case MultipleActiveFreeze:
		return s + " (multiple_active = freeze: frozen everywhere once every node's data is fresh and stable for " + e.Settle + ")"
	}
	return s + " (multiple_active = stop_others: one kept, the others stopped once every node's data is fresh and stable for " + e.Settle + ")"
}

// MultipleActiveResolve: the multiple_active rule applied here, loudly.
type MultipleActiveResolve struct {
	Svc    string   `json:"svc"`
	Nodes  []string `json:"nodes"`
	Kept   string   `json:"kept"`
	Why    string   `json:"why"` // why the kept one
	Rule   string   `json:"rule"`
	Action string   `json:"action"`
}

func (MultipleActiveResolve) Kind() string      { return "multiple_active_resolve" }
func (e MultipleActiveResolve) Service() string { return e.Svc }
func (MultipleActiveResolve) Level() Level      { return Error }
func (e MultipleActiveResolve) String() string {
	if e.Rule == MultipleActiveStopOthers {
		return fmt.Sprintf("split brain: up on %s; multiple_active = %s keeps %s (%s): %s",
			strings.Join(e.Nodes, ","), e.Rule, e.Kept, e.Why, e.Action)
	}
	return fmt.Sprintf("split brain: up on %s; multiple_active = %s: %s", strings.Join(e.Nodes, ","), e.Rule, e.Action)
}

// MultipleActiveEnded: the service is no longer seen up on several nodes.
type MultipleActiveEnded struct {
	Svc   string   `json:"svc"`
	Nodes []string `json:"nodes"`
}

func (MultipleActiveEnded) Kind() string      { return "multiple_active_end" }
func (e MultipleActiveEnded) Service() string { return e.Svc }
func (MultipleActiveEnded) Level() Level      { return Info }
func (e MultipleActiveEnded) String() string {
	if len(e.Nodes) == 0 {
		return "service no longer up on more than one node: up nowhere"
	}
	return "service no longer up on more than one node: up on " + strings.Join(e.Nodes, ",")
}
