// Package whatif is what the command-line tools share of the what-if
// (svcmgr simulate, svcmgr switch --dry-run, nodemgr drain --dry-run): the
// snapshot of the live cluster taken through the local daemon, and the
// printing of the simulation's answer (package sim runs it).
package whatif

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
	"haven/cli/render"
	"haven/config/tomlfile"
	"haven/internal/fsutil"
	"haven/internal/termtext"
	"haven/sim"
)

// Run takes the snapshot (or reads it with --from FILE), runs the what-if
// and prints it (--format json, --save FILE).
func Run(c *cli.Context, events []sim.WhatIfEvent, d time.Duration) error {
	return RunWith(c, func(*sim.Snapshot) []sim.WhatIfEvent { return events }, d)
}

// RunWith is Run with events that depend on the snapshot (the local
// node's name, for nodemgr drain --dry-run).
func RunWith(c *cli.Context, eventsOf func(*sim.Snapshot) []sim.WhatIfEvent, d time.Duration) error {
	if d <= 0 {
		return cliutil.Usage("simulate: --for %s: want a positive duration", d)
	}
	return RunFor(c, eventsOf, func(*sim.Snapshot) time.Duration { return d })
}

// RunFor is RunWith with a simulated time that depends on the snapshot
// too (a rollout: its services' turns, sim.RolloutSpan).
func RunFor(c *cli.Context, eventsOf func(*sim.Snapshot) []sim.WhatIfEvent, forOf func(*sim.Snapshot) time.Duration) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	if c.String("from") != "" && c.String("save") != "" {
		return cliutil.Usage("simulate: --from and --save exclude each other")
	}
	var snap *sim.Snapshot
	from := c.String("from")
	if from != "" {
		if snap, err = readSnapshot(from); err != nil {
			return err
		}
		// a file is input: what the simulation refuses is bad usage
		if err := snap.Validate(); err != nil {
			return cliutil.Usage("simulate --from %s: %v", from, err)
		}
	} else if snap, err = TakeSnapshot(c); err != nil {
		return err
	}
	if err := snap.Validate(); err != nil {
		return cliutil.Failed("%v", err)
	}
	events := eventsOf(snap)
	d := forOf(snap)
	if err := snap.CheckWhatIf(events, d); err != nil {
		return cliutil.Usage("simulate: %v", err)
	}
	if f := c.String("save"); f != "" {
		b, err := json.MarshalIndent(snap, "", "  ")
		if err != nil {
			return err
		}
		if err := fsutil.WriteAtomic(f, append(b, '\n'), 0o600); err != nil {
			return cliutil.Failed("save the snapshot: %v", err)
		}
	}
	// SIGINT and SIGTERM end c.Context: the simulation stops at its next step
	res, err := sim.WhatIfContext(c.Context, snap, events, d)
	if err != nil {
		return cliutil.Failed("simulate: %v", err)
	}
	if asJSON {
		return cliutil.PrintJSON(c.App.Writer, res)
	}
	fmt.Fprint(c.App.Writer, RenderWhatIf(snap, events, res))
	return nil
}

// TakeSnapshot asks the local daemon for the cluster's status and every
// service config, and reads the local node's settings (node.toml,
// cluster.toml: no secret is kept).
func TakeSnapshot(c *cli.Context) (*sim.Snapshot, error) {
	p := cliutil.Paths(c)
	nc, err := tomlfile.LoadNode(p.NodeConf)
	if err != nil {
		return nil, cliutil.Failed("%v", err)
	}
	cc, err := tomlfile.LoadCluster(p.Cluster, nc.Name)
	if err != nil {
		return nil, cliutil.Failed("%v", err)
	}
	cl := cliutil.Client(c)
	st, err := cl.Status(c.Context)
	if err != nil {
		return nil, err
	}
	configs := map[string]string{}
	for name := range st.Services {
		raw, err := cl.Config(c.Context, name)
		if err != nil {
			return nil, err
		}
		configs[name] = raw
	}
	set := sim.SnapshotSettings{HBTimeout: sim.Duration(nc.HB.Timeout), HBInterval: sim.Duration(nc.HB.Interval),
		ReadyPeriod: sim.Duration(nc.ReadyPeriod), ReadyFastAck: nc.ReadyFastAck,
		MaintenanceGrace: sim.Duration(nc.MaintenanceGracePeriod), RejoinGrace: sim.Duration(nc.RejoinGracePeriod),
		Quorum: cc.Quorum, SplitAction: nc.SplitAction, Guard: nc.Guard, GuardLease: sim.Duration(nc.GuardLease),
		MonitorInterval: sim.Duration(nc.MonitorInterval), CheckInterval: sim.Duration(nc.CheckInterval)}
	return sim.SnapshotFromStatus(st, configs, set, time.Now()), nil
}

// readSnapshot reads a snapshot file written by --save.
func readSnapshot(path string) (*sim.Snapshot, error) {
	s, err := sim.ReadSnapshot(path)
	if err != nil {
		return nil, cliutil.Usage("simulate --from: %v", err)
	}
	return s, nil
}

