package render

import (
	"sort"

	"haven/dataset"
)

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
	case "stdby up", "stdby down", "o", "x", "n/a", "/":
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

// sortedKeys returns the keys of a map in order.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
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
