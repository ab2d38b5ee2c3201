package render

import (
	"haven/dataset"
)

// NotANode is the svcmon mark of a node that is not one of the service's
// nodes: distinct from "/", the mark of an instance whose avail is n/a.
const NotANode = "-"

// SvcmonLegend explains the marks of the svcmon grid (svcmon --help).
const SvcmonLegend = `Marks of the Services grid, one column per node:
  O  up              X  down            !  warn
  o  standby up      x  standby down    /  n/a (no status: the resources have no check)
  ?  unknown (the node is down or not heard, or no instance data)
  -  not a node of the service
  ^  placement leader    *  frozen
  then the monitor state when not idle (X ready, O^ starting, X start failed),
  or "? stale 12s": the last data of a node not heard (or heard, but whose
  data does not reach this node), 12s old.
Heartbeat row: "up 0.3s" heard 0.3s ago; "up 0.3s stale" heard, but its data
does not reach this node (its instances are unknown); "up 0.3s links 1/2" heard
on 1 of its 2 heartbeat links (an alarm, not a failover); "DUPLICATE" two
daemons run with its name (docs/operations.md).
A service's avail with "!" appended (up!) means its overall status differs
(e.g. an optional resource down). Nodes grid, frozen row: "*" frozen by an
admin (or by the daemon: a rejoin that ended with members missing), "split"
frozen by its split_action (it lost a quorum vote: it ends by itself once the
node holds the quorum again or the cluster is whole). Below the Nodes grid:
why a node is frozen.
Colours only on a terminal, unless --color; NO_COLOR (not empty) turns them off.`

// Mark returns the OpenSVC svcmon mark of an availability status:
// O up, X down, ! warn, / n/a, o standby up, x standby down, ? anything else.
func Mark(s dataset.Status) string {
	switch s {
	case dataset.StatusUp:
		return "O"
	case dataset.StatusDown:
		return "X"
	case dataset.StatusWarn:
		return "!"
	case dataset.StatusNA:
		return "/"
	case dataset.StatusStdbyUp:
		return "o"
	case dataset.StatusStdbyDown:
		return "x"
	}
	return "?"
}

// statusColor is the colour of an availability or node status.
func statusColor(s string) string {
	switch s {
	case "up", "O", "idle":
		return ansiGreen
	case "down", "X":
		return ansiRed
	case "warn", "!", "maintenance", "shutting", "draining", "rejoin":
		return ansiYellow
	case "stdby up", "stdby down", "o", "x", "n/a", "/", NotANode:
		return ansiGrey
	}
	return ""
}

// markColor colours a svcmon cell from its first letter.
func markColor(mark string) string {
	if mark == "" {
		return ""
	}
	return statusColor(mark[:1])
}

// orNone maps "" to "none".
func orNone(s string) string {
	if s == "" {
		return dataset.ExpectNone
	}
	return s
}

// flagNotes spells out the letters of an instance's flags (contract
// section 5) for the status tree.
func flagNotes(flags string, frozen bool) []string {
	var notes []string
	if frozen || containsRune(flags, 'F') {
		notes = append(notes, "frozen")
	}
	if containsRune(flags, 'L') {
		notes = append(notes, "leader")
	}
	if containsRune(flags, 'A') {
		notes = append(notes, "affinity violation")
	}
	if containsRune(flags, 'C') {
		notes = append(notes, "constraints violation")
	}
	return notes
}

func containsRune(s string, r rune) bool {
	for _, x := range s {
		if x == r {
			return true
		}
	}
	return false
}
