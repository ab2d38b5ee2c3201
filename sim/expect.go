package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"haven/config/tomlfile"
	"haven/dataset"
	"haven/monitor"
	"haven/node"
)

// expect checks one expect line and records its result in the timeline.
func (r *runner) expect(args []string, raw string) {
	got, ok, err := r.c.holds(args)
	line := fmtTime(r.c.Now()) + "  "
	switch {
	case err != nil:
		r.fail("%s: %v", raw, err)
	case ok:
		r.c.lines = append(r.c.lines, line+"ok: "+raw)
	default:
		r.fail("%s (got %s)", raw, got)
	}
}

// holds evaluates an expectation; got describes what was found.
func (c *Cluster) holds(a []string) (got string, ok bool, err error) {
	if len(a) < 2 {
		return "", false, fmt.Errorf("expect what?")
	}
	subject, rest := a[0], a[1:]
	if svc, node, pinned := strings.Cut(subject, "@"); pinned {
		return c.holdsInstance(svc, node, strings.Join(rest, " "))
	}
	if _, isSvc := c.svcs[subject]; isSvc {
		return c.holdsService(subject, rest)
	}
	n := c.nodes[subject]
	if n == nil {
		return "", false, fmt.Errorf("no service or node %q", subject)
	}
	switch {
	case len(rest) == 1 && (rest[0] == "frozen" || rest[0] == "thawed" || rest[0] == "split-frozen"):
		// frozen: by an admin or the rejoin rule; split-frozen: by its
		// split_action (a quorum vote lost); thawed: neither
		got = nodeFrozenWord(n.dur)
		switch rest[0] {
		case "frozen":
			return got, n.dur.NodeFrozen, nil
		case "split-frozen":
			return got, n.dur.SplitFrozen, nil
		}
		return got, got == rest[0], nil
	case len(rest) == 2 && rest[0] == "never" && rest[1] == "revived":
		if r := c.Revivals(subject); len(r) > 0 {
			return strings.Join(r, "; "), false, nil
		}
		return "never seen up while its daemon was not running", true, nil
	case len(rest) == 2 && rest[0] == "daemon":
		got = "stopped"
		if n.d != nil {
			got = "running"
		}
		return got, got == rest[1], nil
	case len(rest) == 2 && rest[0] == "monitor":
		if n.d == nil {
			return "daemon stopped", false, nil
		}
		m := n.d.core.NodeMonitor()
		return string(m), string(m) == rest[1], nil
	case len(rest) == 3 && rest[0] == "sees":
		if n.d == nil {
			return "daemon stopped", false, nil
		}
		if _, ok := n.d.core.Peer(rest[1]); !ok {
			return "", false, fmt.Errorf("%s is not a peer of %s", rest[1], subject)
		}
		got = string(n.d.peerStatus(rest[1]))
		return got, got == rest[2], nil
	}
	return "", false, fmt.Errorf("unknown node expectation %q", strings.Join(rest, " "))
}

