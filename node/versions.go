package node

import (
	"haven/dataset"
	"haven/node/versionbound"
)

// The bound of version counters (package node/versionbound): the core's
// side, what a refusal says (the merge again once the clock reached the
// versions refused as ahead is the tick's: retryAhead in tick.go).

// VersionLead is how far ahead of a node's clock (in milliseconds since
// 1970) a version counter may be.
const VersionLead = versionbound.VersionLead

// sayRefused says a refused version of a peer's target, clear or config
// (kind) of svc, once per version.
func (c *Core) sayRefused(kind, svc, from string, v dataset.Version, err error) {
	if c.vb.Said(kind+" "+svc, v) {
		return
	}
	if kind == "config" {
		c.emit(ConfigRefused{Svc: svc, From: from, Err: err.Error()})
		return
	}
	c.emit(VersionRefused{Svc: svc, What: kind, From: from, Counter: v.Counter, Origin: v.Origin, Err: err.Error()})
}

// VersionRefused: a peer's target or clear whose version counter is ahead
// of this node's clock is ignored (the versions bound: versions.go).
type VersionRefused struct {
	Svc string `json:"svc"`
	// What is "target" or "clear".
	What    string `json:"what"`
	From    string `json:"from"`
	Counter uint64 `json:"counter"`
	Origin  string `json:"origin"`
	Err     string `json:"error"`
}

func (VersionRefused) Kind() string      { return "version_refused" }
func (e VersionRefused) Service() string { return e.Svc }
func (VersionRefused) Level() Level      { return Error }
func (e VersionRefused) String() string {
	return e.What + " from peer " + e.From + " ignored: " + e.Err
}
