// Package placement ranks the nodes of a service: which nodes may run it
// (the candidate filters) and in which order (the placement policy, then the
// soft affinities). Every node computes the same Ranking from the same
// gossiped data: all orders are total, ties break by node name.
//
// Candidate filters (docs/behaviour.md 1.1), in the order the first failing one is
// reported in Ranking.Excluded:
//
//  1. the node is up in the observer's view (not down, maintenance, shutting)
//     and its own node monitor is not init, rejoin, maintenance, shutting or
//     draining;
//  2. the node is not frozen;
//  3. the constraints evaluate true there (Input.ConstraintOK);
//  4. the hard affinity and hard anti-affinity are satisfied (package
//     affinity; an instance in ready or starting on an alive node is a
//     claim: it counts for the anti-affinities, with the tie-break of
//     affinity.Yields, never for the affinities; see PresenceOf);
//  5. the instance there is not frozen;
//  6. the instance there is not excluded by a monitor_action switch;
//  7. the instance there is not "start failed" nor "stop failed" (docs/behaviour.md 1.7's
//     transition table treats a "stop failed" peer like a "start failed" one:
//     the other node starts);
//  8. the restart ladder of the instance there did not give up, unless an
//     admin start drives it (StateOf);
//  9. for a service with requests, the node's capacity holds them
//     (Input.Usage, capacity.go): the requests of every instance holding
//     capacity there, plus this one unless its instance there holds
//     capacity already.
//
// Filters 1-4 are about the node; a node passing them is "placeable"
// (Ranking.Placeable, used by giveback to find where the service belongs).
// Filters 5-9 are about the instance; Ranking.Candidates are the placeable
// nodes that also pass them.
//
// Policies (DEFAULT.placement):
//
//   - "nodes order": the order of DEFAULT.nodes ("*" expands to the cluster
//     nodes sorted by name);
//   - "load avg": lowest 15-minute load first;
//   - "spread": ascending FNV-1a 64 hash of service name, a NUL byte, and the
//     node name: a stable pseudo-random order, different per service;
//   - "score": highest free-resource score first, where
//     score = mem_avail_pct + 100/(1+load15): free memory in percent plus an
//     idleness term in the same 0..100 range;
//   - "none": ordered like "nodes order"; the monitor never starts such a
//     service by itself (admin targets still use the ranking).
//
// Unknown policies behave as "nodes order". Ties break by node name. The soft
// affinities then move the nodes that satisfy them ahead (stable).
//
// Ranking.Natural is the policy order over every node of the service, with
// no filter and no soft affinity: its first node is the natural leader used
// by orchestrate=start, giveback of non-ha services, and the L flag.
//
// With Input.Explain, Rank also returns Ranking.Verdicts: for each node,
// every filter it fails (not only the first; a constraint that could not be
// evaluated, from ConstraintResults, shows its error rather than a plain
// violation), the policy's sort key, the soft-affinity score and effect
// (moved ahead or behind), and its place in the resulting order. They come
// from the same filter and sort functions, and the ranking is the same with
// or without them; the orchestrator's pass leaves them off (they allocate).
//
// Rank runs in stages: the records of the nodes, feasibility (the
// filters), ordering (the policy), the soft affinities, then the lists and
// the verdicts. Its speed-ups (Input.Members, Cluster, Instances, Buf,
// NoExcluded, the orders known in advance) are fast paths behind those
// stages: a test compares them with the stages alone over generated
// inputs.
//
// The package is pure: no IO, no clock, no goroutines, no logging.
package placement
