package monitor

import (
	"slices"
	"strconv"
	"strings"

	"haven/dataset"
	"haven/internal/planted"
	"haven/placement"
)

// Flex services (DEFAULT.topology = "flex", docs/behaviour.md 10): up to
// flex_target instances, at most one per node. Every node decides for its
// own instance from the same gossiped data, with the failover rules
// generalised from one slot to flex_target slots:
//
//   - the slots taken are the other nodes' instances that run or may run
//     (avail up, warn or unknown, or in an action) and the claims (ready)
//     of nodes that are no candidate here; the free slots are what is left
//     of flex_target;
//   - the candidates without such an instance, in placement order, fill
//     the free slots: the local node claims (ready, for ready_period) only
//     when it is among the first free ones, so the best-ranked candidates
//     start first and a worse one waits for the better ones;
//   - at the end of its window it starts only when every slot it sees
//     taken, every other claim and itself fit in flex_target; otherwise it
//     waits for the worse claims to back off (they see ours ahead of them);
//   - the instances up beyond flex_target stop, the least preferred first
//     (not up before up, then the worst placement rank), never a frozen
//     one;
//   - a lost node of the service not certainly stopped holds every start
//     (wait fence), as for a failover service.
//
// Why that bounds the instances by flex_target (with quorum on, whatever
// the views' lag, as long as data reaches every live peer within
// ready_period): a claim that starts was published for ready_period
// before; take the started claims S, and j the one of them that claimed
// last: every other claim of S began no later than j's, so more than the
// delivery delay before j's start, and j saw it (ready, starting or up:
// a claim that starts never goes back to idle between) and counted it:
// |S| <= flex_target minus what j saw running besides. A node lost is
// counted as running until the takeover gate says it certainly stopped.

// flexCount is the scan of a flex service's instances on the other alive
// nodes for one Step.
type flexCount struct {
	// taken counts the other nodes' instances that run or may run, and
	// the claims of non-candidates; claims are the other candidates'
	// claims (ready).
	taken  int
	claims []string
	// leaving counts the other nodes' instances that run and left their
	// slot to a replacement (a start-first rollout's turn,
	// dataset.Instance.Leaving): not in taken, but counted against
	// flex_max.
	leaving int
	// free lists the candidates, best first, whose instance does not run
	// (the local one included): the first target-taken of them claim.
	free []string
}

// running reports whether an instance runs or may run: avail up, warn or
// unknown, or in an action.
func flexRunning(st placement.InstanceState) bool {
	return upish(st.Avail) || st.State.Transitioning()
}

func (c *svcCtx) flexCount() flexCount {
	var fc flexCount
	for i, n := range c.nodes {
		if n == c.s.Local || !c.alive[i] {
			continue
		}
		st := c.insts[i]
		switch {
		case flexRunning(st) && st.Leaving:
			fc.leaving++
		case flexRunning(st):
			fc.taken++
		case st.State == dataset.Ready && c.isCandidate(n):
			fc.claims = append(fc.claims, n)
		case st.State == dataset.Ready:
			fc.taken++
		}
	}
	for _, n := range c.rank.Candidates {
		if n == c.s.Local {
			if !flexRunning(placement.InstanceState{Avail: c.inst.Avail, State: c.cur.State}) {
				fc.free = append(fc.free, n)
			}
			continue
		}
		if st, alive := c.instance(n); alive && !flexRunning(st) {
			fc.free = append(fc.free, n)
		}
	}
	return fc
}

// flexSlot returns the local node's place among the candidates that may
// fill the free slots (-1 when it is not one) and the number of free
// slots.
func (fc flexCount) slot(local string, target int) (int, int) {
	return slices.Index(fc.free, local), target - fc.taken
}

// flexBlock is autoBlock for a flex service: why the local node must not
// claim (or keep claiming) a slot, none when it may.
func (c *svcCtx) flexBlock(fc flexCount) (why lazy, wait dataset.MonitorState) {
	local := c.s.Local
	if blk := c.flexOrchestrated(); !blk.none() {
		return blk, ""
	}
	idx, free := fc.slot(local, c.cfg.FlexTarget)
	if room := c.cfg.FlexMax - fc.taken - fc.leaving; room < free && free > 0 {
		// instances leaving their slot (start-first) still run: the
		// claims fit in flex_max with them, the best first
		if room <= 0 {
			return lazy{"flex max reached: ", strconv.Itoa(fc.taken + fc.leaving), " instances running elsewhere, some leaving their slot (start-first rollout turns)", ": waiting for them to stop"}, ""
		}
		free = room
	}
	if free <= 0 {
		return lazy{"flex target reached: ", strconv.Itoa(fc.taken), " of ", strconv.Itoa(c.cfg.FlexTarget) + " instances running elsewhere (up, in an action, claimed or not known)"}, ""
	}
	if !c.isCandidate(local) {
		return lazy{"not a candidate: ", c.rank.Reason(local)}, ""
	}
	if idx < 0 || idx >= free {
		return lazy{"not among the ", strconv.Itoa(free), " best candidates without an instance (", strings.Join(fc.free[:min(free, len(fc.free))], ", ") + ")"}, ""
	}
	if n, why := c.strayInstance(); n != "" {
		return lazy{"service " + why + " on ", n, ", not one of its nodes", " (it must stop there first)"}, ""
	}
	if n, why := c.fenceGate(); n != "" && !planted.On(planted.FlexNoGate) {
		return lazy{"wait fence: ", n, ": ", why}, dataset.WaitFence
	}
	if p := c.parentDown(); p != "" {
		return lazy{"wait parents: ", p, " not up"}, dataset.WaitParents
	}
	return lazy{}, ""
}

