package heartbeat

import "fmt"

// The versions a run says. Every message of a node of format 2 or later
// says the formats it reads (Fmt), its release (Rel) and the feature
// level it runs at (Lvl); a node of the previous release says nothing (it
// reads format 1). A run's binary reads one set of formats for its whole
// life, and its feature level only moves up: once a run said them, a
// later message of that run (by the message order, fresh.go) that says
// other formats, another release or a lower level is malformed: refused
// and not acted on. Before, a holder of the secret sealing one message
// of a run without its fmt made the run read format 1 only in every
// node's view, which took compat down (ha disabled cluster-wide) until
// the run's next message. Messages of the run sent before it said them (a
// beat before its first Publish, delivered late) and a new run are judged
// on their own.

// runVersions is what the current run of a peer said of its versions:
// the formats and release from its message n on, the level from message
// lvlN on.
type runVersions struct {
	inc, n    uint64
	fmt       int
	rel       string
	lvl       int
	lvlN      uint64
	announced bool
}

// versionsLocked records what m says of its run's versions and returns
// why m contradicts what the run said before ("" when it does not).
func (c *core) versionsLocked(p *peer, m *message) string {
	s := &p.said
	if m.N == 0 || m.Inc < s.inc {
		return "" // an older sender (messages not ordered), or an older run
	}
	if m.Inc > s.inc {
		*s = runVersions{inc: m.Inc}
	}
	if m.Fmt == 0 && !s.announced {
		return "" // nothing said yet
	}
	lvl := max(1, m.Lvl)
	if !s.announced {
		*s = runVersions{inc: m.Inc, n: m.N, fmt: m.Fmt, rel: m.Rel, lvl: lvl, lvlN: m.N, announced: true}
		return ""
	}
	if m.N < s.n {
		return "" // sent before the run said its versions
	}
	if m.Fmt != s.fmt || m.Rel != s.rel || m.N > s.lvlN && lvl < s.lvl {
		return fmt.Sprintf("message of %s (incarnation %d) says it reads formats up to %d at level %d (release %q): contradicts what its run said before (formats up to %d, level %d, release %q): malformed, refused",
			p.name, m.Inc, max(1, m.Fmt), lvl, m.Rel, s.fmt, s.lvl, s.rel)
	}
	if lvl > s.lvl && m.N > s.lvlN {
		s.lvl, s.lvlN = lvl, m.N
	}
	return ""
}
