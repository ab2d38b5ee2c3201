// Package affinity decides the affinity rules of a service between nodes:
// the hard forms (DEFAULT.hard_affinity, DEFAULT.hard_anti_affinity) filter
// candidate nodes, the soft forms (DEFAULT.soft_affinity,
// DEFAULT.soft_anti_affinity) reorder them.
//
// The rules, as in docs/behaviour.md 6 (its four tables are
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
// What a service has on a node is a Presence, given by the caller through
// Env.Presence; placement uses: running when the instance's avail is up or
// warn, claimed when its monitor is ready or starting (the node's intention
// to start it), on a node whose data is alive.
//
//   - The affinity rules (hard_affinity, soft_affinity) need the listed
//     service running: a claim does not satisfy them (hence docs/behaviour.md 6's
//     "startup serialization").
//   - The anti-affinity rules (hard_anti_affinity, soft_anti_affinity)
//     count a running instance, and a claim the rule holder yields to
//     (Yields): without it two services placed at the same time would both
//     start on the same node. The holder yields to the claim of a service
//     that has no anti-affinity rule against it (that one will not move).
//     When both have one, exactly one yields, the same on every node: the
//     one with a hard rule yields to one whose rule is soft only, then the
//     higher DEFAULT.priority value yields, then the higher name.
//
// The package is pure: no IO, no clock, no goroutines, no logging.
package affinity
