package status

import "haven/dataset"

// Instance returns the avail and overall statuses of an instance from the
// statuses of its resources.
//
// The rules, applied to a list of resource statuses:
//   - disabled resources are ignored, and so are n/a ones;
//   - nothing left: n/a;
//   - any warn: warn; "unknown" (not checked yet) counts as warn, since the
//     instance cannot be said to be up or down;
//   - all up: up; all down: down; up and down mixed: warn.
//
// Standby statuses: "stdby up" and "stdby down" are resources meant to run on
// standby nodes too. Next to ordinary resources a "stdby up" one says nothing
// about whether this instance serves, so it is ignored, while a "stdby down"
// one counts as down (a standby resource should be up everywhere, so with
// the others up the instance is warn). When only standby resources are left,
// the result is "stdby up" when all are up, "stdby down" when all are down,
// and warn when they are mixed.
//
// avail counts only the non-optional resources; overall counts them all, so
// a failed optional resource shows in overall and never in avail.
func Instance(res map[string]dataset.Resource) (avail, overall dataset.Status) {
	var all, required []dataset.Status
	for _, r := range res {
		if r.Disabled {
			continue
		}
		all = append(all, r.Status)
		if !r.Optional {
			required = append(required, r.Status)
		}
	}
	return aggregate(required), aggregate(all)
}

// aggregate applies the rules of Instance to one list; the order of the
// list does not matter.
func aggregate(list []dataset.Status) dataset.Status {
	var up, down, warn, stdbyUp, stdbyDown int
	for _, s := range list {
		switch s {
		case dataset.StatusUp:
			up++
		case dataset.StatusDown:
			down++
		case dataset.StatusStdbyUp:
			stdbyUp++
		case dataset.StatusStdbyDown:
			stdbyDown++
		case dataset.StatusNA, "":
			// ignored
		default: // warn, unknown, and anything unexpected
			warn++
		}
	}
	switch {
	case warn > 0:
		return dataset.StatusWarn
	case up+down == 0:
		switch {
		case stdbyUp > 0 && stdbyDown > 0:
			return dataset.StatusWarn
		case stdbyUp > 0:
			return dataset.StatusStdbyUp
		case stdbyDown > 0:
			return dataset.StatusStdbyDown
		}
		return dataset.StatusNA
	}
	down += stdbyDown
	switch {
	case up > 0 && down > 0:
		return dataset.StatusWarn
	case up > 0:
		return dataset.StatusUp
	}
	return dataset.StatusDown
}

// Service returns the status of a failover service from the avail statuses
// of its instances (one per candidate node, in any order):
//   - any warn: warn;
//   - more than one up: warn (the service runs twice);
//   - exactly one up: up;
//   - otherwise down, when any instance is down or standby ("stdby up" and
//     "stdby down" instances do not serve);
//   - otherwise (only n/a, unknown, or no instance at all): n/a.
//
// "unknown" instances (a node whose state is not known) are ignored: they
// neither serve nor are known to be down.
func Service(avails []dataset.Status) dataset.Status {
	var up, down, warn int
	for _, s := range avails {
		switch s {
		case dataset.StatusUp:
			up++
		case dataset.StatusDown, dataset.StatusStdbyUp, dataset.StatusStdbyDown:
			down++
		case dataset.StatusWarn:
			warn++
		}
	}
	switch {
	case warn > 0, up > 1:
		return dataset.StatusWarn
	case up == 1:
		return dataset.StatusUp
	case down > 0:
		return dataset.StatusDown
	}
	return dataset.StatusNA
}

// Flex returns the status of a flex service from the number of its
// instances up: down below min (or none up), up at target, warn
// otherwise (between min and target, or beyond target while the excess
// stops).
func Flex(up, min, target int) dataset.Status {
	switch {
	case up < min || up == 0:
		return dataset.StatusDown
	case up == target:
		return dataset.StatusUp
	}
	return dataset.StatusWarn
}
