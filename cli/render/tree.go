package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"haven/dataset"
	"haven/internal/termtext"
)

// treeLine is one line of the status tree: the tree art and name, the
// status column, then free text. A line with an empty status is a
// continuation (restart counter, log) whose text starts at the text column.
type treeLine struct {
	head   string
	status string
	text   string
	notes  string
	cont   bool
}

// StatusTree renders one service like OpenSVC `print status`:
//
//	web                        up        leader n1
//	`- instances
//	   |- n1                   up        idle, started  leader, token 4
//	   |  `- app#web    M..    up        /srv/web/bin/start
//	   |                                 restart 2 remaining
//	   `- n2                   down      idle
//
// A stale instance (its node is not heard, see dataset.Instance.Stale) says
// so with the age of its data, its resources' statuses in parentheses (last
// known) and its log lines as "last log". The local node's instance comes
// first, then the others by name. Resource
// flags are a fixed-width column: M monitored, D disabled, O optional, a
// dot when unset.
func StatusTree(name string, s dataset.ServiceStatus, local string) string {
	name, local = termtext.Clean(name), termtext.Clean(local)
	cleanAll(&s) // peers' text, made inert (Clean)
	var lines []treeLine
	avail := string(s.Avail)
	if avail == "" {
		avail = string(dataset.StatusUnknown)
	}
	lines = append(lines, treeLine{head: name, status: avail, notes: strings.Join(serviceNotes(s, true), ", ")})
	lines = append(lines, treeLine{head: "`- instances"})

	nodes := TreeNodes(s, local)
	ridW := 0
	for _, inst := range s.Instances {
		for rid := range inst.Resources {
			ridW = max(ridW, width(rid))
		}
	}
	for i, n := range nodes {
		last := i == len(nodes)-1
		branch, indent := "   |- ", "   |  "
		if last {
			branch, indent = "   `- ", "      "
		}
		inst, ok := s.Instances[n]
		if !ok {
			lines = append(lines, treeLine{head: branch + n, status: string(dataset.StatusUnknown), text: "no instance data"})
			continue
		}
		lines = append(lines, instanceLine(branch+n, inst))
		rids := slices.Sorted(maps.Keys(inst.Resources))
		for j, rid := range rids {
			r := inst.Resources[rid]
			rb, ri := "|- ", "|  "
			if j == len(rids)-1 {
				rb, ri = "`- ", "   "
			}
			st := orUnknown(r.Status)
			if inst.Stale {
				st = "(" + st + ")" // last known, not present
			}
			lines = append(lines, treeLine{
				head:   indent + rb + pad(rid, ridW) + "  " + resourceFlags(r),
				status: st,
				text:   shorten(r.Label, labelWidth),
			})
			if r.Monitor && !inst.Stale {
				lines = append(lines, treeLine{head: indent + ri, cont: true,
					text: fmt.Sprintf("restart %d remaining", r.RestartRemaining)})
				if r.LastFailure != "" {
					lines = append(lines, treeLine{head: indent + ri, cont: true,
						text: "last failure " + r.LastFailureAt.UTC().Format(time.RFC3339) + ": " + r.LastFailure})
				}
			}
			if r.Log != "" {
				log := "log: "
				if inst.Stale {
					log = "last log: "
				}
				lines = append(lines, treeLine{head: indent + ri, cont: true, text: log + r.Log})
			}
		}
	}
	return layoutTree(lines)
}

// TreeNodes is local first, then the other instances and candidate nodes
// by name (the status tree's order, the web view's too).
func TreeNodes(s dataset.ServiceStatus, local string) []string {
	seen := map[string]bool{}
	for n := range s.Instances {
		seen[n] = true
	}
	for _, n := range s.Nodes {
		if n != "*" {
			seen[n] = true
		}
	}
	nodes := slices.Sorted(maps.Keys(seen))
	if i := slices.Index(nodes, local); i > 0 {
		nodes = append([]string{local}, slices.Delete(nodes, i, i+1)...)
	}
	return nodes
}

