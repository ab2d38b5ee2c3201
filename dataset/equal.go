package dataset

import "maps"

// Equal reports whether two instances are the same in every field, as
// reflect.DeepEqual would on the copies Clone makes (a nil resources map
// is an empty one there), without reflection. Times compare with ==: a
// time equal in another location reads as a change (sent again,
// harmless). TestInstanceEqualKnowsEveryField keeps it in step with
// Instance.
func (a Instance) Equal(b Instance) bool {
	if a.Avail != b.Avail || a.Overall != b.Overall || a.Frozen != b.Frozen || a.Monitor != b.Monitor ||
		a.PlacementLeader != b.PlacementLeader || a.Flags != b.Flags || a.ConfigVersion != b.ConfigVersion ||
		a.ConfigError != b.ConfigError || a.Excluded != b.Excluded || a.GaveUp != b.GaveUp || a.Stale != b.Stale ||
		a.AgeMs != b.AgeMs || a.FencingToken != b.FencingToken || a.FencingSeen != b.FencingSeen || a.ReadyAck != b.ReadyAck ||
		a.LastStartMs != b.LastStartMs || a.LastStopMs != b.LastStopMs || a.RunDigest != b.RunDigest || a.ConfigDigest != b.ConfigDigest ||
		!a.Rollout.Equal(b.Rollout) || (a.RolloutMark == nil) != (b.RolloutMark == nil) ||
		a.RolloutMark != nil && *a.RolloutMark != *b.RolloutMark ||
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

// Equal reports whether two config entries are the same, as
// reflect.DeepEqual would on the copies Clone makes, without reflection
// (TestConfigEqualKnowsEveryField keeps it in step with
// ConfigEntry). Clone keeps a nil lineage nil: nil and empty
// differ, as on the wire.
func (a ConfigEntry) Equal(b ConfigEntry) bool {
	return a.Version == b.Version && a.Digest == b.Digest && a.Raw == b.Raw && a.Deleted == b.Deleted && a.Sig == b.Sig && a.Unknown == b.Unknown &&
		(a.Includes == nil) == (b.Includes == nil) && maps.Equal(a.Includes, b.Includes)
}
