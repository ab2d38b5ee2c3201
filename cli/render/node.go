package render

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"haven/api"
	"haven/dataset"
)

// NodeStatus renders `nodemgr print status` and `nodemgr daemon status`:
// the node, its daemon, heartbeat figures and a table of peers. Ages
// ("1.2s ago") and the uptime are computed against now.
func NodeStatus(d *api.DaemonStatus, now time.Time) string {
	if d == nil {
		return "daemon not running\n"
	}
	cleanAll(d) // peers' text, made inert (Clean)
	uptime := d.Uptime
	if !d.Started.IsZero() {
		uptime = formatDuration(now.Sub(d.Started))
	}
	monitor := d.Monitor
	if monitor == "" {
		monitor = "idle"
	}
	kv := table{gap: 2}
	kv.add(c("node"), c(d.Node))
	kv.add(c("pid"), c(strconv.Itoa(d.Pid)))
	kv.add(c("uptime"), c(uptime))
	kv.add(c("compat"), c(strconv.Itoa(d.Compat)))
	kv.add(c("monitor"), c(monitor))
	if d.Frozen {
		kv.add(c("frozen"), c("yes: "+orDash(d.FrozenReason)+" (nodemgr thaw ends it)"))
	}
	if d.SplitFrozen {
		// the reason says when it ends (by itself, or nodemgr thaw)
		kv.add(c("split freeze"), c("yes: "+orDash(d.SplitFrozenReason)))
	}
	if d.Format > 0 {
		kv.add(c("formats"), c(fmt.Sprintf("reads up to %d, cluster feature level %d", d.Format, d.FeatureLevel)))
		kv.add(c("upgrade next node"), c(d.Upgrade))
	}
	switch {
	case d.ConfDiffers != "":
		kv.add(c("cluster config"), c("DIFFERS: "+d.ConfDiffers+": ha orchestration disabled"))
	case len(d.ConfUnchecked) > 0:
		kv.add(c("cluster config"), c("not checked against "+strings.Join(d.ConfUnchecked, ", ")+" (an earlier release)"))
	}
	if d.StateError != "" {
		kv.add(c("state"), c(fmt.Sprintf("not saved since %s (%d failed writes, retried): %s",
			Age(d.StateErrorSince, now), d.StateFailedWrites, d.StateError)))
	}
	if g := d.Guard; g != nil {
		kv.add(c("guard"), c(GuardLine(g)))
		kv.add(c("guard last fired"), c(GuardFiredLine(g.LastFired, now)))
	}

	hb := table{gap: 2}
	switch {
	case d.HB.Listening && len(d.HB.Links) > 1:
		hb.add(c(" addr"), c(strings.Join(d.HB.Links, ", ")+" (a link each)"))
	case d.HB.Listening:
		hb.add(c(" addr"), c(d.HB.Addr))
	default:
		hb.add(c(" addr"), c("off: a single node (cluster.toml names no other member), nothing listens on "+d.HB.Addr))
	}
	hb.add(c(" timeout"), c(d.HB.Timeout))
	hb.add(c(" interval"), c(d.HB.Interval))
	hb.add(c(" sent"), c(strconv.FormatUint(d.HB.Sent, 10)))
	hb.add(c(" received"), c(strconv.FormatUint(d.HB.Received, 10)))
	hb.add(c(" fulls/deltas"), c(strconv.FormatUint(d.HB.FullsSent, 10)+" / "+strconv.FormatUint(d.HB.DeltasSent, 10)))
	hb.add(c(" needs sent"), c(strconv.FormatUint(d.HB.NeedsSent, 10)))
	hb.add(c(" probes sent/answered"), c(strconv.FormatUint(d.HB.ProbesSent, 10)+" / "+strconv.FormatUint(d.HB.ProbesAnswered, 10)))
	if d.HB.Stalls > 0 {
		hb.add(c(" stalls"), c(fmt.Sprintf("%d (%s not run)", d.HB.Stalls, time.Duration(d.HB.StalledMS)*time.Millisecond)))
	}
	rejected := strconv.FormatUint(d.HB.Rejected, 10)
	if d.HB.NotOwnKey > 0 {
		// a member's frames sealed without its own node key: forged by
		// another holder of the secret, or a node_keys_mode step skipped
		rejected += fmt.Sprintf(" (%d NOT SEALED WITH THEIR SENDER'S NODE KEY)", d.HB.NotOwnKey)
	}
	hb.add(c(" rejected"), c(rejected))
	hb.add(c(" dropped"), c(strconv.FormatUint(d.HB.Dropped, 10)+" ("+strconv.FormatUint(d.HB.SendErrors, 10)+" send errors)"))

	if dk := d.Disk; dk != nil {
		state := "ok"
		switch {
		case !dk.Open:
			state = "not open (retried)"
		case !dk.Reachable:
			state = "LOST (no good round within hb.disk.timeout)"
		}
		use := "a heartbeat link"
		if dk.Fence {
			use = "the fencing device"
		}
		hb.add(c(" disk"), c(dk.Path+": "+state+", "+use))
		if dk.NotOwnKey > 0 {
			// blocks in a member's slot it did not write: another holder
			// of the secret, or a node_keys_mode step skipped
			hb.add(c("  refused"), c(fmt.Sprintf("%d NOT AUTHENTICATED WITH THEIR WRITER'S NODE KEY", dk.NotOwnKey)))
		}
		for _, p := range slices.Sorted(maps.Keys(dk.Slots)) {
			sl := dk.Slots[p]
			t := "never seen advancing"
			if sl.LastAdvanceMs >= 0 {
				t = fmt.Sprintf("advanced %.1fs ago", float64(sl.LastAdvanceMs)/1000)
				if !sl.Alive {
					t += " (still: no longer alive on the disk)"
				}
			}
			if sl.Err != "" {
				t += ": " + sl.Err
			}
			hb.add(c("  slot "+p), c(t))
		}
	}

	var b strings.Builder
	b.WriteString(kv.String())
	b.WriteString("\nHeartbeat\n")
	b.WriteString(hb.String())
	b.WriteString("\nPeers\n")
	if len(d.Peers) == 0 {
		b.WriteString(" (none)\n")
		return b.String()
	}
	pt := table{gap: 2}
	pt.add(c(" NAME"), c("ADDR"), c("STATUS"), c("LAST HEARD"), c("GEN"))
	peers := append([]api.PeerStatus(nil), d.Peers...)
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	for _, p := range peers {
		st := orDash(p.Status)
		if p.Duplicate {
			st += " DUPLICATE" // two daemons run with its name
		} else if p.Stale {
			st += " stale" // its data does not reach this node
		}
		st += apiLinksText(p.Links) // heard on fewer than all its links
		pt.add(c(" "+p.Name), c(p.Addr), c(st), c(Age(p.LastHeard, now)), c(strconv.FormatUint(p.Gen, 10)))
	}
	b.WriteString(pt.String())
	return b.String()
}

