package node

// Heartbeat links (several network links per member, or a link added from
// outside such as the disk heartbeat): a link going down while the peer is
// heard on another one is an alarm, never a peer down, a vote or a
// failover. The daemon reports these events itself; they never reach the
// core's state.

// LinkDown: a link to a peer was silent for hb.timeout while the peer is
// heard on another link.
type LinkDown struct {
	Node   string `json:"node"`
	Link   string `json:"link"`
	Addr   string `json:"addr,omitempty"`
	Reason string `json:"reason"`
}

func (LinkDown) Kind() string    { return "link_down" }
func (LinkDown) Service() string { return "" }
func (LinkDown) Level() Level    { return Warn }
func (e LinkDown) String() string {
	return "heartbeat link " + linkText(e.Link, e.Addr) + " to " + e.Node + " down: " + e.Reason +
		"; " + e.Node + " stays up (heard on another link): check that network (docs/operations.md, \"Heartbeat links\")"
}

// LinkUp: a link reported down carries the peer's frames again.
type LinkUp struct {
	Node string `json:"node"`
	Link string `json:"link"`
	Addr string `json:"addr,omitempty"`
}

func (LinkUp) Kind() string    { return "link_up" }
func (LinkUp) Service() string { return "" }
func (LinkUp) Level() Level    { return Info }
func (e LinkUp) String() string {
	return "heartbeat link " + linkText(e.Link, e.Addr) + " to " + e.Node + " up again"
}

// LinkDegraded: a link to a peer passes this node's beats but not its
// data (the peer said its copy was behind): the data goes over the other
// links.
type LinkDegraded struct {
	Node   string `json:"node"`
	Link   string `json:"link"`
	Addr   string `json:"addr,omitempty"`
	Reason string `json:"reason"`
}

func (LinkDegraded) Kind() string    { return "link_degraded" }
func (LinkDegraded) Service() string { return "" }
func (LinkDegraded) Level() Level    { return Warn }
func (e LinkDegraded) String() string {
	return "heartbeat link " + linkText(e.Link, e.Addr) + " to " + e.Node + " degraded: " + e.Reason +
		"; " + e.Node + " stays up: check that network's MTU and filters (docs/operations.md, \"Heartbeat links\")"
}

// LinkRepaired: a degraded link carries data again.
type LinkRepaired struct {
	Node string `json:"node"`
	Link string `json:"link"`
	Addr string `json:"addr,omitempty"`
}

func (LinkRepaired) Kind() string    { return "link_repaired" }
func (LinkRepaired) Service() string { return "" }
func (LinkRepaired) Level() Level    { return Info }
func (e LinkRepaired) String() string {
	return "heartbeat link " + linkText(e.Link, e.Addr) + " to " + e.Node + " carries data again"
}

func linkText(link, addr string) string {
	if addr == "" {
		return link
	}
	return link + " (" + addr + ")"
}
