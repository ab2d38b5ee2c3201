package sim

import (
	"fmt"
	"strconv"
	"strings"

	"haven/dataset"
	"haven/node"
)

// Two more observers outside the cluster (the start observer is
// starts.go), each with its expect line:
//
//	expect web acks kept   every admin target of web acknowledged so far
//	                       (an answer without error, naming the target's id)
//	                       is kept by the node that answered it: its state
//	                       disk, and its core when its daemon runs, hold that
//	                       target (in progress, reached or aborted) or a newer
//	                       one (superseded by a later action); a rollout
//	                       or rollback acknowledged (its record's id): that
//	                       record or a newer one
//	expect n1 never revived  no node saw n1 come up while n1's daemon had
//	                       not been running (crashed, stopped or paused) for
//	                       longer than the lag the heartbeat allows a frame
//	                       (hb.timeout/3): only a frame n1 sent before,
//	                       delivered late, could say so

// Ack is an admin request on a service answered without error, with the
// id of the target it set or joined.
type Ack struct {
	At      string // the simulated time, as in the timeline
	Node    string // the node that answered
	Service string
	Action  string
	ID      string
}

// noteAnswer records the answer a of node name's daemon to the request of
// action on svc when it acknowledges a target.
func (c *Cluster) noteAnswer(name, svc, action string, a node.Answer) {
	if a.Err != nil || a.ID == "" {
		return
	}
	c.acks = append(c.acks, Ack{At: fmtTime(c.Now()), Node: name, Service: svc, Action: action, ID: a.ID})
}

// Acks returns the acknowledged targets so far, in order.
func (c *Cluster) Acks() []Ack { return c.acks }

// idVersion is the version of the target a new target's id names
// (ORIGIN-COUNTER, node.setTarget); ok false for another id.
func idVersion(id string) (dataset.Version, bool) {
	i := strings.LastIndex(id, "-")
	if i <= 0 {
		return dataset.Version{}, false
	}
	n, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		return dataset.Version{}, false
	}
	return dataset.Version{Counter: n, Origin: id[:i]}, true
}

// keeps reports whether t is the acknowledged target id or supersedes it.
func keeps(t dataset.Target, id string) bool {
	if t.ID == id {
		return true
	}
	v, ok := idVersion(id)
	return ok && t.Version.Newer(v)
}

// keepsRollout reports whether r is the acknowledged rollout id or a
// newer record.
func keepsRollout(r *dataset.Rollout, id string) bool {
	if r == nil {
		return false
	}
	if r.ID == id {
		return true
	}
	v, ok := idVersion(id)
	return ok && r.Version.Newer(v)
}

// LostAcks lists the acknowledged targets of svc that the node that
// answered no longer keeps, on its disk or in its running core.
func (c *Cluster) LostAcks(svc string) []string {
	var out []string
	for _, a := range c.acks {
		if a.Service != svc {
			continue
		}
		n := c.nodes[a.Node]
		where := ""
		if a.Action == "rollout" || a.Action == "rollback" {
			// the id is the rollout record's, not a target's: the node
			// keeps that record or a newer one (its rollback, a later
			// rollout, a paused version)
			if r := n.dur.Services[svc].Rollout; !keepsRollout(r, a.ID) {
				where = "its disk holds no such rollout"
			} else if n.d != nil && !keepsRollout(n.d.core.State().Services[svc].Rollout, a.ID) {
				where = "its core holds no such rollout"
			}
		} else if t := n.dur.Services[svc].Target; !keeps(t, a.ID) {
			where = fmt.Sprintf("its disk holds %s (id %s)", effective(t), t.ID)
		} else if n.d != nil {
			if t := n.d.core.State().Services[svc].Target; !keeps(t, a.ID) {
				where = fmt.Sprintf("its core holds %s (id %s)", effective(t), t.ID)
			}
		}
		if where != "" {
			out = append(out, fmt.Sprintf("%s acknowledged by %s at %s (id %s): %s", a.Action, a.Node, strings.TrimSpace(a.At), a.ID, where))
		}
	}
	return out
}

// notePeerUp records a peer seen coming up by node while its daemon does
// not run (called for each typed event of node's core).
func (c *Cluster) notePeerUp(name string, e node.Event) {
	ps, ok := e.(node.PeerStatus)
	if !ok || ps.To != dataset.NodeUp {
		return
	}
	// a frame sent just before the peer stopped may still arrive within
	// the lag the heartbeat allows any frame (a third of hb.timeout)
	if m := c.Machine(ps.Node); m != "running" && c.clk.Now().Sub(c.nodes[ps.Node].ranUntil) > c.opt.HBTimeout/3 {
		if c.revived == nil {
			c.revived = map[string][]string{}
		}
		c.revived[ps.Node] = append(c.revived[ps.Node], fmt.Sprintf("%s %s saw %s up, %s since %s", strings.TrimSpace(fmtTime(c.Now())), name, ps.Node, m,
			strings.TrimSpace(fmtTime(c.nodes[ps.Node].ranUntil.Sub(T0)))))
	}
}

// Revivals returns when a node saw peer come up while peer's daemon was
// not running, in order.
func (c *Cluster) Revivals(peer string) []string { return c.revived[peer] }
