package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// Overlap is a time during which a service was up on more nodes than it
// may be according to the journal: more than one for a failover service,
// more than its flex_max for a flex service (Limits).
type Overlap struct {
	Svc        string
	Nodes      []string // every node up during the overlap
	Start, End float64  // End is 0 while it lasts
	Line       int      // the start line that opened it
	Max        int      // the most it may run on at once (1: failover)
}

func (o Overlap) String() string {
	end := "still open"
	if o.End > 0 {
		end = fmt.Sprintf("for %.2fs", o.End-o.Start)
	}
	if o.Max > 1 {
		return fmt.Sprintf("%s up on %s at once (flex_max %d) from t=%.2f (journal line %d), %s", o.Svc, strings.Join(o.Nodes, "+"), o.Max, o.Start, o.Line, end)
	}
	return fmt.Sprintf("%s up on %s at once from t=%.2f (journal line %d), %s", o.Svc, strings.Join(o.Nodes, "+"), o.Start, o.Line, end)
}

// Overlaps lists every overlap of up intervals per service, in order, each
// service taken as a failover service (never up on two nodes at once).
func Overlaps(events []Event) []Overlap { return Excess(events, nil) }

// Excess lists every time a service was up on more nodes than its limit
// (limits[svc]; 1 when absent: a failover service), in order. A stop of a
// node that was not up is ignored (the suite and the stop script may both
// record one death).
func Excess(events []Event, limits Limits) []Overlap {
	up := map[string]map[string]bool{}
	open := map[string]*Overlap{}
	var out []*Overlap
	for _, e := range events {
		set := up[e.Svc]
		if set == nil {
			set = map[string]bool{}
			up[e.Svc] = set
		}
		most := limits.Of(e.Svc)
		if e.Kind == "start" {
			set[e.Node] = true
			if len(set) <= most {
				continue
			}
			if o := open[e.Svc]; o != nil {
				if !slices.Contains(o.Nodes, e.Node) {
					o.Nodes = append(o.Nodes, e.Node)
				}
				continue
			}
			o := &Overlap{Svc: e.Svc, Nodes: slices.Sorted(maps.Keys(set)), Start: e.T, Line: e.Line, Max: most}
			open[e.Svc] = o
			out = append(out, o)
			continue
		}
		delete(set, e.Node)
		if o := open[e.Svc]; o != nil && len(set) <= most {
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

// Limits are the services that may run on more than one node at once (the
// flex services: their flex_max), by name. The suite writes them beside
// the journal (LimitsPath), so that `chaos check-journal` judges a kept
// journal as the round did.
type Limits map[string]int

// Of is the most nodes svc may run on at once.
func (l Limits) Of(svc string) int {
	if n, ok := l[svc]; ok && n > 0 {
		return n
	}
	return 1
}

// LimitsPath is where the limits of the journal at path are kept.
func LimitsPath(journal string) string { return journal + ".limits" }

// ReadLimits reads the limits kept beside a journal: lines `<service>
// <max>`. No file is no limit (every service a failover one).
func ReadLimits(journal string) (Limits, error) {
	b, err := os.ReadFile(LimitsPath(journal))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l := Limits{}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.Atoi(f[len(f)-1])
		if len(f) != 2 || err != nil || n < 1 {
			return nil, fmt.Errorf("%s:%d: want `<service> <max>`, got %q", LimitsPath(journal), i+1, line)
		}
		l[f[0]] = n
	}
	return l, nil
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
