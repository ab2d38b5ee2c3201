package heartbeat

import (
	"maps"

	"haven/dataset"
)

// nextLocal is the local dataset after a Publish of n, the delta from
// the current one (nil: nothing changed), and what the current one was
// (its head and the entries the delta touches: the digest's terms to take
// out, localDigest). It costs a comparison per entry and what the delta
// touches: the current dataset's maps are its own (never handed out), so
// the delta is applied to them in place, where a deep clone of n was
// taken before each comparison (every instance's resources copied). Only
// what the delta takes from n is copied deep, since the caller may modify
// n afterwards.
func (c *core) nextLocal(n dataset.Node) (next, was *dataset.Node, d *delta) {
	n.Name = c.s.Node
	if n.Gen <= c.local.Gen {
		n.Gen = c.local.Gen + 1
	}
	if n.Labels == nil {
		n.Labels = map[string]string{} // as Clone makes it: the same head
	}
	d = diff(c.local, &n)
	if d.empty() {
		return nil, nil, nil
	}
	// what the delta holds of n's maps, copied
	for k, v := range d.Set {
		res := make(map[string]dataset.Resource, len(v.Resources)) // never nil, as Clone makes it
		maps.Copy(res, v.Resources)
		v.Resources = res
		d.Set[k] = v
	}
	for k, v := range d.CSet {
		v.Includes = maps.Clone(v.Includes)
		d.CSet[k] = v
	}
	was = touchedOf(c.local, d)
	nx := *c.local
	if d.Head != nil {
		d.Head.Labels, d.Head.Clears = maps.Clone(d.Head.Labels), maps.Clone(d.Head.Clears)
		nx = *d.Head
		nx.Services, nx.Targets, nx.Configs = c.local.Services, c.local.Targets, c.local.Configs
	}
	nx.Gen = n.Gen
	nx.Services = applyMap(nx.Services, d.Set, d.Del)
	nx.Targets = applyMap(nx.Targets, d.TSet, d.TDel)
	nx.Configs = applyMap(nx.Configs, d.CSet, d.CDel)
	return &nx, was, d
}

// touchedOf is n's head with the entries of n that d touches only.
func touchedOf(n *dataset.Node, d *delta) *dataset.Node {
	t := *n
	t.Services = pick(n.Services, d.Set, d.Del)
	t.Targets = pick(n.Targets, d.TSet, d.TDel)
	t.Configs = pick(n.Configs, d.CSet, d.CDel)
	return &t
}

// pick is the entries of m whose keys set or del hold.
func pick[V any](m map[string]V, set map[string]V, del []string) map[string]V {
	out := make(map[string]V, len(set)+len(del))
	for k := range set {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	for _, k := range del {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
