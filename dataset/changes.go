package dataset

// Changes says what differs between two copies of one node's data: Base,
// and the copy it goes with (a heartbeat Data event's, a node core's peer
// event's). Both copies are read-only: they share the values (and the maps)
// that did not change. A receiver that still holds Base may look at the
// entries listed only; one that does not (it missed an event, or never
// had one) takes the copy as a whole.
type Changes struct {
	// Base is the copy the changes apply to (compared by pointer).
	Base *Node
	// Head is set when a node-level field (every field but Services,
	// Targets, Configs and Gen: labels, clears and format included) may
	// differ.
	Head bool
	// Services, Targets and Configs are the keys set or removed (a key
	// listed may also be unchanged).
	Services, Targets, Configs map[string]bool
}

// NewChanges returns empty changes of base.
func NewChanges(base *Node) *Changes {
	return &Changes{Base: base, Services: map[string]bool{}, Targets: map[string]bool{}, Configs: map[string]bool{}}
}

// Then returns the changes of c followed by those of next (next's Base is
// c's copy): c's Base, the union of the keys. Either nil (not known: the
// copy as a whole) makes it nil. It may reuse c's maps.
func (c *Changes) Then(next *Changes) *Changes {
	if c == nil || next == nil {
		return nil
	}
	c.Head = c.Head || next.Head
	for _, p := range []struct{ into, from *map[string]bool }{{&c.Services, &next.Services}, {&c.Targets, &next.Targets}, {&c.Configs, &next.Configs}} {
		if len(*p.from) == 0 {
			continue
		}
		if *p.into == nil {
			*p.into = map[string]bool{}
		}
		for k := range *p.from {
			(*p.into)[k] = true
		}
	}
	return c
}

// Empty reports whether nothing changed.
func (c *Changes) Empty() bool {
	return !c.Head && len(c.Services) == 0 && len(c.Targets) == 0 && len(c.Configs) == 0
}
