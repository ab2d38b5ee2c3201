package sim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Frames one by one: someone on the path between two nodes (an attacker
// without the secret, or a faulty switch) holds some frames back and
// delivers them late, loses one, or delivers one twice. The frames stay
// authentic: only the heartbeat's own rules (newer than every frame heard
// of the run, timely by its lag and its echo's proof) tell a late frame
// from a sign of life.
//
//	withhold n1 n2        every frame n1 sends n2 is held back from now on
//	withhold n1 n2 1      the next frame only (those after it pass: it is
//	                      overtaken, and arrives out of order when released)
//	release n2            the frames held back for n2 arrive now, newest
//	                      first; nothing is held any more on the links to n2
//	lose n1 n2 1          the next frame n1 sends n2 is lost
//	duplicate n1 n2       the last frame of n1 that n2 received arrives again
//
// A frame lost to a partition, a one-way loss or a crash is not counted by
// withhold and lose: they act on the frames that would have arrived.

// onPath is what stands on the link from -> to.
type onPath struct {
	hold  int    // frames still to hold back (-1: every frame)
	lose  int    // frames still to lose
	last  []byte // the last frame that passed (to duplicate)
	nheld int    // frames held back, not released yet
}

// path returns the state of the link from -> to; the first on-path line
// installs the network's hooks on every link (so that a duplicate has the
// last frame of any link).
func (c *Cluster) path(from, to string) *onPath {
	if c.paths == nil {
		c.paths = map[[2]string]*onPath{}
		for _, a := range c.names {
			for _, b := range c.names {
				if a != b {
					c.paths[[2]string{a, b}] = c.watch(a, b)
				}
			}
		}
	}
	return c.paths[[2]string{from, to}]
}

// watch puts the on-path hook on the link from -> to: it holds back the
// frames to hold, and keeps the last one that passed.
func (c *Cluster) watch(from, to string) *onPath {
	p := &onPath{}
	c.net.Withhold(from, to, func(b []byte) bool {
		if p.hold != 0 {
			if p.hold > 0 {
				p.hold--
			}
			p.nheld++
			return true
		}
		p.last = slices.Clone(b)
		return false
	})
	return p
}

// loseFrame is the network's per-frame loss (called with its lock held):
// the frames from or to a paused daemon (quorum.go), and those lost on the
// path.
func (c *Cluster) loseFrame(from, to string, _ []byte) bool {
	if c.pausedNow(from) || c.pausedNow(to) {
		return true
	}
	p := c.paths[[2]string{from, to}]
	if p == nil || p.lose == 0 {
		return false
	}
	p.lose--
	return true
}

// Withheld returns how many frames are held back for node to, not
// released yet.
func (c *Cluster) Withheld(to string) int {
	n := 0
	for k, p := range c.paths {
		if k[1] == to {
			n += p.nheld
		}
	}
	return n
}

// Holding reports whether frames from -> to are being held back.
func (c *Cluster) Holding(from, to string) bool {
	p := c.paths[[2]string{from, to}]
	return p != nil && p.hold != 0
}

// PathState describes what stands on the link from -> to (for the model
// checker's state hash): the frames still to hold back and to lose, and
// how many are held.
func (c *Cluster) PathState(from, to string) string {
	p := c.paths[[2]string{from, to}]
	if p == nil {
		return ""
	}
	return fmt.Sprintf("hold=%d lose=%d held=%d", p.hold, p.lose, p.nheld)
}

// onPathLine runs a withhold, release, lose or duplicate line; false when
// verb is not one of them.
func (r *runner) onPathLine(verb string, args []string) (bool, error) {
	c := r.c
	link := func(want int) (string, string, error) {
		if len(args) != want || c.nodes[args[0]] == nil || want > 1 && c.nodes[args[1]] == nil || want > 1 && args[0] == args[1] {
			return "", "", fmt.Errorf("%s: want two distinct nodes", verb)
		}
		if want == 1 {
			return "", args[0], nil
		}
		return args[0], args[1], nil
	}
	count := func(i int) (int, error) {
		if len(args) <= i {
			return -1, nil
		}
		n, err := strconv.Atoi(args[i])
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%s: bad count %q", verb, args[i])
		}
		return n, nil
	}
	switch verb {
	case "withhold", "lose":
		if len(args) != 2 && len(args) != 3 {
			return true, fmt.Errorf("%s FROM TO [COUNT]", verb)
		}
		n, err := count(2)
		if err != nil {
			return true, err
		}
		args = args[:2]
		from, to, err := link(2)
		if err != nil {
			return true, err
		}
		p := c.path(from, to)
		what := "every frame"
		if n > 0 {
			what = fmt.Sprintf("the next %d frame(s)", n)
		}
		if verb == "lose" {
			if n < 0 {
				return true, errors.New("lose FROM TO COUNT (oneway loses every frame)")
			}
			p.lose = n
			c.logf("-", "", "%s %s sends %s will be lost", what, from, to)
		} else {
			p.hold = n
			c.logf("-", "", "%s %s sends %s will be held back on the path", what, from, to)
		}
	case "release":
		_, to, err := link(1)
		if err != nil {
			return true, err
		}
		for k, p := range c.paths {
			if k[1] == to {
				p.hold, p.nheld = 0, 0
			}
		}
		n := c.net.ReleaseHeld(to)
		c.logf("-", "", "%d frame(s) held back for %s delivered now, newest first", n, to)
	case "duplicate":
		from, to, err := link(2)
		if err != nil {
			return true, err
		}
		p := c.path(from, to)
		if p.last == nil {
			c.logf("-", "", "no frame of %s reached %s yet: nothing to duplicate", from, to)
			break
		}
		c.logf("-", "", "the last frame of %s to %s arrives again", from, to)
		c.net.Redeliver(from, to, 0, slices.Clone(p.last))
	default:
		return false, nil
	}
	c.settle()
	return true, nil
}
