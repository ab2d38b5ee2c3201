package chaos

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The external journal: the test services' start and stop scripts append
// `<seconds> <node> <service> start|stop` to one file on the host, outside
// the daemons' reach. A start line is written before the app process
// starts, a stop line after it is gone (the suite writes one too when it
// kills an app itself), so that the up interval of the journal covers the
// process's life. The order of the lines is the order of the events; the
// time (CLOCK_BOOTTIME, /proc/uptime) only measures.

// Event is one journal line.
type Event struct {
	T    float64 // seconds since boot
	Node string
	Svc  string
	Kind string // start | stop
	Line int
}

// ParseJournal reads a journal. A malformed line is an error naming it.
func ParseJournal(r io.Reader, name string) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	for ln := 1; sc.Scan(); ln++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 4 || (f[3] != "start" && f[3] != "stop") {
			return nil, fmt.Errorf("%s:%d: want `<time> <node> <service> start|stop`, got %q", name, ln, sc.Text())
		}
		t, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: time %q: %w", name, ln, f[0], err)
		}
		out = append(out, Event{T: t, Node: f[1], Svc: f[2], Kind: f[3], Line: ln})
	}
	return out, sc.Err()
}

// ReadJournal parses the journal file at path.
func ReadJournal(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseJournal(f, path)
}

// Overlap is a time during which a failover service was up on more than
// one node according to the journal.
type Overlap struct {
	Svc        string
	Nodes      []string // every node up during the overlap
	Start, End float64  // End is 0 while it lasts
	Line       int      // the start line that opened it
}

func (o Overlap) String() string {
	end := "still open"
	if o.End > 0 {
		end = fmt.Sprintf("for %.2fs", o.End-o.Start)
	}
	return fmt.Sprintf("%s up on %s at once from t=%.2f (journal line %d), %s", o.Svc, strings.Join(o.Nodes, "+"), o.Start, o.Line, end)
}

// Overlaps lists every overlap of up intervals per service, in order.
// A stop of a node that was not up is ignored (the suite and the stop
// script may both record one death).
func Overlaps(events []Event) []Overlap {
	up := map[string]map[string]bool{}
	open := map[string]*Overlap{}
	var out []*Overlap
	for _, e := range events {
		set := up[e.Svc]
		if set == nil {
			set = map[string]bool{}
			up[e.Svc] = set
		}
		if e.Kind == "start" {
			set[e.Node] = true
			if len(set) < 2 {
				continue
			}
			if o := open[e.Svc]; o != nil {
				if !slices.Contains(o.Nodes, e.Node) {
					o.Nodes = append(o.Nodes, e.Node)
				}
				continue
			}
			o := &Overlap{Svc: e.Svc, Nodes: slices.Sorted(maps.Keys(set)), Start: e.T, Line: e.Line}
			open[e.Svc] = o
			out = append(out, o)
			continue
		}
		delete(set, e.Node)
		if o := open[e.Svc]; o != nil && len(set) < 2 {
			o.End = e.T
			delete(open, e.Svc)
		}
	}
	res := make([]Overlap, len(out))
	for i, o := range out {
		slices.Sort(o.Nodes)
		res[i] = *o
	}
	return res
}

// UpAt lists, per service, the nodes up after the events (sorted).
func UpAt(events []Event) map[string][]string {
	up := map[string]map[string]bool{}
	for _, e := range events {
		if up[e.Svc] == nil {
			up[e.Svc] = map[string]bool{}
		}
		if e.Kind == "start" {
			up[e.Svc][e.Node] = true
		} else {
			delete(up[e.Svc], e.Node)
		}
	}
	out := map[string][]string{}
	for s, set := range up {
		out[s] = slices.Sorted(maps.Keys(set))
	}
	return out
}