// instanceLine: "NODE  AVAIL  STATE[, LOCAL_EXPECT]  notes".
func instanceLine(head string, inst dataset.Instance) treeLine {
	state := string(inst.Monitor.State)
	if state == "" {
		state = string(dataset.Idle)
	}
	if le := inst.Monitor.LocalExpect; le != "" && le != dataset.ExpectNone {
		state += ", " + le
	}
	notes := flagNotes(inst.Flags, inst.Frozen)
	if inst.ConfigError != "" {
		notes = append([]string{"config invalid"}, notes...)
	}
	if inst.PlacementLeader && !slices.Contains(notes, "leader") {
		notes = append(notes, "leader")
	}
	if inst.Stale {
		// the node's last known data: never a leader
		notes = slices.DeleteFunc(notes, func(s string) bool { return s == "leader" })
		notes = append([]string{"stale: " + staleAge(inst.AgeMs)}, notes...)
	}
	if inst.Monitor.State.Failed() && inst.Monitor.Error != "" {
		notes = append(notes, inst.Monitor.Error)
	}
	if inst.GaveUp != "" {
		notes = append(notes, "gave up: "+inst.GaveUp)
	}
	if inst.Excluded != "" {
		notes = append(notes, "excluded: "+inst.Excluded)
	}
	if inst.Overall != "" && inst.Overall != inst.Avail {
		notes = append([]string{"overall " + string(inst.Overall)}, notes...)
	}
	if inst.OldConfig() && (inst.Avail == dataset.StatusUp || inst.Avail == dataset.StatusWarn) {
		notes = append(notes, "old config (svcmgr rollout)")
	}
	if inst.FencingToken != 0 {
		// the token of the instance's last start there (HAVEN_FENCING_TOKEN)
		notes = append(notes, fmt.Sprintf("token %d", inst.FencingToken))
	}
	return treeLine{head: head, status: orUnknown(inst.Avail), text: state, notes: strings.Join(notes, ", ")}
}

// resourceFlags is the fixed-width flag column: M monitored, D disabled,
// O optional ("." when unset), in OpenSVC's order.
func resourceFlags(r dataset.Resource) string {
	f := []byte("...")
	if r.Monitor {
		f[0] = 'M'
	}
	if r.Disabled {
		f[1] = 'D'
	}
	if r.Optional {
		f[2] = 'O'
	}
	return string(f)
}

func orUnknown(s dataset.Status) string {
	if s == "" {
		return string(dataset.StatusUnknown)
	}
	return string(s)
}

// layoutTree aligns the status, text and notes columns of every line.
func layoutTree(lines []treeLine) string {
	headW, statusW, textW := 0, 0, 0
	for _, l := range lines {
		if l.cont {
			continue
		}
		headW = max(headW, width(l.head))
		statusW = max(statusW, width(l.status))
		if l.notes != "" {
			textW = max(textW, width(l.text))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		var s string
		switch {
		case l.cont:
			s = pad(l.head, headW+2+statusW+2) + l.text
		case l.status == "":
			s = l.head
		default:
			s = pad(l.head, headW+2) + pad(l.status, statusW+2) + l.text
			if l.notes != "" {
				if l.text != "" {
					s = pad(s, headW+2+statusW+2+textW+2)
				}
				s += l.notes
			}
		}
		b.WriteString(strings.TrimRight(s, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// staleAge says how old stale data is: "last heard 12s ago".
func staleAge(ms int64) string {
	if ms < 0 {
		return "never heard"
	}
	return "last heard " + shortAge(ms) + " ago"
}

// shortAge renders a duration in milliseconds as 850ms, 12s, 3m or 2h.
func shortAge(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%ds", ms/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm", ms/60_000)
	}
	return fmt.Sprintf("%dh", ms/3_600_000)
}

// labelWidth is how much of a resource's label the tree shows.
const labelWidth = 48

// shorten cuts s to at most n runes, the last one an ellipsis.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
