package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The rollout observers, outside the cluster (the model checker's rollout
// worlds, docs/model.md), each with its expect line:
//
//	expect web rolled back once      no rollout of web was rolled back by
//	                                 two rollbacks: every rollback record
//	                                 that reached a node's state disk, of
//	                                 every version, names the rollout it
//	                                 undoes, and no two records of different
//	                                 ids undo the same one
//	expect web restarts within 1     no restart of a whole instance of web
//	                                 (a rollout's turn) began while such a
//	                                 restart was in flight on 1 other node
//	                                 or more (update_parallelism 1)
//	expect web configs converged     every node's disk holds the same config
//	                                 of web, and every instance up runs it

// rollbackSeen is a rollback record that reached a node's disk.
type rollbackSeen struct {
	id, node, at string
}

// noteDurable is called once node's state disk holds a new state: the
// rollback records on it are remembered, whatever replaces them later.
func (c *Cluster) noteDurable(name string) {
	n := c.nodes[name]
	for _, svc := range c.svcNames {
		r := n.dur.Services[svc].Rollout
		if r == nil || !r.Rollback || r.Undoes == "" {
			continue
		}
		if c.rollbacks == nil {
			c.rollbacks = map[string]map[string][]rollbackSeen{}
		}
		if c.rollbacks[svc] == nil {
			c.rollbacks[svc] = map[string][]rollbackSeen{}
		}
		seen := c.rollbacks[svc][r.Undoes]
		if slices.ContainsFunc(seen, func(s rollbackSeen) bool { return s.id == r.ID }) {
			continue
		}
		c.rollbacks[svc][r.Undoes] = append(seen, rollbackSeen{id: r.ID, node: name, at: strings.TrimSpace(fmtTime(c.Now()))})
	}
}

// Rollbacks returns, for each rollout of svc undone by more than one
// rollback, which rollbacks and where each was first written, sorted.
func (c *Cluster) Rollbacks(svc string) []string {
	var out []string
	for undone, seen := range c.rollbacks[svc] {
		if len(seen) < 2 {
			continue
		}
		var w []string
		for _, s := range seen {
			w = append(w, fmt.Sprintf("%s (on %s's disk at %s)", s.id, s.node, s.at))
		}
		out = append(out, fmt.Sprintf("rollout %s rolled back by %s", undone, strings.Join(w, " and ")))
	}
	sort.Strings(out)
	return out
}

// RollbackIDs is every rollback of svc written to a disk so far, by the
// rollout it undoes ("n1-5<n1-3,n2-4 "...), in a canonical order: what
// the rollback observer remembers (the model checker hashes it).
func (c *Cluster) RollbackIDs(svc string) string {
	var out []string
	for undone, seen := range c.rollbacks[svc] {
		var ids []string
		for _, s := range seen {
			ids = append(ids, s.id)
		}
		sort.Strings(ids)
		out = append(out, undone+"<"+strings.Join(ids, ","))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// noteWholeRestart is called when node begins a restart of the whole
// instance of svc (a rollout's turn: the instance is down until its start
// ends): how many other nodes are in one too.
func (c *Cluster) noteWholeRestart(svc, node string) {
	var on []string
	for _, n := range c.names {
		if d := c.nodes[n].d; n != node && d != nil {
			if inst := d.insts[svc]; inst != nil && inst.whole {
				on = append(on, n)
			}
		}
	}
	if c.restartCrowds == nil {
		c.restartCrowds = map[string][]crowd{}
	}
	c.restartCrowds[svc] = append(c.restartCrowds[svc], crowd{len(on),
		fmtTime(c.Now()) + " " + node + " restarts while restarting on " + strings.Join(on, ",")})
}

// RestartsCrowded returns every restart of a whole instance of svc that
// began while k other nodes or more were in one, in order: for a
// rollout of update_parallelism k, a turn too many at once.
func (c *Cluster) RestartsCrowded(svc string, k int) []string {
	var out []string
	for _, s := range c.restartCrowds[svc] {
		if s.others >= k {
			out = append(out, s.what)
		}
	}
	return out
}

// FewestUp is the fewest nodes that ran svc at once since its last
// rollout was asked (ok false: none asked).
func (c *Cluster) FewestUp(svc string) (int, bool) {
	n, ok := c.q.minUp[svc]
	return n, ok
}

// Unconverged says where the configs of svc differ: a node's disk that
// holds another config than the first node's, or an instance up that
// runs another config than its node holds ("" when none).
func (c *Cluster) Unconverged(svc string) string {
	var want string
	var diff []string
	for i, name := range c.names {
		ss := c.nodes[name].dur.Services[svc]
		if i == 0 {
			want = ss.ConfigDigest
		} else if ss.ConfigDigest != want {
			diff = append(diff, fmt.Sprintf("%s holds %.12s, %s %.12s", name, ss.ConfigDigest, c.names[0], want))
		}
		if c.running[name][svc] && ss.RunDigest != ss.ConfigDigest {
			diff = append(diff, fmt.Sprintf("%s runs %.12s on %.12s", name, ss.RunDigest, ss.ConfigDigest))
		}
	}
	return strings.Join(diff, "; ")
}
