// Package quorum holds the split-brain arithmetic (docs/behaviour.md 3): the vote
// of a node that lost sight of peers, whether a lost peer has certainly
// lost its own vote, and the self-stop deadline after which the survivors
// may take over a lost peer's services. Pure: no IO, no clock (times are
// passed in); checked by monitor's TestCorePackagesArePure. The node core
// (package node) calls it; the daemon probes the arbitrators and feeds the
// results to the core.
package quorum
