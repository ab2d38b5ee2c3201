// Package versionbound bounds the version counters a node takes from its
// peers and hands out, by its clock.
//
// Targets, clears and config edits are ordered by a Lamport counter that
// every node advances past the versions it sees (node/core.go: nextVersion,
// witness). A member that announces a huge counter (an insider: one datagram) pushes
// every node's clock there. An absolute bound on the counters is no
// defence: a counter announced exactly at it was taken, and every version
// made after it was beyond it, refused by every peer, for good (an edit
// then failed for ever, and an acknowledged freeze stayed on one node).
//
// So a counter is bounded by the node's clock instead: a version from a
// peer is taken only when its counter is at most Cap, the
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
// counters a node holds when it starts also bound it (Anchor:
// they may advance from there by a thousand a second), so that a cluster
// whose counters went past the clock keeps going once every member runs
// this release.
package versionbound

import (
	"fmt"
	"math"
	"time"

	"haven/dataset"
	"haven/node/vocab"
)

// VersionLead is how far ahead of a node's clock (in milliseconds since
// 1970) a version counter may be.
const VersionLead = time.Minute

// aheadRetryMax: a version refused as ahead of the clock by at most this
// much is tried again once the clock reached it.
const aheadRetryMax = 10 * time.Minute

// maxRefusalsSaid bounds what the refusals said remember.
const maxRefusalsSaid = 4096

// Bound is the core's bookkeeping of the bound.
type Bound struct {
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

// Cap is the highest version counter this node takes at now.
func (b *Bound) Cap(now time.Time) uint64 {
	if b.anchorAt.IsZero() {
		b.anchorAt = now
	}
	run := b.anchor
	if d := now.Sub(b.anchorAt); d > 0 {
		run = satAdd(run, uint64(d.Milliseconds()))
	}
	return satAdd(max(msSinceEpoch(now), run), uint64(VersionLead.Milliseconds()))
}

// Check refuses a peer's version whose counter is beyond the bound, and
// notes when it becomes acceptable if that is soon (RetryDue).
func (b *Bound) Check(v dataset.Version, now time.Time) error {
	bound := b.Cap(now)
	if v.Counter <= bound {
		return nil
	}
	ahead := v.Counter - bound
	if ahead <= uint64(aheadRetryMax.Milliseconds()) {
		at := now.Add(time.Duration(ahead) * time.Millisecond)
		if b.retryAt.IsZero() || at.Before(b.retryAt) {
			b.retryAt = at
		}
	}
	return fmt.Errorf("version counter %d from %s is ahead of this node's clock: it takes counters up to %d now (its clock in milliseconds since 1970, plus %s)",
		v.Counter, v.Origin, bound, VersionLead)
}

// Err refuses an admin request that needs a new version when this node's
// counter (lamport) is at its bound: its peers would refuse the version.
func (b *Bound) Err(lamport uint64, now time.Time) error {
	bound := b.Cap(now)
	if lamport < bound {
		return nil
	}
	ahead := time.Duration(min(lamport-bound+1, uint64(math.MaxInt64/int64(time.Millisecond)))) * time.Millisecond
	if ahead <= aheadRetryMax {
		return vocab.Failedf("refused: this node's version counter %d is ahead of its clock (counters up to %d now): a peer whose clock is ahead of this one's announced it: retry in %s",
			lamport, bound, ahead.Round(time.Millisecond))
	}
	return vocab.Failedf("refused: this node's version counter %d is %s ahead of its clock (counters up to %d now): is this node's clock right? (docs/security.md, \"Version counters\")",
		lamport, ahead.Round(time.Second), bound)
}

// Anchor sets the counter this run started with: the bound moves on from
// it by a thousand a second, whatever the clock says.
func (b *Bound) Anchor(lamport uint64) { b.anchor = lamport }

// Said reports whether the refusal of version v under key (a kind and a
// service) was said already, and remembers it if not.
func (b *Bound) Said(key string, v dataset.Version) bool {
	if b.said[key] == v {
		return true
	}
	if b.said == nil || len(b.said) >= maxRefusalsSaid {
		b.said = map[string]dataset.Version{}
	}
	b.said[key] = v
	return false
}

// RetryAt is when the versions refused as ahead become acceptable, at the
// earliest (zero: none waits).
func (b *Bound) RetryAt() time.Time { return b.retryAt }

// RetryDue reports whether versions refused as ahead became acceptable at
// now, and forgets them: the caller merges the peers' data again.
func (b *Bound) RetryDue(now time.Time) bool {
	if b.retryAt.IsZero() || now.Before(b.retryAt) {
		return false
	}
	b.retryAt = time.Time{}
	return true
}
