package heartbeat

import (
	"encoding/json"
	"hash/fnv"

	"haven/dataset"
)

// sumLevel is the first format version whose beats carry the combinable
// digest (sums); v1 beats carry the whole-copy digest (digest), which a
// node of the previous release computes and compares.
const sumLevel = 2

// sums is the combinable digest of a dataset at a format level: the sum
// (mod 2^64) of one hash per entry (the node-level fields as a delta's
// head holds them, each service, target and config), so that a change of
// one entry updates it in O(1) on the sender and on every receiver.
type sums struct {
	level int
	ok    bool
	sum   uint64
}

// value is the digest a v2 beat carries (never 0: 0 means "not said").
func (s *sums) value() uint64 { return max(1, s.sum) }

// full computes s from scratch (once per full copy, or a level change).
func (s *sums) full(n *dataset.Node, level int) {
	s.level, s.ok, s.sum = level, true, 0
	s.sum += headHash(n, level)
	for k, v := range n.Services {
		s.sum += svcHash(k, v, level)
	}
	for k, v := range n.Targets {
		s.sum += entryHash('t', k, v)
	}
	for k, v := range n.Configs {
		s.sum += entryHash('c', k, v)
	}
}

// keys are the entries a delta touches.
type touched struct{ svcs, tgts, cfgs []string }

func touchedBy(d *delta) touched {
	var t touched
	t.svcs = appendKeys(t.svcs, d.Set, d.Del)
	t.tgts = appendKeys(t.tgts, d.TSet, d.TDel)
	t.cfgs = appendKeys(t.cfgs, d.CSet, d.CDel)
	return t
}

func appendKeys[V any](ks []string, set map[string]V, del []string) []string {
	for k := range set {
		ks = append(ks, k)
	}
	return append(ks, del...)
}

// add adds (sign 1) or removes (sign -1) the hashes of the head and of the
// touched entries as n holds them.
func (s *sums) add(n *dataset.Node, t touched, sign uint64) {
	s.sum += sign * headHash(n, s.level)
	for _, k := range t.svcs {
		if v, ok := n.Services[k]; ok {
			s.sum += sign * svcHash(k, v, s.level)
		}
	}
	for _, k := range t.tgts {
		if v, ok := n.Targets[k]; ok {
			s.sum += sign * entryHash('t', k, v)
		}
	}
	for _, k := range t.cfgs {
		if v, ok := n.Configs[k]; ok {
			s.sum += sign * entryHash('c', k, v)
		}
	}
}

// applyDelta applies d to n (delta.applyCounted: res is the number of
// resources of n's instances) and keeps s, when valid, the digest of n:
// only the entries d touches are hashed again.
func (s *sums) applyDelta(d *delta, n *dataset.Node, gen uint64, res int) {
	if !s.ok {
		d.applyCounted(n, gen, res)
		return
	}
	t := touchedBy(d) // before apply: its bound may drop keys of d
	s.add(n, t, ^uint64(0))
	d.applyCounted(n, gen, res)
	s.add(n, t, 1)
}

// headHash hashes the node-level fields (head: without services, targets,
// configs and gen) at level.
func headHash(n *dataset.Node, level int) uint64 {
	h := head(n)
	return entryHash('h', "", h.AtLevel(level))
}

// svcHash hashes one instance at level (the since:"N" fields above it
// left out, as AtLevel does).
func svcHash(k string, v dataset.Instance, level int) uint64 {
	one := dataset.Node{Services: map[string]dataset.Instance{k: v}}
	return entryHash('s', k, one.AtLevel(level).Services[k])
}

// entryHash is a 64-bit hash of one entry's tag, key and JSON form, mixed
// so that sums of entries spread.
func entryHash(tag byte, key string, v any) uint64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0 // not encodable: not sent either (see encode)
	}
	h := fnv.New64a()
	h.Write([]byte{tag})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(b)
	x := h.Sum64()
	// splitmix64 finaliser
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// localDigest is the digest beats carry for n, the new local dataset (d
// the delta from prev, nil when not known): the whole-copy digest at
// format 1, the combinable one (updated for d's entries only) from 2.
func (c *core) localDigest(prev, n *dataset.Node, d *delta) uint64 {
	level := wireVersion(n.Format)
	if level < sumLevel {
		c.sums.ok = false
		return digest(n.AtLevel(level))
	}
	if d != nil && prev != nil && c.sums.ok && c.sums.level == level {
		t := touchedBy(d)
		c.sums.add(prev, t, ^uint64(0))
		c.sums.add(n, t, 1)
	} else {
		c.sums.full(n, level)
	}
	return c.sums.value()
}

// copyDigest is the digest of p's copy as a beat of format v carries it:
// the whole-copy digest (once per generation) at 1, the combinable one
// (from scratch once per full copy, then kept by the deltas) from 2.
func (c *core) copyDigest(p *peer, v int) uint64 {
	if v >= sumLevel {
		if !p.sums.ok || p.sums.level != v {
			p.sums.full(p.data, v)
		}
		return p.sums.value()
	}
	if !p.digOK {
		// the view of the copy at the message's format (dataset.AtLevel)
		p.dig, p.digOK = digest(p.data.AtLevel(v)), true
	}
	return p.dig
}
