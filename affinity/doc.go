// Package affinity decides the affinity rules of a service between nodes:
// the hard forms (DEFAULT.hard_affinity, DEFAULT.hard_anti_affinity) filter
// candidate nodes, the soft forms (DEFAULT.soft_affinity,
// DEFAULT.soft_anti_affinity) reorder them.
//
// The rules, as in the seed orchestration document (its four tables are
// normative):
//
//   - hard_affinity: a node qualifies only if every listed service has a
//     running instance there. When no node qualifies the service waits; the
//     rule is never broken.
//   - hard_anti_affinity: a node qualifies only if none of the listed
//     services has a running instance there. Same waiting rule.
//   - soft_affinity / soft_anti_affinity: the same tests, but they only move
//     the nodes that satisfy them ahead of those that don't (a stable
//     reordering). If no candidate satisfies them, the order is unchanged:
//     best effort.
//
// "Running" is decided by the caller through a RunningFunc; placement uses
// "instance avail up or warn on a node whose data is alive".
//
// The package is pure: no IO, no clock, no goroutines, no logging.
package affinity
