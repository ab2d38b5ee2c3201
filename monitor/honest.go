package monitor

import (
	"strings"

	"haven/dataset"
	"haven/placement"
)

// EffectiveAvail is the avail of an instance as the orchestration counts
// it. An instance without status (n/a: none of its resources has a check)
// cannot be observed; once it was started (local expect "started") it
// counts as up, as in OpenSVC, so that nothing starts it again, here or on
// another node. Stopped (local expect "none"), it counts as down.
func EffectiveAvail(inst dataset.Instance) dataset.Status {
	if inst.Avail == dataset.StatusNA && inst.Monitor.LocalExpect == dataset.ExpectStarted {
		return dataset.StatusUp
	}
	return inst.Avail
}

// effectiveNodes returns nodes with every instance's avail replaced by its
// EffectiveAvail. It returns nodes itself when nothing changes, and copies
// only the views that do change.
func effectiveNodes(nodes map[string]placement.NodeView) map[string]placement.NodeView {
	var out map[string]placement.NodeView
	for name, v := range nodes {
		changed := false
		for _, inst := range v.Data.Services {
			if EffectiveAvail(inst) != inst.Avail {
				changed = true
				break
			}
		}
		if !changed {
			continue
		}
		if out == nil {
			out = make(map[string]placement.NodeView, len(nodes))
			for n, x := range nodes {
				out[n] = x
			}
		}
		svcs := make(map[string]dataset.Instance, len(v.Data.Services))
		for svc, inst := range v.Data.Services {
			inst.Avail = EffectiveAvail(inst)
			svcs[svc] = inst
		}
		v.Data.Services = svcs
		out[name] = v
	}
	if out == nil {
		return nodes
	}
	return out
}

// known reports whether the state of the instance on the i-th node of the
// service is known: the node's data is alive and the instance was checked
// (its avail is neither empty nor unknown).
func (c *svcCtx) known(i int) bool {
	if !c.alive[i] {
		return false
	}
	a := c.insts[i].Avail
	return a != "" && a != dataset.StatusUnknown
}

// shutDown reports whether the i-th node of the service left by a clean
// shutdown (shutDownView).
func (c *svcCtx) shutDown(i int) bool {
	return !c.alive[i] && shutDownView(c.cluster.View(c.nodes[i]), c.name)
}

// nodeView is the view of node (never nil).
func (c *svcCtx) nodeView(node string) *placement.NodeView {
	if v := c.cluster.View(node); v != nil {
		return v
	}
	return &placement.NodeView{Name: node}
}

// shutDownView reports whether the node of v left the cluster by a clean
// shutdown (nodemgr daemon shutdown) with its instance of svc stopped: it
// is not alive, and its last data, heard before it fell silent, announced
// shutting with the instance down (not up, warn or unknown, in no
// transition, not failed). Such a node runs nothing of svc: unlike a node
// lost otherwise, it holds no --wait back. A node that fell silent while
// its data still showed the instance running or stopping (its shutdown cut
// short) is unknown.
func shutDownView(v *placement.NodeView, svc string) bool {
	if v == nil || v.Alive() || v.Data.Monitor != dataset.NodeShutting {
		return false
	}
	inst, ok := v.Data.Services[svc]
	if !ok {
		return false
	}
	switch EffectiveAvail(inst) {
	case dataset.StatusDown, dataset.StatusStdbyDown, dataset.StatusNA:
	default:
		return false
	}
	return !inst.Monitor.State.Transitioning() && !inst.Monitor.State.Failed()
}

// unknownNodes applies the unknown nodes to a reached target: stopped and
// frozen targets wait for them; the others are reached with
// Decision.TargetUnknown. A node shut down cleanly is not unknown (it runs
// nothing): the others are reached; a stopped or frozen target waiting for
// such nodes only is Decision.TargetPending (it stays, so that they comply
// when they come back, but nothing runs there).
func (c *svcCtx) unknownNodes() {
	var unknown, gone []string
	for i, n := range c.nodes {
		switch {
		case c.known(i):
		case c.shutDown(i):
			if !c.nodeView(n).Data.Services[c.name].Frozen {
				gone = append(gone, n) // it froze nothing before it left
			}
		default:
			unknown = append(unknown, n)
		}
	}
	switch c.target.Expect {
	case dataset.ExpectStopped, dataset.ExpectFrozen:
		if len(unknown) > 0 || len(gone) > 0 {
			c.d.TargetReached = false
		}
		if len(unknown) == 0 {
			c.d.TargetPending = gone
		}
	default:
		c.d.TargetUnknown = unknown
	}
}

// firstUnknown returns the first node of the service whose state is not
// known (a node shut down cleanly is known: it runs nothing), or "".
func (c *svcCtx) firstUnknown() string {
	for i, n := range c.nodes {
		if !c.known(i) && !c.shutDown(i) {
			return n
		}
	}
	return ""
}