// RenderWhatIf is the human form of a what-if.
func RenderWhatIf(s *sim.Snapshot, events []sim.WhatIfEvent, res *sim.WhatIfResult) string {
	var b strings.Builder
	var evs []string
	for _, e := range events {
		t := "--" + e.Verb + " " + e.Arg
		if e.At > 0 {
			t += "@+" + e.At.String()
		}
		evs = append(evs, t)
	}
	if len(evs) == 0 {
		evs = []string{"no event"}
	}
	fmt.Fprintf(&b, "What if: %s\n", termtext.Clean(strings.Join(evs, " ")))
	fmt.Fprintf(&b, "Simulated %s from %s's view of cluster %s (%s, %s), taken %s. Nothing was sent to the cluster.\n",
		time.Duration(res.For), termtext.Clean(s.Local), termtext.Clean(s.Cluster), count(len(s.Nodes), "node"), count(len(s.Services), "service"),
		s.TakenAt.Format(time.RFC3339))
	b.WriteString("\nAssumptions:\n")
	for _, a := range res.Assumptions {
		fmt.Fprintf(&b, "  - %s\n", termtext.Clean(a))
	}
	b.WriteString("\nTimeline:\n")
	if len(res.Timeline) == 0 {
		b.WriteString("  (nothing happens)\n")
	}
	for _, l := range res.Timeline {
		who := l.Node
		if l.Service != "" {
			who += " " + l.Service
		}
		if l.Kind == "event" {
			who = ">"
		}
		fmt.Fprintf(&b, "  +%8.3fs  %-12s %s\n", time.Duration(l.At).Seconds(), termtext.Clean(who), termtext.Clean(l.Text))
	}
	fmt.Fprintf(&b, "\nAfter %s:\n", time.Duration(res.For))
	for _, sv := range res.Services {
		where := "down"
		if len(sv.UpOn) > 0 {
			where = "up on " + strings.Join(sv.UpOn, ",")
		}
		line := fmt.Sprintf("  %-16s %s", sv.Name, where)
		if sv.Reason != "" {
			line += ": " + sv.Reason
		}
		b.WriteString(termtext.Clean(line) + "\n")
	}
	var nodes []string
	for _, n := range res.Nodes {
		t := n.Name + " " + n.State
		if n.Monitor != "" {
			t += " (" + n.Monitor + ")"
		}
		if n.Frozen {
			t += " frozen"
		}
		if n.SplitFrozen {
			t += " frozen by its split_action"
		}
		nodes = append(nodes, t)
	}
	fmt.Fprintf(&b, "  nodes: %s\n", termtext.Clean(strings.Join(nodes, "; ")))
	for _, r := range res.Rollouts {
		for _, l := range strings.Split(strings.TrimSuffix(RolloutText(r), "\n"), "\n") {
			b.WriteString(termtext.Clean(l) + "\n") // each line made inert, the lines kept
		}
	}
	for _, sv := range res.Services {
		if sv.Explain != nil && len(sv.UpOn) == 0 {
			fmt.Fprintf(&b, "\nWhy %s is down (on %s at the end):\n", termtext.Clean(sv.Name), termtext.Clean(sv.Explain.Local))
			b.WriteString(indent(render.Explain(sv.Explain), "  "))
		}
	}
	return b.String()
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// RolloutText is a rollout of a what-if: its batches with each turn's
// times, where it stood at the end, and the instances up it kept against
// the bounds.
func RolloutText(r sim.WhatIfRollout) string {
	var b strings.Builder
	if r.ID == "" {
		fmt.Fprintf(&b, "\nRollout of %s: %s\n", r.Service, r.Answer)
		return b.String()
	}
	fmt.Fprintf(&b, "\nRollout %s of %s, batch by batch: %s\n", r.ID, r.Service, r.State)
	at := func(d *sim.Duration) string {
		if d == nil {
			return "-"
		}
		return fmt.Sprintf("+%.3fs", time.Duration(*d).Seconds())
	}
	for k, batch := range r.Batches {
		var turns []string
		for _, t := range batch {
			s := fmt.Sprintf("%s %s (restart %s, ended %s)", t.Node, t.State, at(t.Begin), at(t.End))
			if t.Cause != "" {
				s += ": " + t.Cause
			}
			turns = append(turns, s)
		}
		fmt.Fprintf(&b, "  batch %d: %s\n", k+1, strings.Join(turns, "; "))
	}
	bound := fmt.Sprintf("bound %d, flex_target - update_parallelism", r.Least)
	if r.StartFirst {
		bound = fmt.Sprintf("bound %d, flex_target: start-first, while a spare starts for each turn", r.Least)
	}
	if r.Most == 1 && r.Least == 0 {
		bound = "a failover service is down during its own restart"
	}
	fmt.Fprintf(&b, "  instances up at once: fewest %d since the request (%s), most %d (at most %d)\n", r.FewestUp, bound, r.MostUp, r.Most)
	return b.String()
}