// flexAuto is auto for a flex service: the excess stopped, else a free
// slot claimed (ready) and started once the window ended uncontested.
func (c *svcCtx) flexAuto() {
	st := c.d.Monitor.State
	if st.Transitioning() || st.Failed() {
		return
	}
	if c.global() {
		c.globalAuto()
		return
	}
	if c.flexExcess() {
		return
	}
	if c.s.FastAck {
		defer c.flexReadyAck()
	}
	local := flexRunning(placement.InstanceState{Avail: c.inst.Avail, State: st})
	if local {
		c.settle("instance running")
		return
	}
	c.fc = c.flexCount()
	blk, wait := c.flexBlock(c.fc)
	c.contest(blk, wait, c.s.FastAck)
}

// flexContested is contested for a flex service: every other claim and
// this one must fit in flex_target with the slots taken, and in flex_max
// with the instances leaving theirs besides (a start-first rollout's
// turns: they run until their replacement is up).
func (c *svcCtx) flexContested() string {
	fc := c.fc
	if all := fc.taken + len(fc.claims) + 1; all > c.cfg.FlexTarget {
		return "ready period ended, but " + strings.Join(fc.claims, ", ") + " claim too (" + strconv.Itoa(all) + " instances for a flex target of " + strconv.Itoa(c.cfg.FlexTarget) + "): waiting for them to back off"
	}
	if all := fc.taken + fc.leaving + len(fc.claims) + 1; all > c.cfg.FlexMax {
		return "ready period ended, but " + strconv.Itoa(fc.leaving) + " instances being replaced still run (" + strconv.Itoa(all) + " instances for a flex max of " + strconv.Itoa(c.cfg.FlexMax) + "): waiting for them to stop"
	}
	return ""
}

func (c *svcCtx) flexReadyReason() string {
	return "flex: " + strconv.Itoa(c.fc.taken) + " of " + strconv.Itoa(c.cfg.FlexTarget) + " instances running elsewhere (or not known), a best candidate without one: ready"
}

func (c *svcCtx) flexStartReason() string {
	return "ready period ended uncontested: start (" + strconv.Itoa(c.fc.taken+len(c.fc.claims)+1) + " instances of " + strconv.Itoa(c.cfg.FlexTarget) + " with the others up and claiming)"
}

// flexExcess stops the local instance when the service runs on more
// nodes than flex_target and the local one is among the least preferred
// of them (FlexStopOrder). Only instances known up or warn count (an
// unknown one stops nothing here).
func (c *svcCtx) flexExcess() bool {
	if c.cfg.Orchestrate != OrchestrateHA {
		return false
	}
	var run []string
	for i, n := range c.nodes {
		// an instance leaving its slot (start-first) stops by itself
		// once replaced: its replacement is not the excess
		if c.alive[i] && !c.insts[i].Leaving && (c.insts[i].Avail == dataset.StatusUp || c.insts[i].Avail == dataset.StatusWarn) {
			run = append(run, n)
		}
	}
	excess := len(run) - c.cfg.FlexTarget
	if excess <= 0 || !slices.Contains(run, c.s.Local) {
		return false
	}
	order := c.flexStopOrder(run)
	if !slices.Contains(order[:min(excess, len(order))], c.s.Local) {
		return false
	}
	c.act(ActionStop, dataset.Stopping, "flex: "+strconv.Itoa(len(run))+" instances up ("+strings.Join(run, ", ")+") for a flex target of "+strconv.Itoa(c.cfg.FlexTarget)+": stop the least preferred")
	return true
}

