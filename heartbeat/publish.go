package heartbeat

import (
	"maps"

	"haven/dataset"
)

// nextLocal is the local dataset after a Publish of n, and the delta from
// the current one (nil: nothing changed). It costs a comparison per entry
// and a shallow copy of the maps that changed, where a deep clone of n
// was taken before each comparison (every instance's resources copied):
// only what the delta takes from n is copied deep, since the caller may
// modify n afterwards. The current dataset is left as it is (beats and a
// full copy of it may still be encoded from it).
func (c *core) nextLocal(n dataset.Node) (*dataset.Node, *delta) {
	n.Name = c.s.Node
	if n.Gen <= c.local.Gen {
		n.Gen = c.local.Gen + 1
	}
	if n.Labels == nil {
		n.Labels = map[string]string{} // as Clone makes it: the same head
	}
	d := diff(c.local, &n)
	if d.empty() {
		return nil, nil
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
	next := *c.local
	if d.Head != nil {
		d.Head.Labels, d.Head.Clears = maps.Clone(d.Head.Labels), maps.Clone(d.Head.Clears)
		next = *d.Head
		next.Services, next.Targets, next.Configs = c.local.Services, c.local.Targets, c.local.Configs
	}
	next.Gen = n.Gen
	next.Services = patched(next.Services, d.Set, d.Del)
	next.Targets = patched(next.Targets, d.TSet, d.TDel)
	next.Configs = patched(next.Configs, d.CSet, d.CDel)
	return &next, d
}

// patched is a shallow copy of m with set and del applied, m itself when
// there is nothing to apply.
func patched[V any](m map[string]V, set map[string]V, del []string) map[string]V {
	if len(set) == 0 && len(del) == 0 {
		return m
	}
	return applyMap(maps.Clone(m), set, del)
}

// instanceSame reports whether two instances are the same, as
// reflect.DeepEqual would on the copies Clone makes (a nil resources map
// is an empty one there), without reflection. Times compare with ==: a
// time equal in another location reads as a change (sent again,
// harmless). TestInstanceSameKnowsEveryField keeps it in step with
// dataset.Instance.
func instanceSame(a, b dataset.Instance) bool {
	if a.Avail != b.Avail || a.Overall != b.Overall || a.Frozen != b.Frozen || a.Monitor != b.Monitor ||
		a.PlacementLeader != b.PlacementLeader || a.Flags != b.Flags || a.ConfigVersion != b.ConfigVersion ||
		a.ConfigError != b.ConfigError || a.Excluded != b.Excluded || a.GaveUp != b.GaveUp || a.Stale != b.Stale ||
		a.AgeMs != b.AgeMs || a.FencingToken != b.FencingToken || a.FencingSeen != b.FencingSeen || a.ReadyAck != b.ReadyAck ||
		a.LastStartMs != b.LastStartMs || a.LastStopMs != b.LastStopMs ||
		len(a.Resources) != len(b.Resources) {
		return false
	}
	for k, r := range a.Resources {
		if s, ok := b.Resources[k]; !ok || s != r {
			return false
		}
	}
	return true
}

// configSame reports whether two config entries are the same, as
// reflect.DeepEqual would on the copies Clone makes, without reflection
// (TestConfigSameKnowsEveryField keeps it in step with
// dataset.ConfigEntry). Clone keeps a nil lineage nil: nil and empty
// differ, as on the wire.
func configSame(a, b dataset.ConfigEntry) bool {
	return a.Version == b.Version && a.Digest == b.Digest && a.Raw == b.Raw && a.Deleted == b.Deleted && a.Unknown == b.Unknown &&
		(a.Includes == nil) == (b.Includes == nil) && maps.Equal(a.Includes, b.Includes)
}
