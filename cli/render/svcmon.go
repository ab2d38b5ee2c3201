package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
)

// SvcmonOptions tunes the svcmon view.
type SvcmonOptions struct {
	// Color turns ANSI colours on (off by default, e.g. when not a tty).
	Color bool
	// Selector keeps the services it returns true for; nil keeps all.
	Selector func(name string) bool
}

// monRow is one line of a svcmon section: left cells, then one cell per node.
type monRow struct {
	left  []cell
	nodes []cell
}

// monSection is a titled block (Nodes, Services) whose node columns and
// "|" separator align with the other blocks.
type monSection struct {
	title string
	rows  []monRow
	// notes are full-width lines below the grid (why a node is frozen).
	notes []string
}

// Svcmon renders the OpenSVC-style cluster view: a header, the Nodes
// section and the Services grid with one column per node.
//
//	Cluster prod
//
//	Nodes                   n1      n2
//	 state                | up      up
//	 ...
//	Services                n1      n2
//	 web       up    ha   | O^      X ready
func Svcmon(st *dataset.ClusterStatus, opt SvcmonOptions) string {
	if st == nil {
		return "no cluster status\n"
	}
	cleanAll(st) // peers' text, made inert (Clean)
	nodes := clusterNodes(st)
	var b strings.Builder
	b.WriteString(svcmonHeader(st, opt.Color))
	b.WriteByte('\n')
	sections := []monSection{}
	if len(st.Heartbeat) > 0 {
		sections = append(sections, heartbeatSection(st, nodes))
	}
	sections = append(sections, nodesSection(st, nodes), servicesSection(st, nodes, opt.Selector))
	b.WriteString(layoutSections(sections, nodes, opt.Color))
	return b.String()
}