func (c *Cluster) holdsService(svc string, rest []string) (string, bool, error) {
	up := c.UpOn(svc)
	got := "up on " + strings.Join(up, ",")
	if len(up) == 0 {
		got = "down"
	}
	switch {
	case len(rest) == 2 && rest[0] == "never" && rest[1] == "twice":
		got, ok := c.holdsNeverTwice(svc)
		return got, ok, nil
	case len(rest) == 4 && rest[0] == "at" && rest[1] == "most" && rest[3] == "up":
		k, err := strconv.Atoi(rest[2])
		if err != nil {
			return "", false, fmt.Errorf("bad node count %q", rest[2])
		}
		most := c.q.maxUp[svc]
		return fmt.Sprintf("at most %d up at once so far", most), most <= k, nil
	case len(rest) == 6 && rest[0] == "at" && rest[1] == "least" && rest[3] == "up" && rest[4] == "since" && rest[5] == "rollout":
		k, err := strconv.Atoi(rest[2])
		if err != nil {
			return "", false, fmt.Errorf("bad node count %q", rest[2])
		}
		least, ok := c.q.minUp[svc]
		if !ok {
			return "", false, fmt.Errorf("no rollout of %s was asked", svc)
		}
		return fmt.Sprintf("at least %d up at once since the rollout", least), least >= k, nil
	case len(rest) == 2 && rest[0] == "rollout":
		got := c.rolloutState(svc)
		return got, strings.HasPrefix(got, rest[1]), nil
	case len(rest) == 3 && rest[0] == "rolled" && rest[1] == "back" && rest[2] == "once":
		if r := c.Rollbacks(svc); len(r) > 0 {
			return strings.Join(r, "; "), false, nil
		}
		return "no rollout rolled back twice", true, nil
	case len(rest) == 3 && rest[0] == "restarts" && rest[1] == "within":
		k, err := strconv.Atoi(rest[2])
		if err != nil || k < 1 {
			return "", false, fmt.Errorf("bad instance count %q", rest[2])
		}
		if o := c.RestartsCrowded(svc, k); len(o) > 0 {
			return fmt.Sprintf("a restart began while %d or more were restarting elsewhere: %s", k, strings.Join(o, "; ")), false, nil
		}
		return fmt.Sprintf("every restart began while fewer than %d were restarting elsewhere", k), true, nil
	case len(rest) == 2 && rest[0] == "configs" && rest[1] == "converged":
		if d := c.Unconverged(svc); d != "" {
			return d, false, nil
		}
		return "one config on every node, every instance up on it", true, nil
	case len(rest) == 2 && rest[0] == "started" && rest[1] == "alone":
		if o := c.StartOverlaps(svc); len(o) > 0 {
			return "a start began while active elsewhere: " + strings.Join(o, "; "), false, nil
		}
		return "every start began while inactive elsewhere", true, nil
	case len(rest) == 3 && rest[0] == "started" && rest[1] == "within":
		k, err := strconv.Atoi(rest[2])
		if err != nil || k < 1 {
			return "", false, fmt.Errorf("bad instance count %q", rest[2])
		}
		if o := c.StartsCrowded(svc, k); len(o) > 0 {
			return fmt.Sprintf("a start began while %d or more were active elsewhere: %s", k, strings.Join(o, "; ")), false, nil
		}
		return fmt.Sprintf("every start began while fewer than %d were active elsewhere", k), true, nil
	case len(rest) == 2 && rest[0] == "tokens" && rest[1] == "forward":
		if b := c.TokensBackwards(svc); len(b) > 0 {
			return "a token went backwards: " + strings.Join(b, "; "), false, nil
		}
		return "every start's token above those handed out before", true, nil
	case len(rest) == 2 && rest[0] == "acks" && rest[1] == "kept":
		if l := c.LostAcks(svc); len(l) > 0 {
			return "lost: " + strings.Join(l, "; "), false, nil
		}
		n := 0
		for _, a := range c.acks {
			if a.Service == svc {
				n++
			}
		}
		return fmt.Sprintf("every acknowledged target kept (%d)", n), true, nil
	case len(rest) == 1 && rest[0] == "down":
		return got, len(up) == 0, nil
	case len(rest) == 4 && rest[0] == "capacity" && rest[1] == "short" && rest[2] == "on":
		// svcmgr explain's capacity short line of one node, as the first
		// running daemon (by name) explains the service
		return c.holdsCapacityShort(svc, rest[3])
	case len(rest) == 4 && rest[0] == "up" && rest[1] == "on" && (rest[3] == "node" || rest[3] == "nodes"):
		k, err := strconv.Atoi(rest[2])
		if err != nil {
			return "", false, fmt.Errorf("bad node count %q", rest[2])
		}
		return fmt.Sprintf("up on %d nodes (%s)", len(up), got), len(up) == k, nil
	case len(rest) == 3 && rest[0] == "up" && rest[1] == "on":
		return got, strings.Join(up, ",") == rest[2], nil
	case len(rest) == 2 && rest[0] == "target":
		// the effective target as every running daemon of the service sees it
		var seen []string
		for _, n := range c.names {
			if d := c.nodes[n].d; d != nil && c.svcs[svc].HasNode(n, c.names) {
				seen = append(seen, n+":"+effective(d.n.dur.Services[svc].Target))
			}
		}
		allOK := true
		for _, s := range seen {
			_, t, _ := strings.Cut(s, ":")
			allOK = allOK && t == rest[1]
		}
		return strings.Join(seen, " "), allOK, nil
	}
	return "", false, fmt.Errorf("unknown service expectation %q", strings.Join(rest, " "))
}