// Age renders how long ago t was, relative to now: "1.2s ago", "3m05s ago",
// "2h10m ago", "3d4h ago"; "never" for the zero time. A t in the future
// (clock skew between nodes) reads "0.0s ago".
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return formatDuration(now.Sub(t)) + " ago"
}

// formatDuration is a short human duration: one decimal under a minute,
// then two units.
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// GuardLine says the node guard's state in one line: armed with the
// lease left, or why not.
func GuardLine(g *dataset.GuardStatus) string {
	var s string
	switch {
	case g.Error != "":
		s = "NOT ANSWERING: the failover services are not guarded (" + g.Error + ")"
	case g.Armed && g.Maintenance:
		s = fmt.Sprintf("armed for maintenance: ends the failover services in %s unless a daemon renews it", fmtMs(g.LeftMs))
	case g.Armed:
		s = fmt.Sprintf("armed, lease left %s of %s, %d failover instances in its kill set", fmtMs(g.LeftMs), fmtMs(g.LeaseMs), g.Targets)
	default:
		s = "disarmed: it ends nothing"
	}
	if g.Pid > 0 {
		s += fmt.Sprintf(" (pid %d)", g.Pid)
	}
	if g.NotRenewing != "" {
		s += "; NOT RENEWED: " + g.NotRenewing
	}
	return s
}

// GuardFiredLine says the guard's last firing.
func GuardFiredLine(f *dataset.GuardFired, now time.Time) string {
	if f == nil {
		return "never"
	}
	what := "nothing was running"
	if len(f.Services) > 0 {
		what = "ended " + strings.Join(f.Services, ", ")
	}
	return fmt.Sprintf("%s ago (%s after the lease's end): %s", Age(f.At, now), fmtMs(f.LateMs), what)
}

func fmtMs(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}