// clusterNodes is every node of the view: the members, plus any node that
// only appears as a service instance. Sorted by name.
func clusterNodes(st *dataset.ClusterStatus) []string {
	seen := map[string]bool{}
	for n := range st.Nodes {
		seen[n] = true
	}
	for _, s := range st.Services {
		for n := range s.Instances {
			seen[n] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func svcmonHeader(st *dataset.ClusterStatus, color bool) string {
	name := st.Cluster.Name
	if name == "" {
		name = "-"
	}
	var b strings.Builder
	b.WriteString(paint("Cluster", ansiBold, color) + " " + name)
	var notes []string
	if q := st.Cluster.QuorumState; st.Cluster.Quorum && q != nil {
		switch {
		case q.Lost:
			notes = append(notes, paint(fmt.Sprintf("quorum LOST, split_action %s", q.SplitAction), ansiRed, color))
		case q.Pending:
			notes = append(notes, fmt.Sprintf("quorum vote pending (%d/%d votes)", q.Votes, q.Total))
		case 2*q.Votes > q.Total:
			notes = append(notes, fmt.Sprintf("quorum on: %d/%d votes", q.Votes, q.Total))
		default:
			notes = append(notes, paint(fmt.Sprintf("quorum short: %d/%d votes", q.Votes, q.Total), ansiYellow, color))
		}
	}
	if upgrading(st) {
		notes = append(notes, fmt.Sprintf("feature level %d, rolling upgrade in progress", st.Cluster.FeatureLevel))
	}
	if st.Local != "" {
		notes = append(notes, "seen from "+st.Local)
	}
	if len(notes) > 0 {
		b.WriteString("  (" + strings.Join(notes, ", ") + ")")
	}
	b.WriteByte('\n')
	if q := st.Cluster.QuorumState; st.Cluster.Quorum && q != nil {
		b.WriteString(quorumLines(q, color))
	}
	if !st.Cluster.Compat {
		b.WriteString(" compat " + paint("warn", ansiYellow, color) +
			": cluster members run incompatible versions, ha orchestration disabled\n")
	}
	if st.Cluster.ConfDiffers != "" {
		b.WriteString(" config " + paint("warn", ansiYellow, color) + ": " + st.Cluster.ConfDiffers + ": ha orchestration disabled\n")
	}
	if g := st.Guard; g != nil && (g.Error != "" || g.NotRenewing != "" || !g.Armed) {
		b.WriteString(" guard " + paint(GuardLine(g), ansiYellow, color) + "\n")
	}
	return b.String()
}

// guardRow is the Nodes row of the node guards, when a node has one: each
// node's armed guard as it publishes it ("armed", "maint" for the lease
// of a clean stop), the producing node's own state when it is not armed.
func guardRow(st *dataset.ClusterStatus, nodes []string) (monRow, bool) {
	row := monRow{left: []cell{c("guard")}}
	show := st.Guard != nil
	for _, n := range nodes {
		ni := st.Nodes[n]
		txt, col := "", ""
		switch {
		case n == st.Local && st.Guard != nil && st.Guard.Error != "":
			txt, col = "DOWN", ansiRed
		case ni.Guard != nil && ni.Guard.Maintenance:
			txt, col = "maint", ansiYellow
		case ni.Guard != nil:
			txt, col = "armed", ansiGreen
		case n == st.Local && st.Guard != nil:
			txt, col = "off", ansiYellow
		}
		show = show || ni.Guard != nil
		row.nodes = append(row.nodes, cc(txt, col))
	}
	return row, show
}

// capacityRows are the nodes' capacity use, requested of capacity ("1.5/4"
// cores, "6G/8G" of memory), shown once some instance holds requests.
func capacityRows(st *dataset.ClusterStatus, nodes []string) (cpu, mem monRow, show bool) {
	cpu, mem = monRow{left: []cell{c("cpu req")}}, monRow{left: []cell{c("mem req")}}
	for _, n := range nodes {
		k := st.Nodes[n].Capacity
		if k == nil {
			cpu.nodes, mem.nodes = append(cpu.nodes, c("-")), append(mem.nodes, c("-"))
			continue
		}
		show = show || k.RequestedCPUMilli > 0 || k.RequestedMemBytes > 0
		cpu.nodes = append(cpu.nodes, capCell(config.MilliCPU(k.RequestedCPUMilli).String()+"/"+config.MilliCPU(k.CPUMilli).String(),
			k.RequestedCPUMilli, k.CPUMilli))
		mem.nodes = append(mem.nodes, capCell(gib(k.RequestedMemBytes)+"/"+gib(k.MemBytes), k.RequestedMemBytes, k.MemBytes))
	}
	return cpu, mem, show
}

// capCell is a capacity figure, yellow when all taken, red when over.
func capCell(txt string, used, capacity int64) cell {
	switch {
	case used > capacity:
		return cc(txt, ansiRed)
	case used == capacity && used > 0:
		return cc(txt, ansiYellow)
	}
	return c(txt)
}

// gib is a memory amount in GiB to a tenth ("7.5G", "0G").
func gib(b int64) string {
	return strings.TrimSuffix(strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64), ".0") + "G"
}

func nodesSection(st *dataset.ClusterStatus, nodes []string) monSection {
	state := monRow{left: []cell{c("state")}}
	monitor := monRow{left: []cell{c("monitor")}}
	frozen := monRow{left: []cell{c("frozen")}}
	compat := monRow{left: []cell{c("compat")}}
	load := monRow{left: []cell{c("15m")}}
	if !st.Cluster.Compat {
		compat.left = append(compat.left, cc("warn", ansiYellow))
	}
	for _, n := range nodes {
		ni, ok := st.Nodes[n]
		if !ok {
			// Seen only through a service instance: nothing known.
			state.nodes = append(state.nodes, c("?"))
			for _, r := range []*monRow{&monitor, &frozen, &compat, &load} {
				r.nodes = append(r.nodes, c(""))
			}
			continue
		}
		s := string(ni.Status)
		if s == "" {
			s = string(dataset.NodeStUnknown)
		}
		state.nodes = append(state.nodes, cc(s, statusColor(s)))
		m := ""
		if ni.Monitor != "" && ni.Monitor != dataset.NodeIdle {
			m = string(ni.Monitor)
		}
		monitor.nodes = append(monitor.nodes, cc(m, statusColor(m)))
		f := ""
		if ni.Frozen {
			f = "*"
		}
		if ni.SplitFrozen {
			f += "split" // by its split_action: ends by itself
		}
		frozen.nodes = append(frozen.nodes, cc(f, ansiBlue))
		if ni.Compat == 0 {
			// never heard (every daemon announces compat >= 1): no
			// figure rather than a false 0
			compat.nodes = append(compat.nodes, c("-"))
			load.nodes = append(load.nodes, c("-"))
		} else {
			compat.nodes = append(compat.nodes, c(strconv.Itoa(ni.Compat)))
			load.nodes = append(load.nodes, c(fmt.Sprintf("%.1f", ni.Load15)))
		}
	}
	var notes []string
	for _, n := range nodes {
		if ni, ok := st.Nodes[n]; ok && ni.Frozen && ni.FrozenReason != "" {
			notes = append(notes, n+" frozen: "+ni.FrozenReason)
		}
		if ni, ok := st.Nodes[n]; ok && ni.SplitFrozen {
			notes = append(notes, n+" frozen by its split_action: "+ni.SplitFrozenReason)
		}
	}
	rows := []monRow{state, monitor, frozen, compat, load}
	if cpu, mem, ok := capacityRows(st, nodes); ok {
		rows = append(rows, cpu, mem)
	}
	if r, ok := guardRow(st, nodes); ok {
		rows = append(rows, r)
	}
	if upgrading(st) {
		rows = append(rows, formatRow(st, nodes))
	}
	return monSection{title: "Nodes", rows: rows, notes: notes}
}

func servicesSection(st *dataset.ClusterStatus, nodes []string, sel func(string) bool) monSection {
	sec := monSection{title: "Services"}
	for _, name := range slices.Sorted(maps.Keys(st.Services)) {
		if sel != nil && !sel(name) {
			continue
		}
		s := st.Services[name]
		row := monRow{left: serviceLeft(name, s)}
		for _, n := range nodes {
			ni, known := st.Nodes[n]
			row.nodes = append(row.nodes, instanceCell(s, n, ni, known))
		}
		sec.rows = append(sec.rows, row)
		if r := s.Rollout; r != nil && (r.State == dataset.RolloutInProgress || r.State == dataset.RolloutPaused) {
			// a rollout under way, or stopped on failures: its line below
			sec.notes = append(sec.notes, fmt.Sprintf("%s: rollout %s of config %s: %s", name, r.ID, dataset.ShortDigest(r.Digest), r.Summary))
		}
	}
	return sec
}

// serviceLeft is the name, aggregate avail ("!" appended when the overall
// status differs, e.g. an optional resource in warn), orchestrate and notes.
func serviceLeft(name string, s dataset.ServiceStatus) []cell {
	avail := string(s.Avail)
	if avail == "" {
		avail = string(dataset.StatusUnknown)
	}
	color := statusColor(avail)
	if s.Overall != "" && s.Overall != s.Avail {
		avail += "!"
		color = ansiYellow
	}
	if f := s.Flex; f != nil {
		// a flex service: its instances up of its target
		avail += " " + strconv.Itoa(f.Up) + "/" + strconv.Itoa(f.Target)
	}
	orch := s.Orchestrate
	switch {
	case s.ConfigError != "":
		orch = "?" // not known here: the config does not parse
	case orch == "":
		orch = "no"
	}
	return []cell{c(name), cc(avail, color), c(orch), cc(strings.Join(serviceNotes(s, false), ", "), ansiYellow)}
}

// serviceNotes are the service-level facts worth a word: a config that
// does not parse here (with its error), frozen, a non-optimal placement, an admin target in progress. long is the wording
// of the status tree; the svcmon grid is short of room.
func serviceNotes(s dataset.ServiceStatus, long bool) []string {
	var notes []string
	if s.ConfigError != "" {
		notes = append(notes, "config invalid: "+s.ConfigError)
	}
	if s.OrderRefused != "" {
		notes = append(notes, "refused: "+s.OrderRefused)
	}
	if long && s.Overall != "" && s.Overall != s.Avail {
		notes = append(notes, "overall "+string(s.Overall))
	}
	if f := s.Flex; f != nil && long {
		mode := ""
		if f.Global {
			mode = " on every candidate node"
		}
		notes = append(notes, fmt.Sprintf("flex: %d of %d up%s (min %d, max %d)", f.Up, f.Target, mode, f.Min, f.Max))
	}
	switch s.Frozen {
	case "frozen":
		notes = append(notes, "frozen")
	case "mixed":
		// the aggregate counts a frozen node too (nodemgr freeze, drain):
		// that one shows in the node row; "partly" is the service's own
		// freeze on some of its instances
		if ownFreeze(s) {
			notes = append(notes, "partly frozen")
		}
	}
	// a hard affinity only gates starts: an instance up where its rule is
	// broken now (the other service moved) stays there, and says so
	var broken []string
	for _, n := range slices.Sorted(maps.Keys(s.Instances)) {
		if i := s.Instances[n]; (i.Avail == dataset.StatusUp || i.Avail == dataset.StatusWarn) && strings.ContainsRune(i.Flags, 'A') {
			broken = append(broken, n)
		}
	}
	if len(broken) > 0 {
		notes = append(notes, "affinity violated on "+strings.Join(broken, ","))
	}
	placement, expect := "non-optimal", "expect "
	if long {
		placement, expect = "placement non-optimal", "global expect "
	}
	if s.PlacementState == "non-optimal" {
		notes = append(notes, placement)
	}
	if ge := orNone(s.GlobalExpect); ge != dataset.ExpectNone {
		notes = append(notes, expect+ge)
	}
	if r := s.Rollout; r != nil {
		switch {
		case long && !r.Ended() || long && r.State == dataset.RolloutPaused:
			notes = append(notes, "rollout "+r.ID+" "+strings.ReplaceAll(r.State, "_", " ")+": "+r.Summary)
		case r.State == dataset.RolloutInProgress:
			notes = append(notes, fmt.Sprintf("rolling out %d/%d", r.OK+r.Failed, len(r.Turns)))
		case r.State == dataset.RolloutPaused:
			notes = append(notes, "rollout paused")
		}
	}
	if len(s.CapacityShort) > 0 {
		if long {
			notes = append(notes, "short of capacity on "+strings.Join(s.CapacityShort, "; "))
		} else {
			notes = append(notes, "capacity short")
		}
	}
	return notes
}

// ownFreeze reports whether an instance of s is frozen itself (svcmgr
// freeze, stop --local), not only through its node.
func ownFreeze(s dataset.ServiceStatus) bool {
	for _, i := range s.Instances {
		if i.Frozen {
			return true
		}
	}
	return false
}

// instanceCell is the mark of a service on a node: the avail mark, "^" for
// the placement leader (a node up), "*" when frozen, then the monitor state unless idle.
// NotANode ("-") is a node that is not one of the service's nodes (the
// "/" mark is an instance whose avail is n/a); "?" a candidate with no instance
// data, or whose node is down (its last data cannot be trusted): "? stale
// 12s" with the age of that data when the producing node marked it stale.
func instanceCell(s dataset.ServiceStatus, node string, ni dataset.NodeInfo, known bool) cell {
	inst, ok := s.Instances[node]
	candidate := slices.Contains(s.Nodes, node) || slices.Contains(s.Nodes, "*")
	if !ok {
		if candidate {
			return c("?")
		}
		return cc(NotANode, ansiGrey)
	}
	if inst.Stale {
		// the last data of a node not heard (or not confirmed since it
		// came back): not what runs there now
		age := "never heard"
		if inst.AgeMs >= 0 {
			age = shortAge(inst.AgeMs)
		}
		return cc("? stale "+age, ansiGrey)
	}
	if known && (ni.Status == dataset.NodeDown || ni.Status == dataset.NodeStUnknown) {
		return c("?")
	}
	m := Mark(inst.Avail)
	if inst.Avail == "" {
		m = "?"
	}
	// the leader is a candidate: a node shutting down or in maintenance
	// keeps the mark of its last data, which another node now has too
	if inst.PlacementLeader && (!known || ni.Status == dataset.NodeUp) {
		m += "^"
	}
	if inst.Frozen {
		m += "*"
	}
	if st := inst.Monitor.State; st != "" && st != dataset.Idle {
		m += " " + string(st)
	}
	color := markColor(m)
	if inst.OldConfig() && (inst.Avail == dataset.StatusUp || inst.Avail == dataset.StatusWarn) {
		// runs the config it started with, not the one installed since
		m += " (old config)"
	}
	if inst.Monitor.State.Failed() {
		color = ansiRed
	}
	return cc(m, color)
}

// layoutSections aligns the left parts of every section to one width so
// that the "|" separators and the node columns line up across sections.
func layoutSections(secs []monSection, nodes []string, color bool) string {
	// Left cells are aligned within their section; the joined left part is
	// then padded to the widest of all sections.
	lefts := make([][]string, len(secs))   // plain
	painted := make([][]string, len(secs)) // coloured
	leftW := 0
	colW := make([]int, len(nodes))
	for i, n := range nodes {
		colW[i] = width(n)
	}
	for si, sec := range secs {
		t := table{gap: 2}
		for _, r := range sec.rows {
			t.add(r.left...)
			for i, x := range r.nodes {
				colW[i] = max(colW[i], width(x.text))
			}
		}
		w := t.widths()
		for _, r := range sec.rows {
			plain := joinCells(r.left, w, 2, false)
			lefts[si] = append(lefts[si], plain)
			painted[si] = append(painted[si], joinCells(r.left, w, 2, color))
			leftW = max(leftW, width(plain))
		}
		leftW = max(leftW, width(sec.title)-1)
	}
	heads := make([]cell, len(nodes))
	for i, n := range nodes {
		heads[i] = cc(n, ansiBold)
	}
	var b strings.Builder
	for si, sec := range secs {
		if si > 0 {
			b.WriteByte('\n')
		}
		line := paint(sec.title, ansiBold, color) + strings.Repeat(" ", leftW+1-width(sec.title)) + "   "
		b.WriteString(strings.TrimRight(line+joinCells(heads, colW, 2, color), " "))
		b.WriteByte('\n')
		for ri, r := range sec.rows {
			line := " " + painted[si][ri] + strings.Repeat(" ", leftW-width(lefts[si][ri])) + " | "
			b.WriteString(strings.TrimRight(line+joinCells(r.nodes, colW, 2, color), " "))
			b.WriteByte('\n')
		}
		for _, n := range sec.notes {
			b.WriteString(" " + n + "\n")
		}
	}
	return b.String()
}

// heartbeatSection shows how the producing node hears each peer: "up" or
// "down" with the time since it was last heard.
func heartbeatSection(st *dataset.ClusterStatus, nodes []string) monSection {
	row := monRow{left: []cell{c("hb")}}
	for _, n := range nodes {
		if n == st.Local {
			row.nodes = append(row.nodes, c("self"))
			continue
		}
		p, ok := st.Heartbeat[n]
		switch {
		case !ok:
			row.nodes = append(row.nodes, c(""))
		case p.LastHeardMs < 0:
			row.nodes = append(row.nodes, cc("never", ansiYellow))
		case p.Duplicate:
			// two daemons run with its name: its state is unknown
			row.nodes = append(row.nodes, cc(fmt.Sprintf("DUPLICATE %.1fs", float64(p.LastHeardMs)/1000), ansiRed))
		case p.Up && p.Stale:
			// heard, but its data is lost on the way: not trusted
			row.nodes = append(row.nodes, cc(fmt.Sprintf("up %.1fs stale", float64(p.LastHeardMs)/1000), ansiYellow))
		case p.Up && st.Nodes[n].Status == dataset.NodeStMaint:
			// its daemon stopped for maintenance: its last beats are not
			// a daemon that is up
			row.nodes = append(row.nodes, cc(fmt.Sprintf("maint %.1fs", float64(p.LastHeardMs)/1000), ansiYellow))
		case p.Up && linksMark(p.Links) != "":
			// heard, but not on every link: an alarm (links.go)
			row.nodes = append(row.nodes, cc(fmt.Sprintf("up %.1fs", float64(p.LastHeardMs)/1000)+linksMark(p.Links), ansiYellow))
		case p.Up:
			row.nodes = append(row.nodes, cc(fmt.Sprintf("up %.1fs", float64(p.LastHeardMs)/1000), ansiGreen))
		default:
			row.nodes = append(row.nodes, cc(fmt.Sprintf("down %.1fs", float64(p.LastHeardMs)/1000), ansiRed))
		}
	}
	rows := []monRow{row}
	if st.Disk != nil {
		rows = append(rows, diskRow(st.Disk, st.Local, nodes))
	}
	return monSection{title: "Heartbeat", rows: rows}
}

// diskRow shows the disk heartbeat ([hb.disk]): this node's access to the
// disk, and how long ago each peer's slot advanced.
func diskRow(dk *dataset.HBDisk, local string, nodes []string) monRow {
	label := "disk"
	if dk.Fence {
		label = "disk (fence)"
	}
	row := monRow{left: []cell{c(label)}}
	for _, n := range nodes {
		if n == local {
			switch {
			case !dk.Open:
				row.nodes = append(row.nodes, cc("not open", ansiRed))
			case !dk.Reachable:
				row.nodes = append(row.nodes, cc("LOST", ansiRed))
			default:
				row.nodes = append(row.nodes, cc("ok", ansiGreen))
			}
			continue
		}
		sl, ok := dk.Slots[n]
		switch {
		case !ok:
			row.nodes = append(row.nodes, c(""))
		case sl.Err != "" && sl.LastAdvanceMs < 0:
			row.nodes = append(row.nodes, cc("bad slot", ansiRed))
		case sl.LastAdvanceMs < 0:
			row.nodes = append(row.nodes, cc("never", ansiYellow))
		case sl.Alive:
			row.nodes = append(row.nodes, cc(fmt.Sprintf("slot %.1fs", float64(sl.LastAdvanceMs)/1000), ansiGreen))
		default:
			row.nodes = append(row.nodes, cc(fmt.Sprintf("still %.1fs", float64(sl.LastAdvanceMs)/1000), ansiRed))
		}
	}
	return row
}

// SelfStopText says the takeover gate's timing (cluster.quorum): how long
// after a lost node is declared down its services may start here, and
// what that is made of, as the node core computes it.
func SelfStopText(ss *dataset.SelfStopInfo) string {
	ms := func(v int64) string { return (time.Duration(v) * time.Millisecond).String() }
	terms := ss.Terms
	if ss.StopBudgetOf != "" {
		terms = strings.Replace(terms, "stop budget "+ms(ss.StopBudgetMs), "stop budget "+ms(ss.StopBudgetMs)+" ("+ss.StopBudgetOf+"'s stop)", 1)
	}
	var s string
	if ss.GuardTerms != "" {
		// the lost node's guard ends its services: the gate counts it
		// (a node without an armed guard: its stop budget)
		s = "a lost node's services start here " + ms(ss.GuardMs) + " after it is declared down, then ready_period (its self-stop deadline: " + ss.GuardTerms +
			"; " + ms(ss.DeadlineMs) + " for a node without an armed guard: " + terms + ")"
		switch {
		case ss.OneVote && ss.GuardOneVoteMs == 0:
			s += "; with a one-vote arbitrator, once it grants this side alone (its guard's lease ended before its arbitrator lease)"
		case ss.OneVote:
			s += "; or " + ms(ss.GuardOneVoteMs) + " after the one-vote arbitrator grants this side alone"
		}
	} else {
		s = "a lost node's services start here " + ms(ss.DeadlineMs) + " after it is declared down, then ready_period (its self-stop deadline: " + terms + ")"
		if ss.OneVote {
			s += "; or " + ms(ss.OneVoteMs) + " after the one-vote arbitrator grants this side alone"
		}
	}
	if len(ss.Fenced) > 0 {
		s += "; " + strings.Join(ss.Fenced, ", ") + ": only after a fence"
	}
	return s
}

// quorumLines are the arbitrators' answers, the last vote and the takeover
// gates of the lost peers (cluster.quorum on).
func quorumLines(q *dataset.QuorumInfo, color bool) string {
	var b strings.Builder
	if q.SelfStop != nil {
		b.WriteString(" takeover gate: " + SelfStopText(q.SelfStop) + "\n")
	}
	if len(q.Arbitrators) > 0 {
		var parts []string
		for _, a := range q.Arbitrators {
			w := paint("answers", ansiGreen, color)
			if !a.Answered {
				w = paint("silent", ansiYellow, color)
			}
			if a.OneVote {
				// a one-vote arbitrator: whose is its vote, and this
				// node's lease
				switch {
				case a.Answered && a.Exclusive:
					w = paint("vote here alone", ansiGreen, color) + " until " + a.LeaseUntil.UTC().Format("15:04:05.0")
				case a.Answered:
					w = paint("vote here", ansiGreen, color) + " until " + a.LeaseUntil.UTC().Format("15:04:05.0")
				case a.Silent:
					w = paint("silent", ansiYellow, color)
				case len(a.Winner) > 0:
					w = paint("vote with "+strings.Join(a.Winner, ","), ansiYellow, color)
				default:
					w = paint("no vote here", ansiYellow, color)
				}
				w = "one-vote, " + w
			}
			parts = append(parts, fmt.Sprintf("%s (weight %d) %s", a.Name, a.Weight, w))
		}
		b.WriteString(" arbitrators: " + strings.Join(parts, ", ") + "\n")
	}
	if q.LastVote != "" {
		b.WriteString(" last vote " + q.LastVoteAt.UTC().Format("15:04:05") + ": " + q.LastVote + "\n")
	}
	for _, g := range q.Gates {
		if g.Blocked != "" {
			b.WriteString(" takeover of " + g.Node + " " + paint("blocked", ansiYellow, color) + ": " + g.Blocked + "\n")
		} else {
			how := "self-stop deadline passed"
			if g.Fenced {
				how = "fenced"
			}
			b.WriteString(" takeover of " + g.Node + " allowed: " + how + "\n")
		}
	}
	return b.String()
}
