package sim

import (
	"strings"

	"haven/node"
)

// Session runs a scenario one line at a time, in the format of RunScript:
// the model checker (test/model) rebuilds a world by running the lines of
// a trace, and looks at it between two lines. A trace that a Session ran
// is a scenario: RunScript replays it to the same world.
type Session struct{ r *runner }

// NewSession returns a session with no line run yet; name prefixes its
// messages.
func NewSession(name string) *Session {
	return &Session{r: &runner{name: name, res: &Result{}}}
}

// Exec runs one line of a scenario (setup lines first, as in a file). A
// malformed line is an error; a failed expect or command is in Failed.
func (s *Session) Exec(line string) error {
	s.r.line++
	toks, err := tokenize(line)
	if err != nil {
		return s.r.errf("%v", err)
	}
	if len(toks) == 0 {
		return nil
	}
	if err := s.r.exec(toks, strings.TrimSpace(line)); err != nil {
		return s.r.errf("%v", err)
	}
	return nil
}

// Cluster returns the session's cluster, its daemons started (the first
// command starts them; a session with only setup lines starts them
// here). Nil before a cluster line.
func (s *Session) Cluster() *Cluster {
	if s.r.c != nil {
		s.r.boot()
	}
	return s.r.c
}

// Failed lists the expect lines that did not hold and the commands that
// failed so far.
func (s *Session) Failed() []string { return s.r.res.Failed }

// Core returns the core of node's running daemon, for its queries, or
// nil when no daemon runs there.
func (c *Cluster) Core(name string) *node.Core {
	if n := c.nodes[name]; n != nil && n.d != nil {
		return n.d.core
	}
	return nil
}

// Machine reports what runs on node: "crashed" (the machine is off),
// "stopped" (its daemon is not running), "paused" or "running".
func (c *Cluster) Machine(name string) string {
	n := c.nodes[name]
	switch {
	case n == nil || !n.machineUp:
		return "crashed"
	case n.d == nil:
		return "stopped"
	case !n.d.pausedUntil.IsZero() && c.clk.Now().Before(n.d.pausedUntil):
		return "paused"
	}
	return "running"
}

// DiskState returns what node's daemon last wrote to its state disk.
func (c *Cluster) DiskState(name string) node.State {
	if n := c.nodes[name]; n != nil {
		return n.dur.Clone()
	}
	return node.State{}
}

// AppToken returns the HAVEN_FENCING_TOKEN of the last start of svc that
// node's fake driver ran (what the app saw).
func (c *Cluster) AppToken(name, svc string) uint64 {
	if n := c.nodes[name]; n != nil {
		return n.tokens[svc]
	}
	return 0
}