// targetFailure returns why the admin target can no longer be reached
// without the admin (a failed state blocks the way: "svcmgr clear" after
// fixing the cause lets it go on), or "" while it still can be.
func (c *svcCtx) targetFailure() string {
	switch c.target.Expect {
	case dataset.ExpectStopped:
		// a stop failed where the service still runs: nothing retries it
		return c.failures(dataset.StopFailed, true)
	case dataset.ExpectPlaced:
		dest := c.target.Node
		if dest == "" {
			dest = c.givebackDest()
		}
		if f := c.failures(dataset.StopFailed, true); f != "" {
			return f
		}
		if dest == "" || c.transNode != "" {
			return ""
		}
		if inst, alive := c.instance(dest); alive && inst.State == dataset.StartFailed && inst.Avail != dataset.StatusUp {
			return c.failureOn(dest)
		}
	case dataset.ExpectStarted:
		if c.upCount > 0 || c.transNode != "" || c.firstUnknown() != "" || !c.allFrozen(false) {
			return ""
		}
		// nobody will start it: a warn instance blocks the start, or no
		// candidate is left; it is a failure when a failed state is why
		if c.warnNode == "" && c.rank.Leader() != "" {
			return ""
		}
		if f := c.failures(dataset.StartFailed, false); f != "" || c.warnNode != "" {
			return f
		}
		// no candidate: capacity is why, where no other filter is
		if full := c.capacityExcluded(); len(full) > 0 {
			return "no node has the capacity for it: " + strings.Join(full, "; ")
		}
		return ""
	}
	return ""
}

// failures lists the instances in state st ("" when none); with upish,
// only those whose avail is up or warn (a stop that left it running).
func (c *svcCtx) failures(st dataset.MonitorState, upishOnly bool) string {
	var out []string
	for i, n := range c.nodes {
		if !c.alive[i] || c.insts[i].State != st {
			continue
		}
		if upishOnly && !upish(c.insts[i].Avail) {
			continue
		}
		out = append(out, c.failureOn(n))
	}
	return strings.Join(out, "; ")
}

// failureOn describes the failed instance on node: "start failed on n1:
// app#web: start failed: exit code 1: no such file".
func (c *svcCtx) failureOn(node string) string {
	v := c.cluster.View(node)
	if v == nil {
		return node
	}
	inst := v.Data.Services[c.name]
	s := string(inst.Monitor.State) + " on " + node
	if inst.Monitor.Error != "" {
		s += ": " + inst.Monitor.Error
	}
	return s
}

// Unknown lists the nodes of svc whose state the local node does not know
// (their data not alive, their instance not checked), in order.
func Unknown(s Snapshot, svc string) []string {
	cfg := s.Services[svc]
	if cfg == nil {
		return nil
	}
	var out []string
	for _, n := range placement.NodeList(cfg, s.ClusterNodes) {
		if why := unknownWhy(s.Nodes, n, svc); why != "" {
			out = append(out, n)
		}
	}
	return out
}

// unknownWhy says why the state of svc on node is not known, "" when it is
// (a node shut down cleanly is known: its instance is down).
func unknownWhy(nodes map[string]placement.NodeView, node, svc string) string {
	v, ok := nodes[node]
	if ok && shutDownView(&v, svc) {
		return ""
	}
	if !ok || !v.Alive() {
		if ok && v.Status != "" && v.Status != dataset.NodeDown {
			return "node " + string(v.Status)
		}
		return "node down"
	}
	inst, ok := v.Data.Services[svc]
	if !ok {
		return "no instance data"
	}
	if inst.Avail == "" || inst.Avail == dataset.StatusUnknown {
		return "not checked yet"
	}
	return ""
}

// Progress describes, for a message, where an admin target of svc stands
// as the local node sees it: each node of the service in order, known ones
// with their avail (and monitor state unless idle, frozen when frozen,
// "target not shown yet" while the target in progress waits for its data
// to show it: unacked), the others as unknown with why. "" when the local
// node does not host svc.
//
//	n1 down (frozen), n2 up, n3 down (shut down), n4 unknown (node down)
func Progress(s Snapshot, svc string) string {
	cfg := s.Services[svc]
	if cfg == nil {
		return ""
	}
	nodes := placement.NodeList(cfg, s.ClusterNodes)
	s.Nodes = effectiveNodes(s.Nodes)
	t := s.Nodes[s.Local].Data.Targets[svc]
	var out []string
	for _, n := range nodes {
		if why := unknownWhy(s.Nodes, n, svc); why != "" {
			out = append(out, n+" unknown ("+why+")")
			continue
		}
		v := s.Nodes[n]
		inst := v.Data.Services[svc]
		var notes []string
		if st := inst.Monitor.State; st != "" && st != dataset.Idle {
			notes = append(notes, string(st))
		}
		if inst.Frozen || v.Data.Frozen {
			notes = append(notes, "frozen")
		}
		if !v.Alive() {
			notes = append(notes, "shut down")
		} else if n != s.Local && t.Active() && lagsTarget(&v, svc, t) {
			notes = append(notes, "target not shown yet")
		}
		if v.Data.SplitFrozen {
			notes = append(notes, "node frozen by its split_action")
		}
		x := n + " " + string(inst.Avail)
		if len(notes) > 0 {
			x += " (" + strings.Join(notes, ", ") + ")"
		}
		out = append(out, x)
	}
	return strings.Join(out, ", ")
}