// effective renders a target as Step reads it: none or aborted are none.
func effective(t dataset.Target) string {
	if t.Expect == dataset.ExpectAborted {
		return dataset.ExpectNone
	}
	return t.String()
}

// holdsInstance checks what node's daemon says of its instance of svc:
// a monitor state, frozen or thawed, leader.
func (c *Cluster) holdsInstance(svc, node, want string) (string, bool, error) {
	n := c.nodes[node]
	if n == nil || c.svcs[svc] == nil {
		return "", false, fmt.Errorf("no instance %s@%s", svc, node)
	}
	switch want {
	case "frozen", "thawed":
		got := frozenWord(n.dur.Services[svc].Frozen)
		return got, got == want, nil
	case "deleted":
		// no config on the machine, a tombstone on its disk
		got := "installed"
		if n.files[svc] == nil {
			got = "no config, no tombstone"
			if _, ok := n.dur.Tombstones[svc]; ok {
				got = "deleted"
			}
		}
		return got, got == want, nil
	}
	if kv, ok := strings.CutPrefix(want, "keyword "); ok {
		// the effective value of a keyword in the config on the machine
		k, v, _ := strings.Cut(kv, " ")
		cfg := n.files[svc]
		if cfg == nil {
			return "no config", false, nil
		}
		got, err := tomlfile.GetKeyword(svc+".toml", cfg.Raw, k)
		if err != nil {
			return "", false, err
		}
		return got, got == v, nil
	}
	if want == "new config" || want == "old config" {
		// the config the instance was last started with, against the one
		// installed, from the node's disk
		ss := n.dur.Services[svc]
		got := "new config"
		if ss.RunDigest != ss.ConfigDigest {
			got = "old config"
		}
		return got, got == want, nil
	}
	if turn, ok := strings.CutPrefix(want, "turn "); ok {
		// this node's turn in the newest rollout it holds, from its disk
		ss := n.dur.Services[svc]
		got := "no turn"
		if m := ss.RolloutMark; m != nil && ss.Rollout != nil && m.ID == ss.Rollout.ID {
			got = m.State
		}
		return "turn " + got, got == turn, nil
	}
	if tok, ok := strings.CutPrefix(want, "token "); ok {
		// the HAVEN_FENCING_TOKEN of the last start there, which must be
		// the one on its disk
		got := fmt.Sprintf("token %d", n.tokens[svc])
		if dur := n.dur.Services[svc].FencingToken; dur != n.tokens[svc] {
			got += fmt.Sprintf(" (but %d on disk)", dur)
		}
		return got, got == "token "+tok, nil
	}
	if n.d == nil {
		return "daemon stopped", false, nil
	}
	if n.d.insts[svc] == nil {
		return "", false, fmt.Errorf("%s is not one of the nodes of %s", node, svc)
	}
	inst, _ := n.d.core.Instance(svc)
	if want == "leader" {
		return fmt.Sprintf("leader=%v", inst.Leader), inst.Leader, nil
	}
	ds := n.d.localNode().Services[svc]
	switch {
	case want == "excluded" || want == "not excluded":
		got := "not excluded"
		if ds.Excluded != "" {
			got = "excluded"
		}
		return got, got == want, nil
	case want == "gave up" || want == "not gave up":
		got := "not gave up"
		if ds.GaveUp != "" {
			got = "gave up"
		}
		return got, got == want, nil
	case strings.HasPrefix(want, "remaining "):
		got := strconv.Itoa(ds.Resources[simRID].RestartRemaining)
		return "remaining " + got, "remaining "+got == want, nil
	}
	return string(inst.Monitor.State), string(inst.Monitor.State) == want, nil
}

