package node

// The answer of an admin action carries what the CLI prints with it: the
// frozen state of the service before the action (the placed and started
// targets thaw every instance: "the service was frozen: thawed by this
// action"), so that the CLI needs no status call of its own.

// Frozen words of Answer.WasFrozen.
const (
	WasFrozen = "frozen"
	WasMixed  = "mixed"
	WasThawed = "thawed"
)

// noteWasFrozen keeps, for the answer of tk, the frozen state of the
// instances of svc on nodes as this node knows them (the status's: an
// instance is frozen when it is, or its node is).
func (c *Core) noteWasFrozen(tk Ticket, svc string, nodes []string) {
	frozen, thawed := 0, 0
	for _, n := range nodes {
		var f bool
		if n == c.cfg.Name {
			inst := c.insts[svc]
			if inst == nil || !inst.Local {
				continue
			}
			f = c.state.Services[svc].Frozen || c.state.NodeFrozen
		} else {
			p := c.pv.Peers[n]
			if p == nil || p.Data == nil {
				continue
			}
			i, ok := p.Data.Services[svc]
			if !ok {
				continue
			}
			f = i.Frozen || p.Data.Frozen
		}
		if f {
			frozen++
		} else {
			thawed++
		}
	}
	w := WasThawed
	switch {
	case frozen > 0 && thawed > 0:
		w = WasMixed
	case frozen > 0:
		w = WasFrozen
	}
	if c.wasFrozen == nil {
		c.wasFrozen = map[Ticket]string{}
	}
	c.wasFrozen[tk] = w
}

// stampAnswers sets WasFrozen on the answers going out.
func (c *Core) stampAnswers(as []Answer) {
	if len(c.wasFrozen) == 0 {
		return
	}
	for i := range as {
		if w, ok := c.wasFrozen[as[i].Ticket]; ok {
			as[i].WasFrozen = w
			delete(c.wasFrozen, as[i].Ticket)
		}
	}
}
