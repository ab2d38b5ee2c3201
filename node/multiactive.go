package node

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
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
// quorum off, or a manual start on a second node) is resolved by its
// multiple_active keyword, by every node on its own and without talking:
// each computes, from the same data, which instance stays (keeper) and
// acts only on its own instance. Nothing is done on data that may not be
// the present:
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
// The keeper is the node the placement ranks first among those running
// the service (placement.Rank's Position, ties by name), with two
// exceptions that keep every node's answer the same and reachable: the
// load-based policies (load avg, score) rank by the nodes order here,
// since their inputs move between two heartbeats; and an instance that
// cannot be stopped (frozen, or on a frozen node) ranks first.

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

// runningNodes returns the nodes of s where svc runs (effective avail up or
// warn), in name order.
func runningNodes(s monitor.Snapshot, svc string) []string {
	var up []string
	for _, node := range s.ClusterNodes {
		v, ok := s.Nodes[node]
		if !ok || !v.Alive() {
			continue
		}
		if i, ok := v.Data.Services[svc]; ok {
			if a := monitor.EffectiveAvail(i); a == dataset.StatusUp || a == dataset.StatusWarn {
				up = append(up, node)
			}
		}
	}
	return up
}

// unstoppable reports whether the instance of svc on node may not be
// stopped by the daemon: frozen, or on a frozen node.
func unstoppable(s monitor.Snapshot, svc, node string) bool {
	v := s.Nodes[node]
	return v.Data.Frozen || v.Data.Services[svc].Frozen
}

// Keeper returns the node whose instance of svc stays when svc runs on
// every node of up (two or more): the one ranked first by the placement
// among them, an unstoppable instance first. Every node computes the same
// answer from the same data.
func Keeper(s monitor.Snapshot, svc string, up []string) string {
	if len(up) == 0 {
		return ""
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
		a, b := nodes[i], nodes[j]
		if ua, ub := unstoppable(s, svc, a), unstoppable(s, svc, b); ua != ub {
			return ua
		}
		if pa, pb := pos(a), pos(b); pa != pb {
			return pa < pb
		}
		return a < b
	})
	return nodes[0]
}

// multiFresh says why the multiple-active situation of svc over up cannot
// be acted on yet ("" when it can).
func (c *Core) multiFresh(s monitor.Snapshot, svc string, up []string, kept string) string {
	if !s.Compat {
		return "cluster members run incompatible versions"
	}
	for _, n := range up {
		if ok, why := s.Nodes[n].Available(); !ok {
			return n + ": " + why
		}
	}
	// the others' stops (the resolution under way) do not matter; the
	// keeper's instance must be steady
	if st := s.Nodes[kept].Data.Services[svc].Monitor.State; st.Transitioning() {
		return kept + " is " + string(st)
	}
	if inst := c.insts[svc]; inst != nil && inst.busy != "" {
		return "the local " + inst.busy + " is running"
	}
	return ""
}

// resolveMultipleActive finds the services up on more than one node and
// applies their multiple_active rule once the situation is fresh and has
// lasted multiSettle. It returns when the pass must run again (zero: on
// the next change).
func (c *Core) resolveMultipleActive(s monitor.Snapshot, now time.Time) time.Time {
	var next time.Time
	for _, inst := range c.passInstances() {
		svc := inst.name
		up := c.runningOn(s, svc, inst.multiActive == "")
		if len(up) < 2 {
			if inst.multiActive != "" {
				inst.multiActive, inst.multiKept, inst.multiSince, inst.multiDone = "", "", time.Time{}, false
				c.emit(MultipleActiveEnded{Svc: svc, Nodes: up})
			}
			continue
		}
		rule := multipleActiveRule(s.Services[svc])
		if key := strings.Join(up, ","); key != inst.multiActive {
			inst.multiActive, inst.multiKept, inst.multiSince, inst.multiDone = key, "", time.Time{}, false
			c.emit(MultipleActive{Svc: svc, Nodes: up, Rule: rule, Settle: c.multiSettle().String()})
		}
		if inst.multiDone {
			continue
		}
		kept := Keeper(s, svc, up)
		if why := c.multiFresh(s, svc, up, kept); why != "" {
			inst.multiSince = time.Time{} // the wait starts again on fresh data
			continue
		}
		if inst.multiSince.IsZero() || kept != inst.multiKept {
			inst.multiSince, inst.multiKept = now, kept
		}
		if due := inst.multiSince.Add(c.multiSettle()); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		inst.multiDone = true
		c.applyMultipleActive(s, inst, up, kept, rule, now)
	}
	return next
}

// applyMultipleActive carries out the rule on the local instance, with
// the error-level event that names the nodes, the kept one and the rule.
func (c *Core) applyMultipleActive(s monitor.Snapshot, inst *instance, up []string, kept, rule string, now time.Time) {
	svc, local := inst.name, c.cfg.Name
	e := MultipleActiveResolve{Svc: svc, Nodes: up, Kept: kept, Rule: rule, Why: "first in placement rank among them"}
	if unstoppable(s, svc, kept) {
		e.Why = "frozen: the daemon does not stop it"
	}
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
		if inst.local && !c.state.Services[svc].Frozen {
			e.Action = "instance frozen here, nothing stopped (thaw once resolved by hand)"
		}
		c.emit(e)
		if inst.local {
			c.SetFrozen(svc, true, "multiple_active = freeze: up on "+strings.Join(up, ","))
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
		case unstoppable(s, svc, local):
			e.Action = "not stopped here: frozen (resolve by hand: svcmgr stop --local)"
		case !inst.spec.Runnable:
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
