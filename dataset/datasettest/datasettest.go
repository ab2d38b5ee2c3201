// Package datasettest builds a peer's datasets and their changes for the
// tests of what takes them (the driver's heartbeat path, the node core).
package datasettest

import (
	"maps"

	"haven/dataset"
)

// Next returns prev with edit applied (its services, configs and targets
// maps copied first: prev is never written; its generation one more) and
// the changes from prev listing the keys given, as the heartbeat hands
// them in a Data event.
func Next(prev *dataset.Node, edit func(n *dataset.Node), svcs, cfgs, tgts []string) (*dataset.Node, *dataset.Changes) {
	n := *prev
	n.Services, n.Configs, n.Targets = maps.Clone(prev.Services), maps.Clone(prev.Configs), maps.Clone(prev.Targets)
	n.Gen++
	edit(&n)
	ch := dataset.NewChanges(prev)
	for keys, into := range map[*[]string]map[string]bool{&svcs: ch.Services, &cfgs: ch.Configs, &tgts: ch.Targets} {
		for _, k := range *keys {
			into[k] = true
		}
	}
	return &n, ch
}
