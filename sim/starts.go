package sim

import (
	"fmt"
	"strings"
	"time"
)

// The start observer: every start the fake driver begins is checked
// against the other nodes, where the service must not be active (its app
// running, or a start of it in flight). It sees every overlap of two
// starts, or of a start and a running instance, as soon as it begins:
// whatever a daemon believes, the truth is the cluster's.

// noteStart is called when node begins a start (or restart) of svc.
func (c *Cluster) noteStart(svc, node string) {
	var on []string
	for _, n := range c.names {
		if n != node && c.active(n, svc) {
			on = append(on, n)
		}
	}
	if c.startCrowds == nil {
		c.startCrowds = map[string][]crowd{}
	}
	c.startCrowds[svc] = append(c.startCrowds[svc], crowd{len(on),
		fmtTime(c.Now()) + " " + node + " starts while active on " + strings.Join(on, ",")})
	if len(on) > 0 {
		if c.startOverlaps == nil {
			c.startOverlaps = map[string][]string{}
		}
		c.startOverlaps[svc] = append(c.startOverlaps[svc],
			fmtTime(c.Now())+" "+node+" starts while active on "+strings.Join(on, ","))
	}
}

// active reports whether svc runs on node or a start of it is in flight.
func (c *Cluster) active(node, svc string) bool {
	if c.running[node][svc] {
		return true
	}
	if d := c.nodes[node].d; d != nil {
		if inst := d.insts[svc]; inst != nil && (inst.busy == "start" || inst.busy == "restart") {
			return true
		}
	}
	return false
}

// StartOverlaps returns every start of svc that began while svc was active
// on another node (when, where, and where else), in order.
func (c *Cluster) StartOverlaps(svc string) []string { return c.startOverlaps[svc] }

// noteToken is called when node begins a start of svc with token: in
// the order of the starts, whatever node they run on, each token must be
// above every one handed out before for svc (two instances of a flex
// service that start in the same step are compared in their order).
func (c *Cluster) noteToken(svc, node string, token uint64) {
	if c.tokenMax == nil {
		c.tokenMax, c.tokenBack = map[string]uint64{}, map[string][]string{}
	}
	if most := c.tokenMax[svc]; token < most {
		c.tokenBack[svc] = append(c.tokenBack[svc], fmt.Sprintf("%s %s starts with token %d after %d was handed out", fmtTime(c.Now()), node, token, most))
	}
	c.tokenMax[svc] = max(c.tokenMax[svc], token)
}

// TokensBackwards returns every start of svc whose fencing token was
// below one handed out before (when, where, the tokens), in order.
func (c *Cluster) TokensBackwards(svc string) []string { return c.tokenBack[svc] }

// crowd is one start: how many other nodes svc was active on when it
// began, and where.
type crowd struct {
	others int
	what   string
}

// StartsCrowded returns every start of svc that began while svc was
// active (running, or a start in flight) on k other nodes or more, in
// order: for a flex service whose flex_max is k, a start too many.
func (c *Cluster) StartsCrowded(svc string, k int) []string {
	var out []string
	for _, s := range c.startCrowds[svc] {
		if s.others >= k {
			out = append(out, s.what)
		}
	}
	return out
}

// Delay makes the heartbeat frames from -> to arrive d late (0: on time
// again); a link keeps its order.
func (c *Cluster) Delay(from, to string, d time.Duration) {
	c.net.SetDelay(from, to, d)
	c.logf("-", "", "frames %s -> %s delayed %s", from, to, d)
}

// Drop makes the link from -> to lose every frame while on (Heal ends
// it too).
func (c *Cluster) Drop(from, to string, on bool) {
	c.net.Drop(from, to, on)
	c.logf("-", "", "frames %s -> %s lost: %v", from, to, on)
}