// FinalState renders the nodes and the services as each node's daemon
// sees its own part, and where each service really runs.
func (c *Cluster) FinalState() string {
	var b strings.Builder
	fmt.Fprintf(&b, "final state at %s\n", fmtTime(c.Now()))
	for _, name := range c.names {
		n := c.nodes[name]
		switch {
		case n.d != nil:
			fmt.Fprintf(&b, "  node %-4s daemon %-12s node %-6s compat %d", name, string(n.d.core.NodeMonitor()),
				nodeFrozenWord(n.dur), n.d.compat)
			if !n.d.core.Compat() {
				b.WriteString(" (compat warning)")
			}
			var views []string
			for _, p := range n.d.core.PeerNames() {
				views = append(views, p+"="+string(n.d.peerStatus(p)))
			}
			fmt.Fprintf(&b, "  sees %s\n", strings.Join(views, " "))
		case n.machineUp:
			fmt.Fprintf(&b, "  node %-4s daemon stopped\n", name)
		default:
			fmt.Fprintf(&b, "  node %-4s crashed\n", name)
		}
	}
	for _, svc := range c.svcNames {
		up := c.UpOn(svc)
		where := "down"
		if len(up) > 0 {
			where = "up on " + strings.Join(up, ",")
		}
		fmt.Fprintf(&b, "  service %s: %s\n", svc, where)
		for _, name := range c.svcs[svc].NodeList(c.names) {
			n := c.nodes[name]
			res := "down"
			if c.running[name][svc] {
				res = "up"
			}
			if n.d == nil {
				fmt.Fprintf(&b, "    %-4s resources %-4s (no daemon)\n", name, res)
				continue
			}
			if n.files[svc] == nil {
				fmt.Fprintf(&b, "    %-4s resources %-4s config deleted\n", name, res)
				continue
			}
			info, _ := n.d.core.Instance(svc)
			fmt.Fprintf(&b, "    %-4s resources %-4s avail %-4s %-14s %-6s target %s", name, res, info.Avail,
				strconv.Quote(string(info.Monitor.State)), frozenWord(n.dur.Services[svc].Frozen), effective(n.dur.Services[svc].Target))
			if info.Leader {
				b.WriteString(" leader")
			}
			if info.Flags != "" {
				b.WriteString(" flags " + info.Flags)
			}
			if ds := n.d.localNode().Services[svc]; ds.Excluded != "" || ds.GaveUp != "" || len(n.dur.Services[svc].Restarts) > 0 {
				fmt.Fprintf(&b, " restart %d remaining", ds.Resources[simRID].RestartRemaining)
				if ds.GaveUp != "" {
					b.WriteString(" gave up")
				}
				if ds.Excluded != "" {
					b.WriteString(" excluded")
				}
			}
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// nodeFrozenWord says how a node is frozen: frozen (by an admin or the
// rejoin rule), split-frozen (by its split_action), both, or thawed.
func nodeFrozenWord(st node.State) string {
	switch {
	case st.NodeFrozen && st.SplitFrozen:
		return "frozen+split-frozen"
	case st.SplitFrozen:
		return "split-frozen"
	}
	return frozenWord(st.NodeFrozen)
}

// holdsCapacityShort checks that the first running daemon (by name)
// explains svc with want among its nodes short of capacity (what = "n3:
// cpu 1 of 2 requested, needs 1.5"), or, with want "none", no node.
func (c *Cluster) holdsCapacityShort(svc, want string) (string, bool, error) {
	for _, name := range c.names {
		d := c.nodes[name].d
		if d == nil {
			continue
		}
		e, ok := monitor.Explain(d.core.Snapshot(c.clk.Now()), svc, false)
		if !ok {
			return "", false, fmt.Errorf("%s does not explain %s", name, svc)
		}
		got := strings.Join(e.CapacityShort, "; ")
		if got == "" {
			got = "none"
		}
		got = "from " + name + ": " + got
		if want == "none" {
			return got, len(e.CapacityShort) == 0, nil
		}
		return got, slices.Contains(e.CapacityShort, want), nil
	}
	return "", false, fmt.Errorf("no daemon running")
}

// rolloutState is "expect SVC rollout done|paused|...": where the newest
// rollout any node holds on its disk stands, from every node's mark on
// its disk (the nodes' truth, not what a daemon says).
func (c *Cluster) rolloutState(svc string) string {
	var r *dataset.Rollout
	marks := map[string]*dataset.RolloutMark{}
	for _, name := range c.names {
		ss := c.nodes[name].dur.Services[svc]
		if ss.Rollout != nil && (r == nil || ss.Rollout.Version.Newer(r.Version)) {
			r = ss.Rollout
		}
		marks[name] = ss.RolloutMark
	}
	if r == nil {
		return "none"
	}
	return monitor.RolloutState(r, marks).String()
}
