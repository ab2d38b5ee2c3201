package node

import (
	"fmt"
	"math"
	"time"

	"haven/dataset"
	"haven/monitor"
)

// The bound of version counters.
//
// Targets, clears and config edits are ordered by a Lamport counter that
// every node advances past the versions it sees (nextVersion, Witness). A
// member that announces a huge counter (an insider: one datagram) pushes
// every node's clock there. An absolute bound on the counters is no
// defence: a counter announced exactly at it was taken, and every version
// made after it was beyond it, refused by every peer, for good (an edit
// then failed for ever, and an acknowledged freeze stayed on one node).
//
// So a counter is bounded by the node's clock instead: a version from a
// peer is taken only when its counter is at most versionCap, the
// milliseconds since 1970 by this node's clock plus VersionLead (about
// 1.8e12 in 2027, 2^48 in the year 10889; the counters of a real cluster,
// one per admin action or config edit, stay far below it). A counter
// beyond it is refused and said (an event per version and service), never
// witnessed. Whatever a member announces, it pushes the counters at most
// VersionLead ahead of the clock, and the bound moves on with the clock
// (a thousand versions a second), so the versions made after the highest
// counter taken are taken too.
//
// A node whose clock lags its peers' may refuse a version made right
// after the counters were pushed to the bound by a faster clock: the
// refusal is said, and the peers' data is merged again once the clock
// reached it (when that is at most aheadRetryMax away). A node whose own
// counter is beyond its bound (its clock went back, or the counters went
// past the clock before this bound existed) does not make versions its
// peers would refuse: the admin request is refused with the reason. The
// counters a node holds when it starts also bound it (versionBound.anchor:
// they may advance from there by a thousand a second), so that a cluster
// whose counters went past the clock keeps going once every member runs
// this release.

// VersionLead is how far ahead of a node's clock (in milliseconds since
// 1970) a version counter may be.
const VersionLead = time.Minute

// aheadRetryMax: a version refused as ahead of the clock by at most this
// much is tried again once the clock reached it.
const aheadRetryMax = 10 * time.Minute

// maxRefusalsSaid bounds what the refusals said remember.
const maxRefusalsSaid = 4096

// versionBound is the core's bookkeeping of the bound.
type versionBound struct {
	// anchor is the Lamport counter this run started with, anchorAt when
	// the bound was first needed (zero: not yet).
	anchor   uint64
	anchorAt time.Time
	// retryAt is when the versions refused as ahead become acceptable, at
	// the earliest (zero: none waits).
	retryAt time.Time
	// said are the refusals said, by kind and service, so that each
	// version is said once.
	said map[string]dataset.Version
}

// msSinceEpoch is t in milliseconds since 1970 (0 before).
func msSinceEpoch(t time.Time) uint64 {
	if ms := t.UnixMilli(); ms > 0 {
		return uint64(ms)
	}
	return 0
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// versionCap is the highest version counter this node takes at now.
func (c *Core) versionCap(now time.Time) uint64 {
	b := &c.vb
	if b.anchorAt.IsZero() {
		b.anchorAt = now
	}
	run := b.anchor
	if d := now.Sub(b.anchorAt); d > 0 {
		run = satAdd(run, uint64(d.Milliseconds()))
	}
	return satAdd(max(msSinceEpoch(now), run), uint64(VersionLead.Milliseconds()))
}

// checkVersion refuses a peer's version whose counter is beyond the
// bound, and notes when it becomes acceptable if that is soon.
func (c *Core) checkVersion(v dataset.Version, now time.Time) error {
	bound := c.versionCap(now)
	if v.Counter <= bound {
		return nil
	}
	ahead := v.Counter - bound
	if ahead <= uint64(aheadRetryMax.Milliseconds()) {
		at := now.Add(time.Duration(ahead) * time.Millisecond)
		if c.vb.retryAt.IsZero() || at.Before(c.vb.retryAt) {
			c.vb.retryAt = at
		}
	}
	return fmt.Errorf("version counter %d from %s is ahead of this node's clock: it takes counters up to %d now (its clock in milliseconds since 1970, plus %s)",
		v.Counter, v.Origin, bound, VersionLead)
}

// versionErr refuses an admin request that needs a new version when this
// node's counter is at its bound: its peers would refuse the version.
func (c *Core) versionErr(now time.Time) error {
	bound := c.versionCap(now)
	if c.state.Lamport < bound {
		return nil
	}
	ahead := time.Duration(min(c.state.Lamport-bound+1, uint64(math.MaxInt64/int64(time.Millisecond)))) * time.Millisecond
	if ahead <= aheadRetryMax {
		return failedf("refused: this node's version counter %d is ahead of its clock (counters up to %d now): a peer whose clock is ahead of this one's announced it: retry in %s",
			c.state.Lamport, bound, ahead.Round(time.Millisecond))
	}
	return failedf("refused: this node's version counter %d is %s ahead of its clock (counters up to %d now): is this node's clock right? (docs/security.md, \"Version counters\")",
		c.state.Lamport, ahead.Round(time.Second), bound)
}

// sayRefused says a refused version of a peer's target, clear or config
// (kind) of svc, once per version.
func (c *Core) sayRefused(kind, svc, from string, v dataset.Version, err error) {
	k := kind + " " + svc
	if c.vb.said[k] == v {
		return
	}
	if c.vb.said == nil || len(c.vb.said) >= maxRefusalsSaid {
		c.vb.said = map[string]dataset.Version{}
	}
	c.vb.said[k] = v
	if kind == "config" {
		c.emit(ConfigRefused{Svc: svc, From: from, Err: err.Error()})
		return
	}
	c.emit(VersionRefused{Svc: svc, What: kind, From: from, Counter: v.Counter, Origin: v.Origin, Err: err.Error()})
}

// retryAhead merges the peers' data again once the versions refused as
// ahead of the clock became acceptable.
func (c *Core) retryAhead(now time.Time) {
	if c.vb.retryAt.IsZero() || now.Before(c.vb.retryAt) {
		return
	}
	c.vb.retryAt = time.Time{}
	c.bumpMergeEra()
	snap := func() monitor.Snapshot { return c.Snapshot(now) }
	for _, pn := range c.pv.pnames {
		if d := c.pv.peers[pn].Data; d != nil {
			c.mergeConfigs(pn, d.Configs, now)
			c.mergeTargets(pn, d.Targets, now, snap)
			c.mergeClears(pn, d.Clears, now)
		}
	}
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
