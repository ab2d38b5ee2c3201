// Package arbitrator is Haven's one-vote arbitrator: a small UDP server for
// a third host, no cluster member, that gives its vote to one partition of
// each cluster it serves at a time, as a lease (the decision is
// quorum.LeaseBook's, pure), and the node's side of its wire (Reporter).
//
// Each report and each grant is one datagram sealed with AES-256-GCM under
// a key derived from the cluster secret, the node's name and its run (the
// secret never crosses the wire); a grant opens only for the report it
// answers; reports of a node's run must come in order (a replay or a
// reordered one is refused), and one whose send time is more than 30 s
// from the arbitrator's clock is refused (a replay of old traffic after the
// arbitrator restarted, when it remembers no sequence). docs/operations.md
// ("The 2-node case") and docs/security.md say what it guarantees.
package arbitrator