// flexStopOrder returns the running nodes the daemon may stop, in the
// order they stop: an instance not up (warn) first, then the worst
// placement rank first (ties: the last name first). A frozen instance, or
// one on a frozen node, is never stopped: it is left out.
func (c *svcCtx) flexStopOrder(run []string) []string {
	var out []string
	for _, n := range run {
		v := c.cluster.View(n)
		if v == nil || v.Data.Frozen || v.Data.Services[c.name].Frozen {
			continue
		}
		out = append(out, n)
	}
	slices.SortStableFunc(out, func(a, b string) int {
		ua, ub := c.availOn(a) == dataset.StatusUp, c.availOn(b) == dataset.StatusUp
		if ua != ub {
			if ua {
				return 1
			}
			return -1
		}
		if pa, pb := c.rank.Position(a), c.rank.Position(b); pa != pb {
			return pb - pa
		}
		return strings.Compare(b, a)
	})
	return out
}

// flexUp returns the number of instances of svc up on the alive nodes.
func (p *pass) flexUp(svc string) int {
	up := 0
	for _, v := range p.s.Nodes {
		if v.Alive() && EffectiveAvail(v.Data.Services[svc]) == dataset.StatusUp {
			up++
		}
	}
	return up
}

// flexExplain says, for each node of a flex service in placement order,
// why it has an instance or not, and why fewer than flex_target run.
func (c *svcCtx) flexExplain() *FlexExplain {
	e := &FlexExplain{Target: c.flexTarget(), Min: c.cfg.FlexMin, Max: c.flexMax(), Global: c.global()}
	order := slices.Clone(c.nodes)
	slices.SortStableFunc(order, func(a, b string) int { return c.rank.Position(a) - c.rank.Position(b) })
	var free, lost []string
	for _, n := range order {
		st, alive := c.instance(n)
		switch {
		case !alive:
			why := "not alive here (down or not heard): its instance does not count"
			if c.global() {
				why = "not alive here (down or not heard): its instance is its own, no other node replaces it"
			} else if g, ok := c.s.Fencing[n]; ok {
				why = "lost, not certainly stopped (" + g + "): no start anywhere until it is"
				lost = append(lost, n)
			}
			e.Nodes = append(e.Nodes, n+": "+why)
		case flexRunning(st):
			e.Running++
			what := string(st.Avail)
			if st.State.Transitioning() {
				what = string(st.State)
			}
			e.Nodes = append(e.Nodes, n+": instance "+what)
		case st.State == dataset.Ready:
			e.Nodes = append(e.Nodes, n+": claims a slot (ready)")
		case c.isCandidate(n):
			free = append(free, n)
			e.Nodes = append(e.Nodes, n+": candidate without an instance")
		default:
			e.Nodes = append(e.Nodes, n+": no candidate: "+c.rank.Reason(n))
		}
	}
	if c.global() {
		e.Short = c.globalShort(e.Running, free)
		return e
	}
	if short := e.Target - e.Running; short > 0 {
		defer func() {
			// which resource is short where, when capacity holds
			// candidates back
			if full := c.capacityExcluded(); len(full) > 0 {
				e.Short += "; short of capacity: " + strings.Join(full, "; ")
			}
		}()
		switch {
		case len(lost) > 0:
			e.Short = strconv.Itoa(e.Running) + " of " + strconv.Itoa(e.Target) + " running: waiting for the takeover gate of " + strings.Join(lost, ", ")
		case len(free) == 0:
			e.Short = strconv.Itoa(e.Running) + " of " + strconv.Itoa(e.Target) + " running: no candidate without an instance (see the excluded nodes)"
		case len(free) < short:
			e.Short = strconv.Itoa(e.Running) + " of " + strconv.Itoa(e.Target) + " running: only " + strconv.Itoa(len(free)) + " candidate(s) without an instance (" + strings.Join(free, ", ") + ")"
		default:
			e.Short = strconv.Itoa(e.Running) + " of " + strconv.Itoa(e.Target) + " running: " + strings.Join(free[:short], ", ") + " to claim a slot (ready window)"
		}
	}
	return e
}

// capacityExcluded lists the nodes of the service that the capacity
// filter holds out of the candidates (no other filter excludes them), with
// what is short: "n3: cpu 3.5 of 4 requested, needs 1".
func (c *svcCtx) capacityExcluded() []string {
	if c.p.usage == nil || !c.cfg.HasRequests() {
		return nil
	}
	var out []string
	for _, n := range c.nodes {
		why := c.rank.Reason(n)
		if strings.HasPrefix(why, placement.ReasonCapacityPrefix) || why == placement.ReasonCapacityUnknown {
			out = append(out, n+": "+strings.TrimPrefix(why, placement.ReasonCapacityPrefix))
		}
	}
	return out
}

// upLeaving counts the instances up (as upCount counts them) that leave
// their slot to a replacement (a start-first rollout's turn).
func (c *svcCtx) upLeaving() int {
	n := 0
	for i := range c.nodes {
		if c.alive[i] && c.insts[i].Leaving && c.insts[i].Avail == dataset.StatusUp {
			n++
		}
	}
	return n
}
